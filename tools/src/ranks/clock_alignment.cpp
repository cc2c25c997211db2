#include "ringprof/tools/clock_alignment.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <unordered_map>

#include "common/robust_stats.h"

namespace ringprof {

namespace {

using internal::median;
using internal::median_abs_deviation;

struct Call {
  uint32_t key;  // global
  uint64_t end;
};

// One aligned rank's call ends by key, on the aligned axis.
using EndsByKey = std::unordered_map<uint32_t, std::vector<uint64_t>>;

struct PairFit {
  int64_t offset = 0;
  uint64_t residual = 0;
  uint64_t matched = 0;
};

// The offset that, added to `calls`' ends, lines them up with `anchor`'s.
std::optional<PairFit> fit_pair(const EndsByKey& anchor, const std::vector<Call>& calls) {
  std::vector<size_t> usable;
  for (size_t i = 0; i < calls.size(); ++i)
    if (anchor.count(calls[i].key)) usable.push_back(i);
  if (usable.size() < ClockAlignment::kMinMatched) return std::nullopt;

  // 1. Vote.
  const size_t probes = std::min(ClockAlignment::kProbes, usable.size());
  constexpr size_t kMaxCandidates = 4096;  // per probe, nearest first: bounds the work on dense calls
  const auto search = static_cast<int64_t>(ClockAlignment::kSearchNs);
  std::vector<int64_t> votes;
  size_t probes_heard = 0;
  for (size_t p = 0; p < probes; ++p) {
    const Call& c = calls[usable[p * usable.size() / probes]];
    const std::vector<uint64_t>& ends = anchor.at(c.key);
    const auto e = static_cast<int64_t>(c.end);
    auto lo = std::lower_bound(ends.begin(), ends.end(), static_cast<uint64_t>(std::max<int64_t>(e - search, 0)));
    auto hi = std::upper_bound(ends.begin(), ends.end(), static_cast<uint64_t>(e + search));
    if (static_cast<size_t>(hi - lo) > kMaxCandidates) {
      // The kMaxCandidates nearest the probe's own end, by index (never an
      // iterator outside the range).
      const ptrdiff_t mid = std::lower_bound(lo, hi, c.end) - lo;
      const ptrdiff_t first = std::clamp<ptrdiff_t>(mid - static_cast<ptrdiff_t>(kMaxCandidates / 2), 0,
                                                    (hi - lo) - static_cast<ptrdiff_t>(kMaxCandidates));
      lo += first;
      hi = lo + static_cast<ptrdiff_t>(kMaxCandidates);
    }
    if (lo != hi) ++probes_heard;
    for (auto it = lo; it != hi; ++it) votes.push_back(static_cast<int64_t>(*it) - e);
  }
  if (votes.empty()) return std::nullopt;
  std::sort(votes.begin(), votes.end());
  size_t best_lo = 0, best_count = 0;
  int64_t best_center = 0;
  const auto vote_width = static_cast<int64_t>(ClockAlignment::kVoteNs);
  for (size_t lo = 0, hi = 0; lo < votes.size(); ++lo) {
    hi = std::max(hi, lo);
    while (hi + 1 < votes.size() && votes[hi + 1] - votes[lo] <= vote_width) ++hi;
    const size_t count = hi - lo + 1;
    const int64_t center = votes[lo + count / 2];
    if (count > best_count || (count == best_count && std::llabs(center) < std::llabs(best_center))) {
      best_count = count;
      best_lo = lo;
      best_center = center;
    }
  }
  (void)best_lo;
  if (best_count < std::max<size_t>(ClockAlignment::kMinMatched, (probes_heard + 1) / 2)) return std::nullopt;

  // 2. Refine over every call.
  std::vector<int64_t> diffs;
  for (size_t i : usable) {
    const std::vector<uint64_t>& ends = anchor.at(calls[i].key);
    const int64_t want = static_cast<int64_t>(calls[i].end) + best_center;
    auto it = std::lower_bound(ends.begin(), ends.end(), static_cast<uint64_t>(std::max<int64_t>(want, 0)));
    int64_t nearest = INT64_MAX;
    if (it != ends.end()) nearest = static_cast<int64_t>(*it);
    if (it != ends.begin() && (nearest == INT64_MAX || want - static_cast<int64_t>(*(it - 1)) < nearest - want))
      nearest = static_cast<int64_t>(*(it - 1));
    if (nearest == INT64_MAX || std::llabs(nearest - want) > vote_width) continue;
    diffs.push_back(nearest - static_cast<int64_t>(calls[i].end));
  }
  if (diffs.size() < ClockAlignment::kMinMatched) return std::nullopt;
  int64_t offset = median(diffs);
  uint64_t mad = static_cast<uint64_t>(median_abs_deviation(diffs, offset));
  const double limit =
      std::max(ClockAlignment::kOutlierMads * static_cast<double>(mad), static_cast<double>(ClockAlignment::kOutlierFloorNs));
  std::vector<int64_t> kept;
  for (int64_t d : diffs)
    if (std::fabs(static_cast<double>(d - offset)) <= limit) kept.push_back(d);
  if (kept.size() < ClockAlignment::kMinMatched || kept.size() == diffs.size()) return PairFit{offset, mad, diffs.size()};
  offset = median(kept);
  return PairFit{offset, static_cast<uint64_t>(median_abs_deviation(kept, offset)), kept.size()};
}

std::string micros(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f µs", static_cast<double>(ns) / 1000.0);
  return buf;
}

}  // namespace

void shift_scan(RankScan& scan, int64_t delta) {
  if (delta == 0) return;
  auto shift = [delta](uint64_t& t) {
    if (t != 0) t = static_cast<uint64_t>(static_cast<int64_t>(t) + delta);
  };
  for (CollectiveCall& c : scan.calls) {
    shift(c.begin_ns);
    shift(c.end_ns);
  }
  for (StepStats& s : scan.steps) {
    shift(s.begin_ns);
    shift(s.end_ns);
  }
  for (GroupCall& c : scan.group_calls) {
    shift(c.begin_ns);
    shift(c.end_ns);
  }
  shift(scan.whole.begin_ns);
  shift(scan.whole.end_ns);
  shift(scan.first_ns);
  shift(scan.last_ns);
}

ClockAlignment estimate_clock_alignment(const TraceReader& reader, const std::vector<RankScan>& scans,
                                        const std::vector<bool>& left_out) {
  ClockAlignment out;
  const std::vector<ProcessState>& procs = reader.processes();
  out.delta.assign(procs.size(), 0);
  std::map<std::string, size_t> host_index;
  for (const ProcessState& p : procs) {
    // Without a start the reader could not align it by wall clock either.
    if (!p.start_known || p.start_realtime_ns == 0) continue;
    if (p.index < left_out.size() && left_out[p.index]) continue;
    auto [it, inserted] = host_index.emplace(p.hostname, out.hosts.size());
    if (inserted) {
      HostClock h;
      h.host = p.hostname;
      h.wall_offset_ns = p.clock_offset_ns;
      out.hosts.push_back(std::move(h));
    }
    out.hosts[it->second].processes.push_back(p.index);
  }
  if (out.hosts.size() < 2) {
    for (HostClock& h : out.hosts) h.reference = h.aligned = true;
    return out;
  }

  // Calls with keys shared across processes.
  std::unordered_map<std::string, uint32_t> key_ids;
  std::vector<std::vector<Call>> calls(procs.size());
  for (const RankScan& s : scans) {
    if (s.process >= procs.size() || (s.process < left_out.size() && left_out[s.process])) continue;
    std::vector<uint32_t> local_to_global;
    for (const std::string& k : s.keys) local_to_global.push_back(key_ids.emplace(k, key_ids.size()).first->second);
    for (const CollectiveCall& c : s.calls) calls[s.process].push_back({local_to_global[c.key], c.end_ns});
  }
  auto ends_of = [&](size_t process, int64_t correction) {
    EndsByKey ends;
    for (const Call& c : calls[process])
      ends[c.key].push_back(static_cast<uint64_t>(static_cast<int64_t>(c.end) + correction));
    for (auto& [k, v] : ends) std::sort(v.begin(), v.end());
    return ends;
  };

  // The reference: the first host (rank 0's) with any call.
  size_t ref = SIZE_MAX;
  for (size_t h = 0; h < out.hosts.size() && ref == SIZE_MAX; ++h)
    for (size_t p : out.hosts[h].processes)
      if (!calls[p].empty()) ref = h;
  // Aligned processes with calls, per aligned host in the order they were
  // aligned: a rank is tried against up to kAnchorsPerHost of each host's,
  // so that a host reached only through a later host is still reached.
  std::vector<std::vector<EndsByKey>> anchors;
  constexpr size_t kAnchorsPerHost = 2;
  auto add_anchors = [&](const HostClock& h) {
    anchors.emplace_back();
    for (size_t p : h.processes)
      if (!calls[p].empty() && anchors.back().size() < kAnchorsPerHost)
        anchors.back().push_back(ends_of(p, h.correction_ns));
  };
  if (ref != SIZE_MAX) {
    out.hosts[ref].reference = out.hosts[ref].aligned = true;
    add_anchors(out.hosts[ref]);
  }
  for (bool progress = ref != SIZE_MAX; progress;) {
    progress = false;
    for (HostClock& h : out.hosts) {
      if (h.aligned) continue;
      std::vector<int64_t> offsets;
      std::vector<int64_t> residuals;
      uint64_t matched = 0;
      for (size_t p : h.processes) {
        if (calls[p].empty()) continue;
        std::optional<PairFit> fit;
        for (size_t a = 0; a < anchors.size() && !fit; ++a)
          for (size_t b = 0; b < anchors[a].size() && !fit; ++b) fit = fit_pair(anchors[a][b], calls[p]);
        if (!fit) continue;
        offsets.push_back(fit->offset);
        residuals.push_back(static_cast<int64_t>(fit->residual));
        matched += fit->matched;
      }
      if (offsets.empty()) continue;
      h.aligned = true;
      h.correction_ns = median(offsets);
      h.residual_ns = static_cast<uint64_t>(median(residuals));
      h.matched = matched;
      add_anchors(h);
      progress = true;
    }
  }

  size_t aligned = 0;
  uint64_t worst = 0, matched = 0;
  for (const HostClock& h : out.hosts) {
    for (size_t p : h.processes) out.delta[p] = h.correction_ns;
    if (!h.aligned) continue;
    ++aligned;
    worst = std::max(worst, h.residual_ns);
    matched += h.matched;
  }
  const std::string hosts = std::to_string(out.hosts.size()) + " hosts";
  if (aligned == 0) {
    out.method = "wall clock";
    out.note = "ringprof: warning: the processes ran on " + hosts +
               " and recorded no collective operation in common: they are aligned by wall clock only, which is only "
               "as good as the hosts' clock synchronisation (NTP: often hundreds of microseconds)";
  } else if (aligned == out.hosts.size()) {
    out.method = "collectives";
    out.note = "ringprof: note: the processes ran on " + hosts + ", aligned by the ends of their collective operations (" +
               std::to_string(matched) + " calls matched; residual up to " + micros(worst) + ")";
  } else {
    out.method = "collectives and wall clock";
    out.note = "ringprof: warning: the processes ran on " + hosts + "; " + std::to_string(out.hosts.size() - aligned) +
               " of them share no collective operation with the others and are aligned by wall clock only, which is "
               "only as good as the hosts' clock synchronisation (NTP: often hundreds of microseconds)";
  }
  return out;
}

ClockAlignment align_clocks_by_collectives(TraceReader& reader, unsigned threads) {
  // Without scans the estimate only groups hosts: one host needs no reading.
  ClockAlignment hosts_only = estimate_clock_alignment(reader, {}, {});
  if (hosts_only.hosts.size() < 2) return hosts_only;
  ClockAlignment a = estimate_clock_alignment(reader, scan_ranks(reader, true, threads), {});
  reader.adjust_clocks(a.delta, a.note);
  return a;
}

}  // namespace ringprof
