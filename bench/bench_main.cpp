// The benchmark programs' main: Google Benchmark's, then the ratios and
// figures of the run, then (with --ringprof_budgets=FILE) the budgets those
// figures must keep, with a non-zero exit when one is broken.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <string>

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

// Remembers the CPU time (or the manual time) per iteration of every run, and passes everything on
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
      // A manual-time benchmark's time is what it measured itself (a child
      // process's CPU time, say); the rest count this process's CPU time.
      const double ns = (r.run_name.time_type == "manual_time" ? r.GetAdjustedRealTime() : r.GetAdjustedCPUTime()) *
                        to_ns(r.time_unit);
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
// One line of a budgets file: `LABEL <= LIMIT` or `LABEL >= LIMIT`, where
// LABEL is a ratio's or a figure's label exactly as printed. '#' starts a
// comment line.
struct Budget {
  std::string label;
  bool at_most = true;
  double limit = 0;
  int line = 0;
};

// The budgets in `path`; a malformed line is an error naming file and line.
std::optional<std::vector<Budget>> read_budgets(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::fprintf(stderr, "ringprof bench: cannot read budgets file %s\n", path.c_str());
    return std::nullopt;
  }
  std::vector<Budget> out;
  std::string text;
  for (int n = 1; std::getline(in, text); ++n) {
    if (text.empty() || text[0] == '#') continue;
    Budget b;
    b.line = n;
    size_t op = text.rfind(" <= ");
    if (op == std::string::npos) {
      op = text.rfind(" >= ");
      b.at_most = false;
    }
    char* end = nullptr;
    if (op != std::string::npos) b.limit = std::strtod(text.c_str() + op + 4, &end);
    if (op == std::string::npos || op == 0 || end == text.c_str() + op + 4 || *end != '\0') {
      std::fprintf(stderr, "ringprof bench: %s:%d: expected 'LABEL <= LIMIT' or 'LABEL >= LIMIT'\n", path.c_str(), n);
      return std::nullopt;
    }
    b.label = text.substr(0, op);
    out.push_back(b);
  }
  return out;
}

}  // namespace

void register_ratio(Ratio r) { ratios().push_back(std::move(r)); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void report_figure(const std::string& label, double value, const std::string& unit) {
  std::lock_guard<std::mutex> lock(figures_mutex);
  figures()[label] = {value, unit};
}

namespace {
// A /proc/self/status field, in KiB (0 when missing).
long status_kib(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0) return std::strtol(line.c_str() + n, nullptr, 10);
  return 0;
}
}  // namespace

PeakRss::PeakRss() {
  std::ofstream("/proc/self/clear_refs") << "5";
  rss_kib_ = status_kib("VmRSS:");
}

double PeakRss::growth_mib() const { return double(status_kib("VmHWM:") - rss_kib_) / 1024.0; }

}  // namespace ringprof::bench

int main(int argc, char** argv) {
  using namespace ringprof::bench;
  // Our own option, taken out before Google Benchmark sees the arguments.
  std::optional<std::vector<Budget>> budgets;
  const char* budgets_path = nullptr;
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--ringprof_budgets=", 19) == 0)
      budgets_path = argv[i] + 19;
    else
      argv[kept++] = argv[i];
  }
  argc = kept;
  if (budgets_path && !(budgets = read_budgets(budgets_path))) return 2;
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  RecordingReporter reporter(benchmark::CreateDefaultDisplayReporter());
  benchmark::RunSpecifiedBenchmarks(&reporter);
  FILE* out = reporter.display_is_console() ? stdout : stderr;
  std::map<std::string, double> measured;  // every ratio and figure of this run, by label
  std::fprintf(out, "\n-- ratios (same run) --\n");
  for (const Ratio& r : ratios()) {
    auto n = reporter.ns_per_iter.find(r.numerator), d = reporter.ns_per_iter.find(r.denominator);
    if (n == reporter.ns_per_iter.end() || d == reporter.ns_per_iter.end() || d->second <= 0) continue;
    const double v = n->second / d->second;
    measured[r.label] = v;
    if (r.target > 0)
      std::fprintf(out, "%-48s %8.3f  (target <= %.2f: %s)\n", r.label.c_str(), v, r.target,
                   v <= r.target ? "met" : "NOT met");
    else
      std::fprintf(out, "%-48s %8.3f\n", r.label.c_str(), v);
  }
  for (const auto& [label, fig] : figures()) {
    std::fprintf(out, "%-48s %10.3f %s\n", label.c_str(), fig.first, fig.second.c_str());
    measured[label] = fig.first;
  }
  benchmark::Shutdown();
  if (!budgets) return 0;
  // Budgets whose label this program did not measure belong to another
  // benchmark program sharing the file; bench/gate.sh checks that each was
  // measured by one of them.
  int broken = 0;
  std::fprintf(out, "\n-- budgets (%s) --\n", budgets_path);
  for (const Budget& b : *budgets) {
    const auto m = measured.find(b.label);
    if (m == measured.end()) continue;
    const bool ok = b.at_most ? m->second <= b.limit : m->second >= b.limit;
    broken += !ok;
    std::fprintf(out, "budget %s: %s %.3f, budget %s %g (%s:%d)\n", ok ? "kept" : "BROKEN", b.label.c_str(),
                 m->second, b.at_most ? "<=" : ">=", b.limit, budgets_path, b.line);
  }
  return broken ? 1 : 0;
}
