// A benchmark main that also prints ratios between benchmarks of the same
// run (zone ÷ two TSC reads, say): on a shared, noisy machine a ratio measured
// in one run means more than any absolute time.
#pragma once

#include <string>
#include <vector>

namespace ringprof::bench {

struct Ratio {
  std::string label;
  std::string numerator;    // benchmark names as Google Benchmark reports them
  std::string denominator;
  double target = 0;        // 0: no target; else the ratio should be <= target
};

// Benchmarks register the ratios they want printed at static-init time.
void register_ratio(Ratio r);

// The median of figures collected over rounds (the mean of the two middle
// ones for an even count); 0 for none.
double median(std::vector<double> v);

// Extra figures computed inside benchmarks (bytes per event, say).
void report_figure(const std::string& label, double value, const std::string& unit);

// Peak memory of a stretch of a benchmark: reset, run, then the growth.
// Writing 5 to /proc/self/clear_refs resets VmHWM to the current RSS.
class PeakRss {
 public:
  PeakRss();  // resets the peak, remembers the RSS
  double growth_mib() const;  // how far the peak has risen above that RSS since

 private:
  long rss_kib_;
};

}  // namespace ringprof::bench
