// The findings' second pass over one process, CPU side: zones followed per
// thread as pieces of self time (the innermost open zone owns the time until
// the next begin or end on its thread), host reads and samples taken outside
// every zone; and the visitor that feeds both halves (findings/collector.h
// says what waits for what).
#include <algorithm>

#include "findings/collector.h"

namespace ringprof::internal {

namespace {

bool contains(const std::deque<TimeSpan>& by_end, uint64_t ts) {
  for (auto it = by_end.rbegin(); it != by_end.rend() && it->e >= ts; ++it)
    if (it->b <= ts) return true;
  return false;
}

void push_bounded(std::deque<TimeSpan>& q, TimeSpan s, size_t bound) {
  q.push_back(s);
  if (q.size() > bound) q.pop_front();
}

}  // namespace

FactsCollector::Impl::Impl(const RankScan& scan, TimeRange w, const std::string& thread, size_t tracked_zones)
    : range(w), filter(thread) {
  facts.all_threads = thread.empty();
  for (const StepStats& st : scan.steps)
    if (range.overlaps(st.begin_ns, st.end_ns)) facts.steps.push_back(st);
  for (const StepStats& st : facts.steps) step_begins.push_back(st.begin_ns);
  if (!facts.steps.empty()) {
    loop_b = facts.steps.front().begin_ns;
    loop_e = facts.steps.back().end_ns;
  }
  // The zones with the most self time over the steps are followed per step.
  std::vector<std::pair<std::string, uint64_t>> by_self(scan.zone_self_ns.begin(), scan.zone_self_ns.end());
  std::sort(by_self.begin(), by_self.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first < b.first;
  });
  for (const auto& [name, ns] : by_self) {
    if (facts.tracked.size() >= tracked_zones || ns == 0) break;
    tracked_index.emplace(name, static_cast<int>(facts.tracked.size()));
    facts.tracked.push_back(name);
  }
  facts.step_zone_ns.assign(facts.steps.size() * facts.tracked.size(), 0);
  facts.gpu = scan.gpu_records > 0;
  facts.whole = scan.whole;
  facts.first_ns = scan.first_ns;
  facts.last_ns = scan.last_ns;
  const uint64_t from = std::max(range.begin_ns, facts.first_ns), to = std::min(range.end_ns, facts.last_ns);
  facts.range_ns = to > from ? to - from : 0;
}

FactsCollector::Impl::LocInfo& FactsCollector::Impl::loc(uint32_t id) {
  auto it = locs.find(id);
  if (it != locs.end()) return it->second;
  LocInfo li;
  li.name = process->location_name(id);
  auto t = tracked_index.find(li.name);
  if (t != tracked_index.end()) li.tracked = t->second;
  li.host_read = is_host_read_zone(li.name);
  return locs.emplace(id, std::move(li)).first->second;
}

FactsCollector::Impl::Thread& FactsCollector::Impl::thread(uint32_t index) {
  auto [it, inserted] = threads.try_emplace(index);
  if (inserted) it->second.index = index;
  return it->second;
}

uint32_t FactsCollector::Impl::index_of_tid(uint32_t tid) {
  if (tid_map_threads != process->threads.size()) {
    tid_to_index.clear();
    for (const auto& [index, t] : process->threads) tid_to_index[t.tid] = index;
    tid_map_threads = process->threads.size();
  }
  auto it = tid_to_index.find(tid);
  return it == tid_to_index.end() ? 0 : it->second;
}

bool FactsCollector::Impl::tid_selected(uint32_t tid) {
  if (filter.empty()) return true;
  const uint32_t index = index_of_tid(tid);
  return index != 0 && filter.matches(*process, index);
}

void FactsCollector::Impl::zone_begin(Thread& t, const DecodedEvent& e) {
  if (t.stack.size() >= kMaxZoneDepth) {
    ++t.overflow;
    return;
  }
  if (!t.stack.empty()) piece(t, t.stack.back().loc, t.last_change, e.ts_ns);
  if (loc(e.loc).host_read && t.host_read_depth++ == 0) {
    t.host_read_begin = e.ts_ns;
    t.host_read_loc = e.loc;
  }
  t.stack.push_back({e.loc, e.ts_ns});
  t.last_change = e.ts_ns;
}

void FactsCollector::Impl::zone_end(Thread& t, const DecodedEvent& e) {
  if (t.overflow) {
    --t.overflow;
    return;
  }
  if (t.stack.empty()) return;  // its begin is in a file already deleted
  const Open top = t.stack.back();
  const uint64_t end = std::max(e.ts_ns, top.begin);
  piece(t, top.loc, t.last_change, end);
  t.stack.pop_back();
  t.last_change = end;
  if (loc(top.loc).host_read && t.host_read_depth > 0 && --t.host_read_depth == 0) host_read(t, top.begin, end);
  if (t.stack.empty()) push_bounded(t.closed, {top.begin, end}, kClosedSpans);
}

void FactsCollector::Impl::host_read(Thread& t, uint64_t b, uint64_t e) {
  push_bounded(t.host_reads, {b, e}, kHostReadSpans);
  if (!selected(t) || !in_loop(b) || !range.overlaps(b, e)) return;
  SyncFacts& s = facts.syncs[loc(t.host_read_loc).name];
  ++s.count;
  s.blocked_ns += e - b;
}

bool FactsCollector::Impl::inside_host_read(uint32_t tid, uint64_t ts) {
  const uint32_t index = index_of_tid(tid);
  auto it = index ? threads.find(index) : threads.end();
  if (it == threads.end()) return false;
  const Thread& t = it->second;
  return (t.host_read_depth > 0 && t.host_read_begin <= ts) || contains(t.host_reads, ts);
}

void FactsCollector::Impl::piece(Thread& t, uint32_t loc_id, uint64_t b, uint64_t e) {
  b = std::max(b, loop_b);
  e = std::min(e, loop_e);
  if (e <= b || !selected(t)) return;
  const int tracked = loc(loc_id).tracked;
  if (tracked >= 0) {
    const size_t n = facts.tracked.size();
    size_t i = static_cast<size_t>(std::upper_bound(step_begins.begin(), step_begins.end(), b) - step_begins.begin());
    for (uint64_t at = b; i > 0 && i <= facts.steps.size() && at < e; ++i) {
      const uint64_t step_end = std::min(e, facts.steps[i - 1].end_ns);
      if (step_end > at) facts.step_zone_ns[(i - 1) * n + static_cast<size_t>(tracked)] += step_end - at;
      at = std::max(at, step_end);
    }
  }
  if (!facts.gpu) return;
  pieces.push_back({loc_id, b, e});
  if (pieces.size() > kPendingPieces) {
    ++facts.idle_evaluated_early;
    judge(pieces.front());
    pieces.pop_front();
  }
}

void FactsCollector::Impl::judge_settled() {
  while (!pieces.empty() && pieces.front().e <= horizon) {
    judge(pieces.front());
    pieces.pop_front();
  }
}

void FactsCollector::Impl::classify(Thread& t, const PendingSample& s) {
  ++facts.samples;
  const bool covered = (!t.stack.empty() && t.stack.front().begin <= s.ts) || contains(t.closed, s.ts);
  if (!covered) ++facts.uncovered_by_stack[s.stack];
}

void FactsCollector::Impl::settle_samples(Thread& t) {
  while (!t.samples.empty() && t.samples.front().ts <= t.position) {
    classify(t, t.samples.front());
    t.samples.pop_front();
  }
}

FactsCollector::FactsCollector(const RankScan& scan, TimeRange range, const std::string& thread, size_t tracked_zones)
    : impl_(std::make_unique<Impl>(scan, range, thread, tracked_zones)) {}

FactsCollector::~FactsCollector() = default;

ProcessFacts& FactsCollector::facts() { return impl_->facts; }

void FactsCollector::begin_process(const ProcessState& p) {
  Impl& m = *impl_;
  m.process = &p;
  m.facts.process = p.index;
  const std::string pid = "pid " + std::to_string(p.pid);
  m.facts.label = p.rank ? p.trace_name() : p.display_name() + " (" + pid + ")";
  m.facts.rank_label = p.rank && p.rank->rank >= 0 ? "rank " + std::to_string(p.rank->rank) : pid;
}

void FactsCollector::segment(const SegmentView& view) {
  Impl& m = *impl_;
  m.process = &view.process;
  const DecodedSegment& seg = view.segment;
  m.facts.events += seg.events.size();
  m.facts.gpu_records += seg.gpu.size();
  // Drops cover the whole files, every thread (the events counted are every
  // thread's too): a thread filter must not hide what the recording lost.
  for (const DecodedThread& t : seg.threads) {
    m.facts.dropped_ring += t.dropped_ring;
    m.facts.dropped_io += t.dropped_io;
    m.facts.samples_lost += t.samples_lost;
  }
  if (seg.sampler && seg.sampler->hz > 0) m.facts.sample_period_ns = 1'000'000'000ull / seg.sampler->hz;
  for (const DecodedEvent& e : seg.events) {
    Impl::Thread& t = m.thread(e.thread_index);
    switch (e.kind) {
      case EventKind::ZoneBegin: m.zone_begin(t, e); break;
      case EventKind::ZoneEnd: m.zone_end(t, e); break;
      case EventKind::Sample:
        if (!m.range.contains(e.ts_ns) || !m.selected(t)) continue;
        t.samples.push_back({e.ts_ns, e.loc});
        if (t.samples.size() > kPendingSamples) {
          m.classify(t, t.samples.front());
          t.samples.pop_front();
        }
        continue;
      case EventKind::Instant:
      case EventKind::Counter:
      case EventKind::FlowBegin:
      case EventKind::FlowStep:
      case EventKind::FlowEnd:
      case EventKind::Step:
      case EventKind::Mark:
      case EventKind::Alloc:
      case EventKind::Free:
      case EventKind::HeapAlloc:
      case EventKind::HeapStack:
      case EventKind::HeapFree:
      case EventKind::ZoneArg:
      case EventKind::ZoneStack:
      case EventKind::AsyncBegin:
      case EventKind::AsyncEnd:
      case EventKind::None:
      case EventKind::ThreadName:
      case EventKind::Continuation: break;
    }
    t.position = std::max(t.position, e.ts_ns);
    m.settle_samples(t);
  }
  m.gpu_records(seg);
  m.judge_settled();
}

void FactsCollector::end_process(const ProcessState& p) {
  Impl& m = *impl_;
  m.process = &p;
  for (auto& [index, t] : m.threads) {
    for (const Impl::PendingSample& s : t.samples) m.classify(t, s);
    t.samples.clear();
  }
  for (const Impl::Piece& piece : m.pieces) m.judge(piece);
  m.pieces.clear();
  m.waiting.drain([&m](uint32_t, std::vector<Impl::Work>& ws) { m.deliver_unpaired(ws); });
  // Kernels whose launch has one API record only: judged with that one.
  m.launches.drain([&m](uint32_t, Impl::Launch& l) { m.flush(l); });
  m.facts.gpu_stats = p.gpu_stats;
  for (const auto& [loc, ns] : m.idle_by_loc)
    if (ns) m.facts.idle_self_ns[m.loc(loc).name] += ns;
  // What is left is per-record state; the facts are all that is kept.
  m.threads.clear();
  m.idle_by_loc.clear();
  m.launches.drain([](uint32_t, Impl::Launch&) {});
  m.counted_syncs.drain([](uint32_t, bool&) {});
}

}  // namespace ringprof::internal
