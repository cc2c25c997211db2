// Bounds for the sampler tests' counts and shares, each derived from the
// sampling distribution with its false-failure rate stated, so that a check
// fails wrongly less often than once in 10,000 runs instead of "often enough
// to notice on a busy CI machine".
//
// The model:
//   - Coverage is accounted, not statistical: every period of a thread's CPU
//     time after its timer is armed should be either a sample written or a
//     sample counted lost (a CPU-time timer's overruns, a full sample ring).
//     The kernel does not quite deliver that (kWorstCoveredFraction), so
//     written + lost >= that fraction × hz × (CPU time covered) is asserted.
//   - How many of those periods come as samples is not bounded by the
//     sampler: a CPU-time timer fires on the scheduler tick, and on a loaded
//     (virtual) machine many periods are folded into overruns. A written count
//     is taken as Poisson(λ) with λ = periods × the worst delivered fraction
//     measured (kWorstDeliveredFraction). A count of a fixed number of
//     periods, each delivered or not, is binomial, whose lower tail is thinner
//     than the Poisson of the same mean: the Poisson bound is conservative.
//   - A share (samples in f1 / samples in f1 or f2) is binomial(n, p); its
//     tolerance is z·sqrt(p(1-p)/n) with z = 3.9 for a two-sided 1e-4.
//     Sampling by CPU time is systematic rather than random, which makes the
//     spread smaller than binomial: the tolerance is an upper estimate.
// Shared by tests/core/sampler_test.cpp and the sampling end-to-end test.
#pragma once

#include <cmath>
#include <cstdint>

namespace ringprof::test {

// The false-failure rate of each statistical check, per check and run.
constexpr double kFalseFailureRate = 1e-4;

// The two-sided normal quantile for kFalseFailureRate: P(|Z| > 3.89) = 1e-4.
constexpr double kShareZ = 3.9;

// A floor under the fraction of a CPU-time timer's periods that arrive as
// samples; the rest are folded into overruns and counted lost. Measured on 2
// vCPUs: 26% with two busy loops beside the tests (ASan), 18% with two busy
// loops and a two-job compile. The more threads share a CPU, the shorter their
// slices and the fewer scheduler ticks find the thread running, so no fraction
// holds under any load: 0.1 leaves margin for a loaded CI machine, and the
// coverage checks (written + lost), which do not depend on it, are the ones
// that hold whatever the load. perf_event delivers every period; the same
// fraction is merely looser there.
constexpr double kWorstDeliveredFraction = 0.1;

// P(X = k) for X ~ Poisson(lambda), in log space (exp(-lambda) alone
// underflows past lambda = 745).
inline double poisson_pmf(double lambda, uint64_t k) {
  const double kd = static_cast<double>(k);
  return std::exp(kd * std::log(lambda) - lambda - std::lgamma(kd + 1.0));
}

// The smallest fraction of a watched thread's periods that the kernel
// accounts for at all (samples written + counted lost). Not 1, measured on
// Linux 6.18 (2 vCPUs, an ASan build running beside the tests): perf_event's
// task-clock sampling re-arms its hrtimer from the moment it fired, so every
// period stretches by the interrupt latency: 94-97% of the periods arrived at
// 1000 Hz, none counted lost; a CPU-time timer's samples and overruns came to
// 82% of the periods in one run, 96-99% in most. This is a floor with margin,
// not a statistical bound: a thread armed after a quarter of its CPU time
// still fails the coverage checks.
constexpr double kWorstCoveredFraction = 0.75;

// The periods of `periods` that a coverage check requires.
inline uint64_t covered_floor(uint64_t periods) {
  return static_cast<uint64_t>(static_cast<double>(periods) * kWorstCoveredFraction);
}

// The largest k with P(X < k) < p for X ~ Poisson(lambda): "X >= k" fails
// wrongly with probability below p.
inline uint64_t poisson_lower_bound(double lambda, double p = kFalseFailureRate) {
  if (lambda <= 0) return 0;
  double below = 0;  // P(X < k)
  uint64_t k = 0;
  while (below + poisson_pmf(lambda, k) < p) below += poisson_pmf(lambda, k++);
  return k;
}

// The smallest k with P(X > k) < p for X ~ Poisson(lambda): "X <= k" fails
// wrongly with probability below p.
inline uint64_t poisson_upper_bound(double lambda, double p = kFalseFailureRate) {
  if (lambda <= 0) return 0;
  // Sum the upper tail from far beyond any bound down to the mean.
  const auto far = static_cast<uint64_t>(lambda + 20.0 * std::sqrt(lambda) + 50.0);
  double above = 0;  // P(X > k)
  for (uint64_t k = far; k > static_cast<uint64_t>(lambda); --k) {
    if (above + poisson_pmf(lambda, k) >= p) return k;
    above += poisson_pmf(lambda, k);
  }
  return static_cast<uint64_t>(lambda);
}

// How far a share measured over n binomial trials may stray from p before
// the check fails, for a two-sided false-failure rate below 1e-4.
inline double share_tolerance(double p, uint64_t n) {
  return n == 0 ? 1.0 : kShareZ * std::sqrt(p * (1.0 - p) / static_cast<double>(n));
}

// The fewest trials for which a share check around p can tell p from an even
// split (0.5) at that rate: below it the check says nothing and a test
// asserts the accounting instead.
inline uint64_t min_trials_for_share(double p) {
  const double d = std::fabs(p - 0.5);
  return static_cast<uint64_t>(std::ceil(kShareZ * kShareZ * p * (1.0 - p) / (d * d)));
}

}  // namespace ringprof::test
