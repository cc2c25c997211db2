#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <mutex>

#include "bench_main.h"

namespace ringprof::bench {

namespace {
std::vector<Ratio>& ratios() {
  static std::vector<Ratio> r;
  return r;
}
std::mutex figures_mutex;
std::map<std::string, std::pair<double, std::string>>& figures() {
  static std::map<std::string, std::pair<double, std::string>> f;
  return f;
}

// Remembers the CPU time per iteration of every run while printing as usual.
class RecordingReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    // With --benchmark_repetitions the medians stand for each benchmark;
    // otherwise its single run does.
    for (const Run& r : runs) {
      if (r.error_occurred) continue;
      const double ns = r.GetAdjustedCPUTime() * to_ns(r.time_unit);
      if (r.run_type == Run::RT_Aggregate && r.aggregate_name == "median")
        ns_per_iter[r.run_name.str()] = ns;
      else if (r.run_type == Run::RT_Iteration && r.repetitions <= 1 && r.iterations > 0)
        ns_per_iter[r.benchmark_name()] = ns;
    }
    ConsoleReporter::ReportRuns(runs);
  }
  static double to_ns(benchmark::TimeUnit u) {
    switch (u) {
      case benchmark::kNanosecond: return 1;
      case benchmark::kMicrosecond: return 1e3;
      case benchmark::kMillisecond: return 1e6;
      case benchmark::kSecond: return 1e9;
    }
    return 1;
  }
  std::map<std::string, double> ns_per_iter;
};
}  // namespace

void register_ratio(Ratio r) { ratios().push_back(std::move(r)); }

void report_figure(const std::string& label, double value, const std::string& unit) {
  std::lock_guard<std::mutex> lock(figures_mutex);
  figures()[label] = {value, unit};
}

}  // namespace ringprof::bench

int main(int argc, char** argv) {
  using namespace ringprof::bench;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n-- ratios (same run) --\n");
  for (const Ratio& r : ratios()) {
    auto n = reporter.ns_per_iter.find(r.numerator), d = reporter.ns_per_iter.find(r.denominator);
    if (n == reporter.ns_per_iter.end() || d == reporter.ns_per_iter.end() || d->second <= 0) continue;
    const double v = n->second / d->second;
    if (r.target > 0)
      std::printf("%-48s %8.3f  (target <= %.2f: %s)\n", r.label.c_str(), v, r.target, v <= r.target ? "met" : "NOT met");
    else
      std::printf("%-48s %8.3f\n", r.label.c_str(), v);
  }
  for (const auto& [label, fig] : figures()) std::printf("%-48s %10.3f %s\n", label.c_str(), fig.first, fig.second.c_str());
  benchmark::Shutdown();
  return 0;
}
