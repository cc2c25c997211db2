// follow_groups (ringprof/tools/rank_report.h): each process group's calls
// numbered across ranks, the collective where some ranks stopped, and the
// places where ranks called different operations.
#include <algorithm>
#include <map>

#include "ringprof/tools/rank_report.h"

namespace ringprof {

namespace {

// Calls whose ends lie within this of each other can be one collective's.
constexpr uint64_t kEndToleranceNs = 5'000'000;
constexpr size_t kVoteCalls = 64;

// The offset to add to `calls`' indices to number them as `ref`'s: the one
// that puts most of the first kVoteCalls completed calls next to a reference
// call ending at about the same time (0 when none does).
int64_t offset_against(const std::vector<const GroupCall*>& ref, const std::vector<const GroupCall*>& calls) {
  std::vector<uint64_t> ref_ends;
  std::vector<size_t> ref_index;
  for (size_t j = 0; j < ref.size(); ++j) {
    if (!ref[j]->completed) continue;
    ref_ends.push_back(ref[j]->end_ns);
    ref_index.push_back(j);
  }
  // Ends of completed calls grow with their index (calls of a group complete in order).
  std::map<int64_t, size_t> votes;
  size_t used = 0;
  for (size_t i = 0; i < calls.size() && used < kVoteCalls; ++i) {
    if (!calls[i]->completed) continue;
    ++used;
    const uint64_t end = calls[i]->end_ns;
    auto it = std::lower_bound(ref_ends.begin(), ref_ends.end(), end);
    size_t best = ref_ends.size();
    uint64_t best_gap = kEndToleranceNs + 1;
    for (auto c : {it, it == ref_ends.begin() ? it : it - 1}) {
      if (c == ref_ends.end()) continue;
      const uint64_t gap = *c > end ? *c - end : end - *c;
      if (gap < best_gap) {
        best_gap = gap;
        best = static_cast<size_t>(c - ref_ends.begin());
      }
    }
    if (best < ref_ends.size()) ++votes[static_cast<int64_t>(ref_index[best]) - static_cast<int64_t>(i)];
  }
  int64_t offset = 0;
  size_t most = 0;
  for (const auto& [d, n] : votes) {
    if (n > most || (n == most && std::llabs(d) < std::llabs(offset))) {
      most = n;
      offset = d;
    }
  }
  return offset;
}

std::string call_text(const GroupCall& c) { return c.shapes.empty() ? c.op : c.op + " " + c.shapes; }

}  // namespace

std::vector<GroupSequence> follow_groups(const std::vector<RankScan*>& scans, const std::vector<RankRow>& rows) {
  // Per group, per row: its calls in the order entered.
  std::map<std::string, std::vector<std::vector<const GroupCall*>>> by_group;
  for (size_t r = 0; r < scans.size(); ++r) {
    for (const GroupCall& c : scans[r]->group_calls) {
      auto& per_row = by_group[c.group];
      per_row.resize(scans.size());
      per_row[r].push_back(&c);
    }
  }
  std::vector<GroupSequence> out;
  for (auto& [group, per_row] : by_group) {
    std::vector<size_t> members;
    for (size_t r = 0; r < per_row.size(); ++r)
      if (!per_row[r].empty()) members.push_back(r);
    if (members.size() < 2) continue;
    // Each call's number. When every call carries PyTorch's sequence
    // number in the group, that orders and lines them up (from 1 at the
    // lowest the files hold); otherwise the order each rank entered them,
    // lined up by the calls' ends.
    bool all_seq = true;
    for (size_t r : members)
      for (const GroupCall* c : per_row[r]) all_seq = all_seq && c->seq != 0;
    std::vector<std::vector<uint64_t>> number(per_row.size());
    uint64_t seq_base = 0;
    if (all_seq) {
      uint64_t lowest = UINT64_MAX;
      for (size_t r : members) {
        std::stable_sort(per_row[r].begin(), per_row[r].end(),
                         [](const GroupCall* a, const GroupCall* b) { return a->seq < b->seq; });
        lowest = std::min(lowest, per_row[r].front()->seq);
      }
      for (size_t r : members)
        for (const GroupCall* c : per_row[r]) number[r].push_back(c->seq - lowest + 1);
      seq_base = lowest;
    } else {
      // The reference: the row whose files' first call began earliest.
      size_t ref = members[0];
      for (size_t r : members)
        if (per_row[r].front()->begin_ns < per_row[ref].front()->begin_ns) ref = r;
      std::vector<int64_t> offset(per_row.size(), 0);
      for (size_t r : members)
        if (r != ref) offset[r] = offset_against(per_row[ref], per_row[r]);
      // Numbers from 1 at the earliest call of any row.
      int64_t lowest = 0;
      for (size_t r : members) lowest = std::min(lowest, offset[r]);
      for (size_t r : members)
        for (size_t i = 0; i < per_row[r].size(); ++i)
          number[r].push_back(static_cast<uint64_t>(static_cast<int64_t>(i) + offset[r] - lowest + 1));
    }
    auto seq_of = [&](size_t r, size_t i) { return number[r][i]; };
    const auto& calls_of = per_row;  // (clang 14 lambdas cannot capture a structured binding)
    auto call_numbered = [&](size_t r, uint64_t n) -> const GroupCall* {
      auto it = std::lower_bound(number[r].begin(), number[r].end(), n);
      return it != number[r].end() && *it == n ? calls_of[r][static_cast<size_t>(it - number[r].begin())] : nullptr;
    };

    GroupSequence g;
    g.group = group;
    g.seq_base = seq_base;
    for (size_t r : members) {
      const std::vector<const GroupCall*>& calls = per_row[r];
      const GroupCall& last = *calls.back();
      GroupRankProgress p;
      p.row = r;
      p.rank = rows[r].rank;
      p.calls = calls.size();
      p.first_seq = seq_of(r, 0);
      p.last_seq = seq_of(r, calls.size() - 1);
      p.last_op = last.op;
      p.last_name = last.name;
      p.last_shapes = last.shapes;
      p.last_completed = last.completed;
      p.last_duration_ns = last.end_ns > last.begin_ns ? last.end_ns - last.begin_ns : 0;
      g.ranks.push_back(std::move(p));
    }
    // Where some ranks stopped: the call after the lowest last one, when
    // another rank entered it.
    uint64_t low = UINT64_MAX, high = 0;
    for (const GroupRankProgress& p : g.ranks) {
      low = std::min(low, p.last_seq);
      high = std::max(high, p.last_seq);
    }
    if (high > low) {
      GroupStop stop;
      stop.seq = low + 1;
      for (const GroupRankProgress& p : g.ranks) {
        if (p.last_seq == low) {
          stop.missing.push_back(p.row);
          continue;
        }
        stop.entered.push_back(p.row);
        if (const GroupCall* c = call_numbered(p.row, stop.seq)) {
          if (stop.op.empty()) {
            stop.op = c->op;
            stop.name = c->name;
            stop.shapes = c->shapes;
          }
          stop.completed_somewhere = stop.completed_somewhere || c->completed;
        }
      }
      g.stop = std::move(stop);
    }
    // Mismatches: the same place in the sequence, different operations or shapes.
    std::map<uint64_t, std::vector<std::pair<size_t, const GroupCall*>>> at;
    for (size_t r : members)
      for (size_t i = 0; i < per_row[r].size(); ++i) at[seq_of(r, i)].emplace_back(r, per_row[r][i]);
    for (const auto& [seq, calls] : at) {
      if (g.mismatches.size() >= GroupSequence::kMaxMismatches) break;
      bool differ = false;
      for (const auto& [r, c] : calls) {
        const GroupCall& first = *calls.front().second;
        if (c->op != first.op || (!c->shapes.empty() && !first.shapes.empty() && c->shapes != first.shapes))
          differ = true;
      }
      if (!differ) continue;
      GroupMismatch m;
      m.seq = seq;
      for (const auto& [r, c] : calls) m.calls.emplace_back(r, call_text(*c));
      g.mismatches.push_back(std::move(m));
    }
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace ringprof
