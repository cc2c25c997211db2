// The findings' second pass over one process, GPU side: every device's busy
// time, work paired with its launching call by correlation id (launch versus
// run time, copies from pageable memory), and synchronising calls inside the
// step loop.
#include <algorithm>

#include "findings/collector.h"

namespace ringprof::internal {

namespace {

// CUpti_ActivityMemoryKind: CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE.
constexpr uint8_t kPageableMemory = 1;
// CUpti_ActivitySynchronizationType: a stream waiting on an event waits on
// the GPU, not on the host; the other types block the calling thread.
constexpr uint8_t kStreamWaitEvent = 2;

const char* sync_type_name(uint8_t type) {
  switch (type) {
    case 1: return "host wait: event synchronize";
    case 3: return "host wait: stream synchronize";
    case 4: return "host wait: context synchronize";
    default: return "host wait: synchronization";
  }
}

}  // namespace

uint32_t FactsCollector::Impl::intern(const std::string& s) {
  auto it = name_ids.find(s);
  if (it != name_ids.end()) return it->second;
  names.push_back(s);
  name_is_sync.push_back(-1);
  return name_ids.emplace(s, static_cast<uint32_t>(names.size() - 1)).first->second;
}

void FactsCollector::Impl::deliver(const Work& w, const Launch* launch) {
  if (!range.overlaps(w.start, w.end)) return;
  if (!filter.empty() && (launch == nullptr || !tid_selected(launch->tid))) return;
  const uint64_t run = w.end > w.start ? w.end - w.start : 0;
  if (w.kind == GpuKind::Kernel) {
    ++facts.kernels_seen;
    if (launch == nullptr || launch->graph) return;
    KernelLaunchFacts& k = facts.kernels[names[w.name]];
    ++k.kernels;
    k.launch_bound += launch->ns > run;
    if (k.run_ns.size() < KernelLaunchFacts::kMaxDurations) {
      k.run_ns.push_back(run);
      k.launch_ns.push_back(launch->ns);
    }
  } else if (w.kind == GpuKind::Memcpy && (w.src_kind == kPageableMemory || w.dst_kind == kPageableMemory)) {
    ++facts.pageable_copies;
    facts.pageable_bytes += w.bytes;
    facts.pageable_ns += run;
    ++facts.pageable_by_direction[w.sub_kind];
  }
}

void FactsCollector::Impl::pair(const Work& w, Launch& l) {
  if (w.kind == GpuKind::Kernel && !l.graph && !(l.runtime && l.driver))
    l.kernels.push_back(w);
  else
    deliver(w, &l);
}

void FactsCollector::Impl::flush(Launch& l) {
  const std::vector<Work> ready = std::move(l.kernels);
  l.kernels.clear();
  for (const Work& w : ready) deliver(w, &l);
}

FactsCollector::Impl::Launch& FactsCollector::Impl::launch(uint32_t correlation) {
  return launches.insert(correlation, [this](uint32_t, Launch& l) { flush(l); });
}

void FactsCollector::Impl::deliver_unpaired(std::vector<Work>& works) {
  for (const Work& w : works) deliver(w, nullptr);
}

void FactsCollector::Impl::sync(uint32_t correlation, uint32_t tid, bool tid_known, const std::string& name, uint64_t b,
                                uint64_t e) {
  if (correlation && counted_syncs.find(correlation)) return;
  if (!filter.empty() && (!tid_known || !tid_selected(tid))) return;
  if (!in_loop(b) || !range.overlaps(b, e)) return;
  if (tid_known && inside_host_read(tid, b)) return;
  SyncFacts& s = facts.syncs[name];
  ++s.count;
  s.blocked_ns += e > b ? e - b : 0;
  if (correlation) counted_syncs.insert(correlation) = true;
}

void FactsCollector::Impl::gpu_records(const DecodedSegment& seg) {
  auto name_of = [&](const GpuActivity& a) -> uint32_t {
    static const std::string kUnnamed = "<unnamed>";
    return intern(a.name > 0 && a.name <= seg.gpu_names.size() ? seg.gpu_names[a.name - 1] : kUnnamed);
  };
  auto is_work = [](GpuKind k) { return k == GpuKind::Kernel || k == GpuKind::Memcpy || k == GpuKind::Memset; };
  // Busy time first: every device's work, whatever thread launched it.
  for (const GpuActivity& a : seg.gpu) {
    if (!is_work(a.kind) || a.end_ns <= a.start_ns) continue;
    busy.add(a.start_ns, a.end_ns);
    horizon = std::max(horizon, a.start_ns);
  }
  if (busy.full()) {
    // Judge what the forgotten spans decide before forgetting them.
    const uint64_t cut = busy.oldest_half_end();
    std::deque<Piece> later;
    for (const Piece& p : pieces) {
      if (p.e <= cut)
        judge(p);
      else
        later.push_back(p);
    }
    pieces.swap(later);
    busy.forget_oldest_half();
  }
  // API calls before the work of the same segment, so that both orders pair.
  for (const GpuActivity& a : seg.gpu) {
    if (a.kind != GpuKind::RuntimeApi && a.kind != GpuKind::DriverApi) continue;
    const uint32_t name = name_of(a);
    const uint64_t ns = a.end_ns > a.start_ns ? a.end_ns - a.start_ns : 0;
    if (a.correlation) {
      Launch& l = launch(a.correlation);
      if (l.ns == 0 && l.tid == 0) l.tid = a.tid;
      l.ns = std::max(l.ns, ns);
      l.graph = l.graph || names[name].find("GraphLaunch") != std::string::npos;
      (a.kind == GpuKind::RuntimeApi ? l.runtime : l.driver) = true;
      if (std::vector<Work>* w = waiting.find(a.correlation)) {
        const std::vector<Work> ready = std::move(*w);
        waiting.erase(a.correlation);
        for (const Work& work : ready) pair(work, l);
      }
      if ((l.runtime && l.driver) || l.graph) flush(l);
    }
    if (name_is_sync[name] < 0) name_is_sync[name] = is_sync_call(names[name]) ? 1 : 0;
    if (name_is_sync[name]) sync(a.correlation, a.tid, true, names[name], a.start_ns, a.end_ns);
  }
  for (const GpuActivity& a : seg.gpu) {
    if (a.kind == GpuKind::Sync && a.sub_kind != kStreamWaitEvent) {
      const Launch* l = a.correlation ? launches.find(a.correlation) : nullptr;
      sync(a.correlation, l ? l->tid : 0, l != nullptr, sync_type_name(a.sub_kind), a.start_ns, a.end_ns);
    }
    if (!is_work(a.kind)) continue;
    const Work w{a.kind,     a.sub_kind, a.src_kind, a.dst_kind, a.kind == GpuKind::Kernel ? name_of(a) : 0,
                 a.start_ns, a.end_ns,   a.bytes};
    if (a.correlation == 0) {
      deliver(w, nullptr);
    } else if (Launch* l = launches.find(a.correlation)) {
      pair(w, *l);
    } else {
      waiting.insert(a.correlation, [this](uint32_t, std::vector<Work>& ws) { deliver_unpaired(ws); }).push_back(w);
    }
  }
}

}  // namespace ringprof::internal
