#include "gpu/gpu_records.h"

#include <algorithm>

namespace ringprof {

namespace {

bool is_api(GpuKind k) { return k == GpuKind::RuntimeApi || k == GpuKind::DriverApi; }
bool is_launched_work(GpuKind k) { return k == GpuKind::Kernel || k == GpuKind::Memcpy || k == GpuKind::Memset; }

// Looks `id` up in both generations.
uint64_t* find(std::unordered_map<uint32_t, uint64_t> (&gen)[2], uint32_t id) {
  for (auto& m : gen) {
    auto it = m.find(id);
    if (it != m.end()) return &it->second;
  }
  return nullptr;
}

void remember(std::unordered_map<uint32_t, uint64_t> (&gen)[2], uint32_t id, uint64_t ts, size_t window) {
  if (uint64_t* known = find(gen, id)) {
    *known = std::min(*known, ts);
    return;
  }
  if (gen[0].size() >= window) {
    gen[1] = std::move(gen[0]);
    gen[0] = {};
  }
  gen[0].emplace(id, ts);
}

}  // namespace

uint32_t GpuRecords::intern(std::string_view name) {
  if (name.empty()) return 0;
  auto it = name_ids_.find(std::string(name));
  if (it != name_ids_.end()) return it->second;
  if (names_.size() >= kMaxNames) {
    if (overflow_name_ == 0) {
      names_.emplace_back("<too many names>");
      overflow_name_ = static_cast<uint32_t>(names_.size());
    }
    return overflow_name_;
  }
  names_.emplace_back(name);
  const auto id = static_cast<uint32_t>(names_.size());
  name_ids_.emplace(names_.back(), id);
  return id;
}

void GpuRecords::add(const GpuActivity& a) {
  check_order(a);
  pending_.push_back(a);
  if (a.kind != GpuKind::ExternalCorrelation) {  // it has no time of its own
    first_ns_ = std::min(first_ns_, a.start_ns);
    last_ns_ = std::max(last_ns_, std::max(a.start_ns, a.end_ns));
  }
  ++stats_.records;
  changed_ = true;
}

void GpuRecords::check_order(const GpuActivity& a) {
  if (a.correlation == 0) return;
  if (is_api(a.kind)) {
    // Work seen before its call: check now, the pair is complete.
    if (uint64_t* work = find(work_, a.correlation)) {
      if (*work < a.start_ns) ++stats_.clock_violations;
    }
    remember(api_, a.correlation, a.start_ns, kCorrelationWindow);
  } else if (is_launched_work(a.kind)) {
    if (uint64_t* api = find(api_, a.correlation)) {
      if (a.start_ns < *api) ++stats_.clock_violations;
    } else {
      remember(work_, a.correlation, a.start_ns, kCorrelationWindow);
    }
  }
}

void GpuRecords::add_device(const GpuDevice& d) {
  for (GpuDevice& known : devices_) {
    if (known.id == d.id) {
      known = d;
      return;
    }
  }
  devices_.push_back(d);
}

void GpuRecords::marker_start(uint32_t id, uint64_t ts, std::string_view name, uint32_t tid) {
  if (open_markers_.size() >= kMaxOpenMarkers) open_markers_.clear();  // ends that never came
  open_markers_[id] = OpenMarker{ts, intern(name), tid, 0};
}

void GpuRecords::marker_end(uint32_t id, uint64_t ts) {
  auto it = open_markers_.find(id);
  if (it == open_markers_.end()) return;  // its start came before recording began
  GpuActivity a;
  a.kind = GpuKind::Marker;
  a.sub_kind = 1;
  a.start_ns = it->second.start_ns;
  a.end_ns = std::max(ts, a.start_ns);
  a.name = it->second.name;
  a.tid = it->second.tid;
  a.value = it->second.color;
  open_markers_.erase(it);
  add(a);
}

void GpuRecords::marker_color(uint32_t id, uint32_t argb) {
  auto it = open_markers_.find(id);
  if (it != open_markers_.end()) it->second.color = argb;
}

void GpuRecords::mark(uint64_t ts, std::string_view name, uint32_t tid) {
  GpuActivity a;
  a.kind = GpuKind::Marker;
  a.sub_kind = 0;
  a.start_ns = a.end_ns = ts;
  a.name = intern(name);
  a.tid = tid;
  add(a);
}

void GpuRecords::set_source_counts(uint64_t dropped, uint64_t refused) {
  if (dropped == stats_.dropped_records && refused == stats_.refused_buffers) return;
  stats_.dropped_records = dropped;
  stats_.refused_buffers = refused;
  changed_ = true;
}

void GpuRecords::clear_pending() {
  pending_.clear();
  first_ns_ = ~0ull;
  last_ns_ = 0;
}

const GpuStats& GpuRecords::stats() {
  if (changed_) {
    ++stats_.version;
    changed_ = false;
  }
  return stats_;
}

}  // namespace ringprof
