// ringprof/tools/time_range.h — time arithmetic the tools share: parsing the
// durations users type (--from 2.5s, --last 500ms), resolving a range against
// a trace's time range, and printing nanoseconds as microseconds.
//
// Everything here is integer nanoseconds. Durations with a fraction ("2.5s")
// are parsed digit by digit, and microseconds are printed as `us.nnn` from the
// integer, so no value ever goes through floating point and a trace converts
// byte for byte the same on every machine.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ringprof {

// Parses "500ms", "2.5s", "1m", "250us", "10ns", "1h"; a bare number is
// seconds. Returns nullopt for anything else (negative, empty, unknown unit,
// overflow, a fraction finer than a nanosecond).
std::optional<uint64_t> parse_duration_ns(std::string_view text);

// A moment as typed on the command line: a duration counts from the start of
// the trace ("90", "2.5s", "1m"); a wall-clock time is CLOCK_REALTIME: ISO
// 8601 "2024-05-01T12:00:00[.250][Z|+02:00]" (no zone: local time) or
// "HH:MM[:SS[.fff]]" (today, local time).
struct TimePoint {
  bool wall = false;
  uint64_t ns = 0;  // since the trace start, or CLOCK_REALTIME ns
};
// `now_realtime_ns` says which day "today" is (0: the current time).
std::optional<TimePoint> parse_time_point(std::string_view text, uint64_t now_realtime_ns = 0);

// What the user asked for on the command line. `from`/`to` count from the
// start of the trace, `last` back from its end; `last` excludes the others.
// Wall-clock ends, `around` (a centre and a width) and a window id are
// resolved against the trace by resolve_trace_range() (trace_range.h).
struct RangeSpec {
  std::optional<uint64_t> from_ns;
  std::optional<uint64_t> to_ns;
  std::optional<uint64_t> last_ns;
  std::optional<uint64_t> from_wall_ns;  // CLOCK_REALTIME
  std::optional<uint64_t> to_wall_ns;
  std::optional<TimePoint> around;  // centre of a range of width around_width_ns
  uint64_t around_width_ns = 30'000'000'000ull;
  std::optional<uint64_t> window_id;  // the span between ringprof.window.begin/end marks N
  bool empty() const { return !from_ns && !to_ns && !last_ns && !from_wall_ns && !to_wall_ns && !around && !window_id; }
  // Sets from/to (whichever `is_from` says) from a parsed moment.
  void set(bool is_from, const TimePoint& p) {
    if (p.wall)
      (is_from ? from_wall_ns : to_wall_ns) = p.ns;
    else
      (is_from ? from_ns : to_ns) = p.ns;
  }
};

// An absolute range in CLOCK_MONOTONIC ns, both ends inclusive.
struct TimeRange {
  uint64_t begin_ns = 0;
  uint64_t end_ns = UINT64_MAX;
  bool contains(uint64_t ts) const { return ts >= begin_ns && ts <= end_ns; }
  // A span [b, e] that touches the range at all is kept whole.
  bool overlaps(uint64_t b, uint64_t e) const { return b <= end_ns && e >= begin_ns; }
};

// Turns a spec into an absolute range given the trace's first and last event
// times and, for wall-clock moments, CLOCK_REALTIME - CLOCK_MONOTONIC (ns).
// An empty spec is the unbounded range. Window ids are not resolved here.
TimeRange resolve_range(const RangeSpec& spec, uint64_t trace_first_ns, uint64_t trace_last_ns,
                        int64_t realtime_offset_ns = 0);

// 1234567 -> "1234.567": integer microseconds, a dot, exactly three digits.
std::string format_us(uint64_t ns);
// Appends the same to `out` (the trace writer's hot path).
void append_us(std::string& out, uint64_t ns);

}  // namespace ringprof
