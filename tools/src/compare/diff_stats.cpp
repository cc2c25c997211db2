#include "ringprof/tools/diff_stats.h"

#include <algorithm>
#include <cmath>

namespace ringprof {

namespace {

constexpr double kZ = 1.959963984540054;  // the normal quantile of a two-sided 95% interval

// The standard error of log(median) of a sorted sample, from the order
// statistics that bound a 95% interval of the median: the ranks (1-based)
// n/2 - z·√n/2 and 1 + n/2 + z·√n/2. Durations of 0 ns are read as 1 ns, so
// the logarithm exists.
double log_median_se(const std::vector<uint64_t>& x) {
  const double n = static_cast<double>(x.size());
  const double half = kZ * std::sqrt(n) / 2;
  const auto lo = static_cast<size_t>(std::max(0.0, std::floor(n / 2 - half) - 1));
  const auto hi = static_cast<size_t>(std::min(n - 1, std::ceil(n / 2 + half)));
  const double a = std::log(static_cast<double>(std::max<uint64_t>(x[lo], 1)));
  const double b = std::log(static_cast<double>(std::max<uint64_t>(x[hi], 1)));
  return (b - a) / (2 * kZ);
}

// An interval's half-width on the log scale with the run-to-run noise floor
// added in quadrature.
double widened(double half, double noise_pct) {
  const double floor = std::log1p(std::max(noise_pct, 0.0) / 100);
  return std::sqrt(half * half + floor * floor);
}

}  // namespace

double median_of_sorted(const std::vector<uint64_t>& x) {
  const size_t n = x.size();
  if (n == 0) return 0;
  return n % 2 ? static_cast<double>(x[n / 2]) : (static_cast<double>(x[n / 2 - 1]) + static_cast<double>(x[n / 2])) / 2;
}

DurationSummary summarize_durations(std::vector<uint64_t>& durations) {
  DurationSummary s;
  if (durations.empty()) return s;
  std::sort(durations.begin(), durations.end());
  s.calls = durations.size();
  s.median_ns = static_cast<uint64_t>(std::llround(median_of_sorted(durations)));
  // The nearest-rank 90th percentile: the smallest value with 90% at or below it.
  const auto rank = static_cast<size_t>(std::ceil(0.9 * static_cast<double>(durations.size())));
  s.p90_ns = durations[rank == 0 ? 0 : rank - 1];
  for (uint64_t d : durations) s.total_ns += d;
  s.mean_ns = static_cast<double>(s.total_ns) / static_cast<double>(s.calls);
  return s;
}

double simultaneous_z(uint64_t comparisons) {
  // Solves erfc(z / sqrt 2) = 0.05 / m by bisection: erfc falls steadily.
  const double alpha = 0.05 / static_cast<double>(std::max<uint64_t>(comparisons, 1));
  double lo = 0, hi = 40;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (std::erfc(mid / std::sqrt(2.0)) > alpha ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Change median_change(const std::vector<uint64_t>& base_sorted, const std::vector<uint64_t>& head_sorted, double z,
                     double noise_pct) {
  Change c;
  if (base_sorted.empty() || head_sorted.empty()) return c;
  const double mb = std::max(median_of_sorted(base_sorted), 1.0), mh = std::max(median_of_sorted(head_sorted), 1.0);
  const double log_ratio = std::log(mh / mb);
  c.change_pct = (std::exp(log_ratio) - 1) * 100;
  if (base_sorted.size() < kMinSamples || head_sorted.size() < kMinSamples) {
    c.ci_low_pct = c.ci_high_pct = c.change_pct;
    return c;
  }
  const double se = std::hypot(log_median_se(base_sorted), log_median_se(head_sorted));
  const double half = widened(z * se, noise_pct);
  c.ci_low_pct = (std::exp(log_ratio - half) - 1) * 100;
  c.ci_high_pct = (std::exp(log_ratio + half) - 1) * 100;
  c.known = true;
  return c;
}

Change share_change(uint64_t base_hits, uint64_t base_total, uint64_t head_hits, uint64_t head_total, double z,
                    double noise_pct) {
  Change c;
  if (base_hits == 0 || head_hits == 0 || base_total == 0 || head_total == 0) return c;
  const double x1 = static_cast<double>(base_hits), n1 = static_cast<double>(base_total);
  const double x2 = static_cast<double>(head_hits), n2 = static_cast<double>(head_total);
  const double log_ratio = std::log((x2 / n2) / (x1 / n1));
  c.change_pct = (std::exp(log_ratio) - 1) * 100;
  if (base_hits < kMinSamples || head_hits < kMinSamples) {
    c.ci_low_pct = c.ci_high_pct = c.change_pct;
    return c;
  }
  const double se = std::sqrt(std::max(0.0, 1 / x1 - 1 / n1 + 1 / x2 - 1 / n2));
  const double half = widened(z * se, noise_pct);
  c.ci_low_pct = (std::exp(log_ratio - half) - 1) * 100;
  c.ci_high_pct = (std::exp(log_ratio + half) - 1) * 100;
  c.known = true;
  return c;
}

namespace {

// The regularized incomplete beta I_x(a, b), by its continued fraction
// (modified Lentz), on the side where it converges fast.
double incomplete_beta(double x, double a, double b) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  if (x > (a + 1) / (a + b + 2)) return 1 - incomplete_beta(1 - x, b, a);
  const double front =
      std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x)) / a;
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
  double f = d;
  for (int m = 1; m <= 300; ++m) {
    for (int half = 0; half < 2; ++half) {
      // The continued fraction's terms d_{2m} and d_{2m+1}.
      const double k = half == 0 ? m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
                                 : -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
      d = 1 + k * d;
      d = 1 / (std::fabs(d) < kTiny ? kTiny : d);
      c = 1 + k / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      f *= c * d;
      if (half == 1 && std::fabs(c * d - 1) < 1e-12) return front * f;
    }
  }
  return front * f;
}

// P(|T| > t) for Student's t with df degrees of freedom.
double t_two_tailed(double t, double df) { return incomplete_beta(df / (df + t * t), df / 2, 0.5); }

}  // namespace

double t_quantile(double df, double alpha) {
  // The tail falls steadily as t grows: bisection.
  double lo = 0, hi = 1;
  while (t_two_tailed(hi, df) > alpha && hi < 1e6) hi *= 2;
  for (int i = 0; i < 200; ++i) {
    const double mid = (lo + hi) / 2;
    (t_two_tailed(mid, df) > alpha ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

Change runs_change(const std::vector<double>& base_logs, const std::vector<double>& head_logs, uint64_t comparisons,
                   double floor_pct) {
  Change c;
  if (base_logs.empty() || head_logs.empty()) return c;
  auto mean_var = [](const std::vector<double>& x) {
    double m = 0;
    for (double v : x) m += v;
    m /= static_cast<double>(x.size());
    double ss = 0;
    for (double v : x) ss += (v - m) * (v - m);
    return std::pair{m, x.size() > 1 ? ss / static_cast<double>(x.size() - 1) : 0.0};
  };
  const auto [mb, vb] = mean_var(base_logs);
  const auto [mh, vh] = mean_var(head_logs);
  const double log_ratio = mh - mb;
  c.change_pct = (std::exp(log_ratio) - 1) * 100;
  c.ci_low_pct = c.ci_high_pct = c.change_pct;
  if (base_logs.size() < 2 || head_logs.size() < 2) return c;
  const double nb = static_cast<double>(base_logs.size()), nh = static_cast<double>(head_logs.size());
  const double qb = vb / nb, qh = vh / nh;
  const double se = std::sqrt(qb + qh);
  double half = 0;
  if (se > 0) {
    const double df = (qb + qh) * (qb + qh) / (qb * qb / (nb - 1) + qh * qh / (nh - 1));
    half = t_quantile(df, 0.05 / static_cast<double>(std::max<uint64_t>(comparisons, 1))) * se;
  }
  half = widened(half, floor_pct);
  c.ci_low_pct = (std::exp(log_ratio - half) - 1) * 100;
  c.ci_high_pct = (std::exp(log_ratio + half) - 1) * 100;
  c.known = true;
  return c;
}

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Regressed: return "regressed";
    case Verdict::Improved: return "improved";
    case Verdict::Unchanged: return "unchanged";
    case Verdict::Added: return "added";
    case Verdict::Removed: return "removed";
  }
  return "unchanged";
}

Verdict verdict_of(const Change& c, double threshold_pct) {
  if (!c.known) return Verdict::Unchanged;
  if (c.ci_low_pct > 0 && c.change_pct >= threshold_pct) return Verdict::Regressed;
  if (c.ci_high_pct < 0 && c.change_pct <= -threshold_pct) return Verdict::Improved;
  return Verdict::Unchanged;
}

}  // namespace ringprof
