// `ringprof watch`: where its windows lie (ringprof/tools/watch.h).
#include "ringprof/tools/watch.h"

#include <algorithm>
#include <cstdint>

#include "common/number_text.h"

namespace ringprof {

using internal::duration_text;

std::vector<TimeRange> slice_range(TimeRange r, unsigned n) {
  std::vector<TimeRange> out;
  const uint64_t len = r.end_ns - r.begin_ns + 1;
  for (unsigned i = 0; i < n; ++i) {
    TimeRange s;
    s.begin_ns = r.begin_ns + len * i / n;
    s.end_ns = r.begin_ns + len * (i + 1) / n - 1;
    out.push_back(s);
  }
  return out;
}

WatchPlan plan_watch(const TraceReader& live, const TraceReader* baseline, const WatchOptions& options) {
  WatchPlan plan;
  const auto span = live.time_range();
  if (!span) {
    plan.error = "the recording holds no event";
    return plan;
  }
  const uint64_t w = options.window_ns;
  if (w == 0) {
    plan.error = "the window is empty";
    return plan;
  }
  const auto [first, last] = *span;
  constexpr uint64_t kDay = 86'400'000'000'000ull;
  const uint64_t back = options.baseline == "previous" ? w : options.baseline == "day" ? kDay : 0;
  const uint64_t covered = last - first;
  if (w > covered || back > covered - w) {  // (no sum that could wrap)
    plan.error = "the recording covers " + duration_text(static_cast<int64_t>(covered)) + "; the windows need " +
                 duration_text(static_cast<int64_t>(std::min<uint64_t>(w, INT64_MAX / 2) +
                                                    std::min<uint64_t>(back, INT64_MAX / 2))) +
                 " (a shorter --window, or a saved recording as --baseline)";
    return plan;
  }
  plan.head = {last - w + 1, last};
  if (baseline) {
    const auto b = baseline->time_range();
    if (!b) {
      plan.error = "the baseline recording holds no event";
      return plan;
    }
    if (b->second - b->first + 1 < options.slices) {
      plan.error = "the baseline recording is too short to cut into slices";
      return plan;
    }
    plan.base = {b->first, b->second};
    plan.base_is_recording = true;
  } else {
    plan.base = {plan.head.begin_ns - back, plan.head.end_ns - back};
  }
  const unsigned n = options.slices ? options.slices : 1;
  plan.head_slices = slice_range(plan.head, n);
  plan.base_slices = slice_range(plan.base, n);
  plan.ok = true;
  return plan;
}

}  // namespace ringprof
