// The rules about the recording itself: drops (what it lost, so every other
// figure is short by that much) and uncovered_hot_function (CPU time the
// zones do not see); and the text helpers the rules share.
#include <cstdio>

#include "findings/rules.h"
#include "common/number_text.h"
#include "common/text_table.h"

namespace ringprof::internal {

std::string fixed_text(double value, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  return buf;
}

std::string percent_text(double share) { return fixed_text(share * 100.0, 1); }

double share(uint64_t part, uint64_t whole) {
  return whole ? static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

std::string dur(uint64_t ns) { return duration_text(static_cast<int64_t>(ns)); }

std::vector<Finding> rule_drops(const std::vector<ProcessFacts>& processes) {
  uint64_t events = 0, ring = 0, io = 0, samples_lost = 0, gpu_records = 0, cupti_dropped = 0, refused = 0;
  for (const ProcessFacts& p : processes) {
    events += p.events;
    ring += p.dropped_ring;
    io += p.dropped_io;
    samples_lost += p.samples_lost;
    gpu_records += p.gpu_records;
    cupti_dropped += p.gpu_stats.dropped_records;
    refused += p.gpu_stats.refused_buffers;
  }
  if (ring + io + samples_lost + cupti_dropped + refused == 0) return {};
  // Recorded = written + dropped, in events.
  const double event_share = share(ring + io, events + ring + io);
  const double gpu_share = share(cupti_dropped, gpu_records + cupti_dropped);
  Finding f;
  f.rule = "drops";
  f.severity = event_share >= kDropsCritical || gpu_share >= kDropsCritical ? FindingSeverity::Critical
                                                                            : FindingSeverity::Warning;
  std::string lost, evidence, advice;
  auto add = [](std::string& list, const std::string& item) { list += (list.empty() ? "" : ", ") + item; };
  if (ring + io) {
    add(lost, std::to_string(ring + io) + " events");
    add(evidence, std::to_string(ring) + " events dropped on full rings and " + std::to_string(io) +
                      " lost to write failures (" + percent_text(event_share) + "% of the " +
                      std::to_string(events + ring + io) + " events recorded)");
  }
  if (ring)
    advice +=
        "Rings overflowed: let them grow larger (RINGPROF_RING_MAX_BYTES, default 16M; RINGPROF_RING_BYTES for "
        "the first size) or record less (fewer or coarser zones, RINGPROF_TORCH_OPS=sampled). ";
  if (io)
    advice +=
        "Writes failed (disk full, directory removed or unwritable): check the free space and permissions of "
        "RINGPROF_DIR and the byte budget RINGPROF_MAX_BYTES. ";
  if (samples_lost) {
    add(lost, std::to_string(samples_lost) + " CPU samples");
    add(evidence, std::to_string(samples_lost) + " CPU samples lost by the sampler");
    advice +=
        "Samples were lost: lower RINGPROF_SAMPLE_HZ or RINGPROF_DETAILED_SAMPLE_HZ (the timer-signal "
        "fallback cannot sample faster than the kernel's tick). ";
  }
  if (cupti_dropped || refused) {
    add(lost, std::to_string(cupti_dropped) + " GPU records");
    add(evidence, std::to_string(cupti_dropped) + " GPU records dropped by CUPTI (" + percent_text(gpu_share) +
                      "% of them), " + std::to_string(refused) + " buffer requests refused");
    advice += "CUPTI ran out of activity buffers: raise RINGPROF_CUPTI_BUFFERS or RINGPROF_CUPTI_BUFFER_SIZE. ";
  }
  f.title = "The recording lost data: " + lost;
  f.evidence = evidence + ". Every figure of this report misses what was lost.";
  f.advice = advice + "See docs/configuration.md.";
  f.figures = {{"dropped_ring", std::to_string(ring)},
               {"dropped_io", std::to_string(io)},
               {"events", std::to_string(events)},
               {"dropped_pct", percent_text(event_share)},
               {"samples_lost", std::to_string(samples_lost)},
               {"cupti_dropped", std::to_string(cupti_dropped)},
               {"cupti_refused_buffers", std::to_string(refused)}};
  return {std::move(f)};
}

std::vector<Finding> rule_uncovered_hot_function(const std::vector<HotFunction>& uncovered, uint64_t samples,
                                                 uint64_t period_ns) {
  std::vector<Finding> out;
  if (samples < kUncoveredMinSamples) return out;
  for (const HotFunction& h : uncovered) {
    const double s = share(h.samples, samples);
    if (s < kUncoveredInfo || out.size() >= kUncoveredListed) break;
    Finding f;
    f.rule = "uncovered_hot_function";
    f.severity = s >= kUncoveredWarning ? FindingSeverity::Warning : FindingSeverity::Info;
    f.title = "Hot function outside every zone: " + h.function + " (" + percent_text(s) + "% of CPU samples)";
    f.evidence = std::to_string(h.samples) + " of " + std::to_string(samples) + " CPU samples (" + percent_text(s) +
                 "%) were in " + h.function + " while no zone was open on their thread";
    if (period_ns)
      f.evidence += ", about " + duration_text(static_cast<int64_t>(h.samples * period_ns)) + " of CPU time";
    f.evidence += ". The zone table and the step breakdown do not see this time.";
    f.advice = "Put a zone around the code that calls " + h.function +
               " (RINGPROF_ZONE in C++, an NVTX range or torch.profiler.record_function in Python) so that the "
               "tables and the other findings can account for it.";
    f.figures = {{"function", h.function},
                 {"samples", std::to_string(h.samples)},
                 {"samples_total", std::to_string(samples)},
                 {"samples_pct", percent_text(s)},
                 {"cpu_ns", std::to_string(h.samples * period_ns)}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ringprof::internal
