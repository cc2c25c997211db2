#include "summaries/gpu_attribution.h"

#include <algorithm>

namespace ringprof::internal {

namespace {

// Closed zones kept per thread for late GPU records; correlation ids per generation.
constexpr size_t kClosedWindow = 1 << 16;
constexpr size_t kGeneration = 1 << 16;

bool is_work(GpuKind k) { return k == GpuKind::Kernel || k == GpuKind::Memcpy || k == GpuKind::Memset; }

template <typename Map>
typename Map::mapped_type* find(Map (&gen)[2], uint32_t id) {
  for (Map& m : gen) {
    auto it = m.find(id);
    if (it != m.end()) return &it->second;
  }
  return nullptr;
}

template <typename Map>
typename Map::mapped_type& insert(Map (&gen)[2], uint32_t id) {
  if (gen[0].size() >= kGeneration) {
    gen[1] = std::move(gen[0]);
    gen[0] = Map();
  }
  return gen[0][id];
}

}  // namespace

void GpuAttribution::begin_process(const ProcessState& p) {
  process_ = &p;
  threads_.clear();
  for (auto& m : launches_) m.clear();
  for (auto& m : waiting_) m.clear();
}

uint32_t GpuAttribution::intern(const std::string& s) {
  auto it = name_ids_.find(s);
  if (it != name_ids_.end()) return it->second;
  names_.push_back(s);
  const auto id = static_cast<uint32_t>(names_.size() - 1);
  name_ids_.emplace(s, id);
  return id;
}

void GpuAttribution::add_closed(Thread& t, const Span& s) {
  // Zones close in end order; NVTX ranges arrive nearly so: insert from the back.
  auto it = t.closed.end();
  while (it != t.closed.begin() && std::prev(it)->end > s.end) --it;
  t.closed.insert(it, s);
  if (t.closed.size() > kClosedWindow) t.closed.pop_front();
}

void GpuAttribution::event(const DecodedEvent& e) {
  if (e.kind != EventKind::ZoneBegin && e.kind != EventKind::ZoneEnd && e.kind != EventKind::ZoneArg &&
      e.kind != EventKind::ZoneStack)
    return;
  Thread& t = thread(process_->tid_of(e.thread_index));
  if (e.kind == EventKind::ZoneBegin) {
    if (t.open.size() < (1u << 16))
      t.open.push_back(OpenSpan{Span{e.ts_ns, 0, intern(process_->location_name(e.loc))}, e.loc, {}, 0});
    return;
  }
  if (t.open.empty()) return;
  if (e.kind == EventKind::ZoneArg || e.kind == EventKind::ZoneStack) {
    if (!key_) return;
    OpenSpan& o = t.open.back();
    if (e.kind == EventKind::ZoneStack)
      o.stack = e.loc;
    else if (!add_zone_arg(o.args, e.loc, static_cast<uint32_t>(e.value)))
      return;
    o.span.name = intern(key_(o.loc, o.args, o.stack));
    return;
  }
  Span s = t.open.back().span;
  t.open.pop_back();
  s.end = std::max(e.ts_ns, s.begin);
  add_closed(t, s);
}

GpuAttribution::Chain GpuAttribution::operators_at(uint32_t tid, uint64_t ts) {
  auto it = threads_.find(tid);
  if (it == threads_.end()) return {};
  const Thread& t = it->second;
  std::vector<Span> found;
  for (const OpenSpan& o : t.open)
    if (o.span.begin <= ts) found.push_back(o.span);
  for (auto c = t.closed.rbegin(); c != t.closed.rend() && c->end >= ts; ++c)
    if (c->begin <= ts) found.push_back(*c);
  // Nested spans: the later the begin, the deeper the zone.
  std::stable_sort(found.begin(), found.end(), [](const Span& a, const Span& b) { return a.begin > b.begin; });
  Chain chain;
  for (const Span& s : found) chain.push_back(s.name);
  return chain;
}

void GpuAttribution::deliver(const GpuActivity& work, const Chain& chain, uint32_t tid) {
  scratch_.clear();
  for (uint32_t id : chain) scratch_.push_back(&names_[id]);
  on_work_(work, scratch_, tid);
}

void GpuAttribution::gpu_records(const DecodedSegment& seg) {
  // NVTX ranges first: they are operators for the launches of this segment too.
  for (const GpuActivity& a : seg.gpu) {
    if (a.kind != GpuKind::Marker || a.sub_kind != 1 || a.name == 0) continue;
    add_closed(thread(a.tid), Span{a.start_ns, a.end_ns, intern(seg.gpu_names[a.name - 1])});
  }
  for (const GpuActivity& a : seg.gpu) {
    if (a.correlation == 0) continue;
    if (a.kind == GpuKind::RuntimeApi || a.kind == GpuKind::DriverApi) {
      if (find(launches_, a.correlation)) continue;  // the outer call (runtime) came first: keep it
      Launch& l = insert(launches_, a.correlation);
      l.chain = operators_at(a.tid, a.start_ns);
      l.tid = a.tid;
      for (auto& gen : waiting_) {
        auto w = gen.find(a.correlation);
        if (w == gen.end()) continue;
        for (const GpuActivity& work : w->second) deliver(work, l.chain, l.tid);
        gen.erase(w);
      }
    } else if (is_work(a.kind)) {
      if (const Launch* l = find(launches_, a.correlation))
        deliver(a, l->chain, l->tid);
      else if (auto* w = find(waiting_, a.correlation))
        w->push_back(a);
      else
        insert(waiting_, a.correlation).push_back(a);
    }
  }
}

void GpuAttribution::end_process() {
  for (auto& gen : waiting_) {
    for (auto& [id, works] : gen)
      for (const GpuActivity& w : works) deliver(w, {}, 0);
    gen.clear();
  }
}

}  // namespace ringprof::internal
