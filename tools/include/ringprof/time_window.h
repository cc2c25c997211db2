// ringprof/time_window.h — time arithmetic the tools share: parsing the
// durations users type (--from 2.5s, --last 500ms), resolving a window against
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

// What the user asked for on the command line. `from`/`to` count from the
// start of the trace, `last` back from its end; `last` excludes the others.
struct WindowSpec {
  std::optional<uint64_t> from_ns;
  std::optional<uint64_t> to_ns;
  std::optional<uint64_t> last_ns;
  bool empty() const { return !from_ns && !to_ns && !last_ns; }
};

// An absolute window in CLOCK_MONOTONIC ns, both ends inclusive.
struct TimeWindow {
  uint64_t begin_ns = 0;
  uint64_t end_ns = UINT64_MAX;
  bool contains(uint64_t ts) const { return ts >= begin_ns && ts <= end_ns; }
  // A span [b, e] that touches the window at all is kept whole.
  bool overlaps(uint64_t b, uint64_t e) const { return b <= end_ns && e >= begin_ns; }
};

// Turns a spec into an absolute window given the trace's first and last event
// times. An empty spec is the unbounded window.
TimeWindow resolve_window(const WindowSpec& spec, uint64_t trace_first_ns, uint64_t trace_last_ns);

// 1234567 -> "1234.567": integer microseconds, a dot, exactly three digits.
std::string format_us(uint64_t ns);
// Appends the same to `out` (the trace writer's hot path).
void append_us(std::string& out, uint64_t ns);

}  // namespace ringprof
