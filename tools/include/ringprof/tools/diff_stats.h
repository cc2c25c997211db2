// ringprof/tools/diff_stats.h — the statistics behind `ringprof diff`: is a set of
// durations (or a share of samples) different between two recordings, by how
// much, and how sure is that.
//
// Durations are skewed (a long tail of slow calls) and far from normal, so
// the comparison is of medians, with a distribution-free interval: each
// side's median gets a 95% interval from its order statistics (the ranks a
// binomial(n, 1/2) puts around n/2), turned into a standard error of the log
// median, and the two are combined for the log of the ratio head ÷ base (the
// method of Price and Bonett, 2001). No shape is assumed and the cost is one
// sort. Shares of CPU samples are counts: their ratio gets the usual interval
// of a ratio of two binomial proportions (Katz's log method).
//
// A recording compares many names at once, and at 95% each, one name in
// twenty would be called changed by chance. The intervals are therefore
// simultaneous (Bonferroni): for m names compared, each is a 1 - 0.05/m
// interval, so that two recordings of one program see any name flagged at
// most 5% of the time.
//
// Sampling noise is not all: two runs of one program differ as a whole by a
// percent or two (0.2-1.8% between pairs of five runs measured here), which
// no recording can see from the inside. Each interval is widened by such a
// run-to-run noise floor, added to its half-width in quadrature on the log
// scale (`noise_pct`; `ringprof diff --noise`, default 2%).
//
// A verdict says `regressed` or `improved` only when the interval excludes
// no change AND the estimated change is at least a threshold, so that large
// recordings do not flag shifts of a fraction of a percent that any two runs
// of a program on a shared machine show.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof {

struct DurationSummary {
  uint64_t calls = 0;
  uint64_t median_ns = 0;
  uint64_t p90_ns = 0;
  double mean_ns = 0;
  uint64_t total_ns = 0;
};

// The median of sorted values (the mean of the middle two for an even count;
// 0 when empty).
double median_of_sorted(const std::vector<uint64_t>& sorted);

// Sorts `durations` in place and summarizes them (all zero when empty).
DurationSummary summarize_durations(std::vector<uint64_t>& durations);

// A relative change, head against base, in percent, with its 95% interval.
// `known` is false when there is too little to say (fewer than kMinSamples on
// a side, or a base of zero): the numbers are then the point estimate alone.
struct Change {
  double change_pct = 0;
  double ci_low_pct = 0;
  double ci_high_pct = 0;
  bool known = false;
};

// Fewest values per side for an interval.
inline constexpr uint64_t kMinSamples = 5;

// The normal quantile of a two-sided interval that holds 95% of the time
// for all of `comparisons` at once (1.96 for one).
double simultaneous_z(uint64_t comparisons);

// The ratio of medians head ÷ base - 1, in percent, with an interval of
// normal quantile `z`. Both sorted ascending.
Change median_change(const std::vector<uint64_t>& base_sorted, const std::vector<uint64_t>& head_sorted,
                     double z = simultaneous_z(1), double noise_pct = 0);

// The ratio of two shares (hits ÷ total) head ÷ base - 1, in percent.
Change share_change(uint64_t base_hits, uint64_t base_total, uint64_t head_hits, uint64_t head_total,
                    double z = simultaneous_z(1), double noise_pct = 0);

// Several runs per side: a run-level statistic per run (the log of a zone's
// median call, of its median time per step, …) compared between the sides,
// so that the interval comes from how much whole runs differ, what one pair
// of recordings cannot see. The change is exp(mean head - mean base) - 1 in
// percent; its interval is Welch's t interval on the logs (unequal spreads,
// Welch-Satterthwaite degrees of freedom), simultaneous over `comparisons`
// as above. The spread being measured, the only floor added (`floor_pct`,
// in quadrature) is a resolution: runs of a deterministic loop can have the
// very same median, and an interval of zero width would claim a precision
// that a change of the program's fixed costs already upsets. Unknown with
// fewer than two runs on a side.
Change runs_change(const std::vector<double>& base_logs, const std::vector<double>& head_logs, uint64_t comparisons,
                   double floor_pct = 0);

// The quantile of Student's t with `df` degrees of freedom that leaves
// `alpha` in its two tails together (2.776 for df 4, alpha 0.05).
double t_quantile(double df, double alpha);

enum class Verdict { Regressed, Improved, Unchanged, Added, Removed };
// "regressed", "improved", "unchanged", "added", "removed".
const char* verdict_name(Verdict v);

// Regressed: the interval lies above 0 and the change is at least
// `threshold_pct`; improved: the mirror image; else unchanged. (Added and
// removed are for the caller, who knows what each side holds.)
Verdict verdict_of(const Change& c, double threshold_pct);

}  // namespace ringprof
