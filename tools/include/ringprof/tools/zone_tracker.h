// ringprof/tools/zone_tracker.h — pairs ZoneBegin/ZoneEnd events into closed zones,
// streaming.
//
// Only the per-thread stacks of open zones are kept, never the events: a zone
// is reported the moment its end arrives, with the time its direct children
// took (for self time). A ZoneEnd with nothing open (its begin was in a file
// already deleted) is counted and dropped. finish() closes what is still open
// at each thread's last timestamp, innermost first, flagged unterminated.
// One tracker serves one process: thread indices are process-wide.
//
// Arguments (ZoneArg events) go to the innermost zone open on their thread;
// a later argument with the same key replaces the earlier one, and a zone
// keeps at most kMaxArgs of them (the rest are counted in dropped_args()).
// A ZoneStack event gives that zone its stack (the id of the Python stack
// that called an operator, recorded with with_stack).
//
// Async spans (AsyncBegin/AsyncEnd) are paired by id, whatever threads they
// begin and end on and in whichever order the two threads' events arrive,
// and reach the set_on_async() callback (never on_close) as ClosedZones with
// `async` set: depth 0, no children, the begin's thread; arguments right
// after the begin on its thread are theirs. One left open at finish() closes
// at the process's last timestamp, unterminated (counted in unterminated()
// when set_on_async() was called); an end whose begin never came is counted
// (unmatched_async_ends()).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringprof/segment_codec.h"

namespace ringprof {

// A zone argument: both are location ids (the key's name, the value's text).
struct ZoneArgIds {
  uint32_t key = 0;
  uint32_t value = 0;
  bool operator==(const ZoneArgIds&) const = default;
};

// Adds an argument to a zone's list with the rules above (a key again
// replaces its value; at most ZoneTracker::kMaxArgs); false when it was full.
bool add_zone_arg(std::vector<ZoneArgIds>& args, uint32_t key, uint32_t value);

struct ProcessState;

// An argument value's text: the location's name, which may be empty (""),
// where location_name() would say "<location N>"; that only when no file
// read so far states the id.
std::string zone_arg_value(const ProcessState& process, uint32_t value_id);

// "key=value; key=value" in the list's order: how tables show a zone's arguments.
std::string zone_args_text(const ProcessState& process, const std::vector<ZoneArgIds>& args);

// A zone's key in a table grouped by arguments: its name, then '\x1f' and
// zone_args_text() when it has any. The table's rows and the GPU work
// attributed to them meet on it.
std::string zone_key_with_args(const ProcessState& process, uint32_t loc, const std::vector<ZoneArgIds>& args);

struct ClosedZone {
  uint32_t thread_index = 0;
  uint32_t loc = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint64_t children_ns = 0;  // summed duration of the direct child zones
  uint32_t depth = 0;        // 0 for a zone with no open parent
  bool unterminated = false;
  // Memory (add_memory): bytes allocated minus bytes freed while the zone
  // was the innermost open one (self), and in it or any zone inside it.
  int64_t self_mem = 0;
  int64_t mem = 0;
  // The part of self_mem and mem in device pools (add_memory's `device`).
  int64_t self_device_mem = 0;
  int64_t device_mem = 0;
  std::vector<ZoneArgIds> args;  // in the order their keys first came
  uint32_t stack = 0;            // ZoneStack: its stack id; 0 when none was recorded
  // An async span (set_on_async): its id and the thread its end came from.
  bool async = false;
  uint64_t async_id = 0;
  uint32_t end_thread_index = 0;
  uint64_t duration_ns() const { return end_ns - begin_ns; }
  uint64_t self_ns() const { return children_ns < duration_ns() ? duration_ns() - children_ns : 0; }
};

class ZoneTracker {
 public:
  using OnClose = std::function<void(const ClosedZone&)>;
  explicit ZoneTracker(OnClose on_close) : on_close_(std::move(on_close)) {}
  // Where async spans go; without it they are paired and dropped.
  void set_on_async(OnClose on_async) { on_async_ = std::move(on_async); }
  // Pairs async spans only: zones are not followed (a consumer that follows
  // them itself, the Perfetto writer, pays for one stack of zones, not two).
  void set_async_only(bool on) { async_only_ = on; }

  // Feed every event of the process, each thread's in recorded order.
  void add(const DecodedEvent& e);
  // Charges `bytes` (negative for a free) to the innermost zone open on the
  // thread; false when none is open (nothing charged). `device`: a device
  // pool's block (a GPU's), counted in the device columns too.
  bool add_memory(uint32_t thread_index, int64_t bytes, bool device = false);
  // The innermost zone open on the thread (its location id), 0 when none.
  uint32_t innermost(uint32_t thread_index) const;
  // Close what is still open (end of the process's data).
  void finish();
  // Forget everything (a new process begins); counters are kept.
  void clear() {
    threads_.clear();
    async_open_.clear();
    async_early_ends_.clear();
  }

  uint64_t unmatched_ends() const { return unmatched_ends_; }
  uint64_t unterminated() const { return unterminated_; }
  // Zones nested deeper than kMaxDepth on their thread: left out (with their
  // ends and arguments), and counted so that the tools say so.
  uint64_t too_deep() const { return too_deep_; }
  uint64_t dropped_args() const { return dropped_args_; }
  uint64_t unmatched_async_ends() const { return unmatched_async_ends_; }
  // Async spans beyond kMaxOpenAsync open at once: left out, counted.
  uint64_t async_dropped() const { return async_dropped_; }
  static constexpr size_t kMaxArgs = 64;
  static constexpr size_t kMaxOpenAsync = 1 << 16;

 private:
  struct Open {
    uint64_t begin_ns;
    uint64_t children_ns;
    uint32_t loc;
    int64_t self_mem = 0;
    int64_t children_mem = 0;
    int64_t self_device_mem = 0;
    int64_t children_device_mem = 0;
    std::vector<ZoneArgIds> args{};
    uint32_t stack = 0;
  };
  struct Thread {
    std::vector<Open> stack;
    uint64_t overflow = 0;  // begins beyond kMaxDepth: not tracked, their ends swallowed
    uint64_t last_ns = 0;
    uint64_t args_to_async = 0;  // the async span whose begin was this thread's last event
  };
  struct OpenAsync {
    uint64_t begin_ns = 0;
    uint32_t loc = 0;
    uint32_t thread_index = 0;
    std::vector<ZoneArgIds> args{};
    bool ended = false;  // its end came while its arguments may still come
    uint64_t end_ns = 0;
    uint32_t end_thread_index = 0;
  };
  struct EarlyEnd {
    uint64_t end_ns;
    uint32_t thread_index;
  };
  // A thread that only ever opens zones must not grow memory without bound.
 public:
  static constexpr size_t kMaxDepth = 1 << 16;

 private:
  void close_top(uint32_t thread_index, Thread& t, uint64_t end_ns, bool unterminated);
  void add_async(const DecodedEvent& e, Thread& t);
  void close_async(uint64_t id, OpenAsync& a, bool unterminated);
  // The thread's next event is not an argument: a span it began may close.
  void settle_async_args(Thread& t);

  OnClose on_close_;
  OnClose on_async_;
  bool async_only_ = false;
  std::unordered_map<uint64_t, OpenAsync> async_open_;
  std::unordered_map<uint64_t, EarlyEnd> async_early_ends_;
  uint64_t unmatched_async_ends_ = 0;
  uint64_t async_dropped_ = 0;
  std::unordered_map<uint32_t, Thread> threads_;
  uint64_t unmatched_ends_ = 0;
  uint64_t unterminated_ = 0;
  uint64_t too_deep_ = 0;
  uint64_t dropped_args_ = 0;
};

}  // namespace ringprof
