#include "ringprof/tools/sample_profile.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"

namespace ringprof {

namespace {

class SampleCollector final : public SegmentVisitor {
 public:
  SampleCollector(TimeRange range, const std::string& thread) : range_(range), threads_(thread) {}

  void segment(const SegmentView& view) override {
    for (const DecodedThread& t : view.segment.threads) profile_.samples_lost += t.samples_lost;
    if (view.segment.sampler) {
      const SamplerState& s = *view.segment.sampler;
      if (s.hz > 0) profile_.period_ns = 1'000'000'000ull / s.hz;
      if (profile_.mechanism.empty() || s.mechanism != "off") profile_.mechanism = s.mechanism;
    }
    for (const DecodedEvent& e : view.segment.events) {
      if (e.kind != EventKind::Sample || !range_.contains(e.ts_ns)) continue;
      if (!threads_.matches(view.process, e.thread_index)) continue;
      ++counts_[std::make_tuple(view.process.index, e.thread_index, e.loc)];
      ++profile_.samples;
      profile_.first_ns = profile_.first_ns == 0 ? e.ts_ns : std::min(profile_.first_ns, e.ts_ns);
      profile_.last_ns = std::max(profile_.last_ns, e.ts_ns);
    }
  }

  SampleProfile finish() {
    profile_.counts.reserve(counts_.size());
    for (const auto& [key, n] : counts_)
      profile_.counts.push_back(SampleCount{std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
    return std::move(profile_);
  }

 private:
  TimeRange range_;
  ThreadFilter threads_;
  std::map<std::tuple<size_t, uint32_t, uint32_t>, uint64_t> counts_;
  SampleProfile profile_;
};

}  // namespace

SampleProfile collect_samples(TraceReader& reader, const SampleOptions& options) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // the CLI checked it
  }
  SampleCollector collector(range, options.thread);
  reader.read(collector);
  return collector.finish();
}

std::string thread_label(const ProcessState& process, uint32_t thread_index) {
  const ThreadState* t = process.thread(thread_index);
  const uint32_t tid = process.tid_of(thread_index);
  std::string name = t && !t->name.empty() ? t->name : "thread";
  return name + " (" + std::to_string(tid) + ")";
}

}  // namespace ringprof
