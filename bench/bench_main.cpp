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

// Remembers the CPU time per iteration of every run, and passes everything on
// to the display reporter --benchmark_format asks for (console, json, csv), so
// `--benchmark_format=json` prints Google Benchmark's own JSON on stdout.
class RecordingReporter : public benchmark::BenchmarkReporter {
 public:
  explicit RecordingReporter(benchmark::BenchmarkReporter* display) : display_(display) {}
  bool ReportContext(const Context& context) override { return display_->ReportContext(context); }
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
    display_->ReportRuns(runs);
  }
  void Finalize() override { display_->Finalize(); }
  // Console output is for people: the ratios follow it on stdout. JSON and CSV
  // are for programs: the ratios go to stderr so stdout stays parseable.
  bool display_is_console() const { return dynamic_cast<benchmark::ConsoleReporter*>(display_) != nullptr; }
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

 private:
  benchmark::BenchmarkReporter* display_;
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
  RecordingReporter reporter(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  FILE* out = reporter.display_is_console() ? stdout : stderr;
  std::fprintf(out, "\n-- ratios (same run) --\n");
  for (const Ratio& r : ratios()) {
    auto n = reporter.ns_per_iter.find(r.numerator), d = reporter.ns_per_iter.find(r.denominator);
    if (n == reporter.ns_per_iter.end() || d == reporter.ns_per_iter.end() || d->second <= 0) continue;
    const double v = n->second / d->second;
    if (r.target > 0)
      std::fprintf(out, "%-48s %8.3f  (target <= %.2f: %s)\n", r.label.c_str(), v, r.target,
                   v <= r.target ? "met" : "NOT met");
    else
      std::fprintf(out, "%-48s %8.3f\n", r.label.c_str(), v);
  }
  for (const auto& [label, fig] : figures())
    std::fprintf(out, "%-48s %10.3f %s\n", label.c_str(), fig.first, fig.second.c_str());
  benchmark::Shutdown();
  return 0;
}
