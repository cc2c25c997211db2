// gpu_attribution.h (internal) — which operator launched each piece of GPU
// work, worked out offline so the recording path pays nothing for it.
//
// A kernel (or copy, or set) carries the correlation id of the API call that
// launched it; that call carries its thread and its time; the zones open on
// that thread at that time (ringprof zones and NVTX ranges alike) are the
// work's operators, the innermost one its parent. The table uses this for
// "Self GPU" (work whose parent is the zone) and "GPU total" (work launched
// anywhere inside the zone), like torch.profiler's CUDA time per operator.
//
// Streaming, bounded memory: per thread the open zones and a window of
// recently closed ones (GPU records reach the files after the zones around
// their launch have often closed); correlation ids waiting for their partner
// in two generations of bounded maps.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof::internal {

class GpuAttribution {
 public:
  // `operators`: the enclosing zone names, innermost first (empty when the
  // launch was inside no zone); `tid`: the launching thread.
  using OnWork =
      std::function<void(const GpuActivity& work, const std::vector<const std::string*>& operators, uint32_t tid)>;
  // A zone's operator name from its name, arguments and stack id (the key of
  // a table grouped by them), asked again whenever an argument or its stack
  // comes; none: the zone's name.
  using KeyFn = std::function<std::string(uint32_t loc, const std::vector<ZoneArgIds>& args, uint32_t stack)>;
  explicit GpuAttribution(OnWork on_work, KeyFn key = nullptr) : on_work_(std::move(on_work)), key_(std::move(key)) {}

  void begin_process(const ProcessState& p);
  // Every CPU event of the segment, then its GPU records.
  void event(const DecodedEvent& e);
  void gpu_records(const DecodedSegment& seg);
  // Work whose launching call never showed up goes out with no operators.
  void end_process();

 private:
  struct Span {
    uint64_t begin, end;
    uint32_t name;
  };
  struct OpenSpan {
    Span span;
    uint32_t loc;                  // the zone's own name
    std::vector<ZoneArgIds> args;  // with key_ only
    uint32_t stack = 0;            // with key_ only
  };
  struct Thread {
    std::vector<OpenSpan> open;  // span.end unused
    std::deque<Span> closed;     // sorted by end
  };
  using Chain = std::vector<uint32_t>;  // name ids, innermost first

  uint32_t intern(const std::string& s);
  Thread& thread(uint32_t tid) { return threads_[tid]; }
  void add_closed(Thread& t, const Span& s);
  Chain operators_at(uint32_t tid, uint64_t ts);
  void deliver(const GpuActivity& work, const Chain& chain, uint32_t tid);

  OnWork on_work_;
  KeyFn key_;
  const ProcessState* process_ = nullptr;
  std::unordered_map<uint32_t, Thread> threads_;  // by kernel tid
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  struct Launch {
    Chain chain;
    uint32_t tid;
  };
  std::unordered_map<uint32_t, Launch> launches_[2];                   // correlation -> launching call
  std::unordered_map<uint32_t, std::vector<GpuActivity>> waiting_[2];  // work seen before its call
  std::vector<const std::string*> scratch_;
};

}  // namespace ringprof::internal
