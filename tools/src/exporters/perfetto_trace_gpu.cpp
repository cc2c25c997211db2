#include "exporters/perfetto_trace_gpu.h"

#include <algorithm>

#include "exporters/gpu_labels.h"
#include "ringprof/tools/gpu_occupancy.h"
#include "symbols/demangle.h"

namespace ringprof::internal {

namespace {
// More lanes than this on one track: later records share the last one.
constexpr size_t kMaxLanes = 64;
}  // namespace

uint64_t PerfettoGpuWriter::new_track(uint64_t parent, const std::string& name, bool bytes_counter) {
  const uint64_t uuid = next_uuid_++;
  w_.child_track(seq_, uuid, parent, name,
                 bytes_counter ? PacketWriter::TrackKind::BytesCounter : PacketWriter::TrackKind::Slices);
  return uuid;
}

PerfettoGpuWriter::Track& PerfettoGpuWriter::track(const std::string& key, uint64_t parent, const std::string& name) {
  auto [it, inserted] = tracks_.try_emplace(key);
  if (inserted) {
    it->second.parent = parent;
    it->second.name = name;
  }
  return it->second;
}

uint64_t PerfettoGpuWriter::lane(Track& t, uint64_t start, uint64_t end) {
  for (Lane& l : t.lanes) {
    if (l.last_end <= start) {
      l.last_end = end;
      return l.uuid;
    }
  }
  if (t.lanes.size() >= kMaxLanes) {
    Lane& l = t.lanes.back();
    l.last_end = std::max(l.last_end, end);
    return l.uuid;
  }
  const std::string name = t.lanes.empty() ? t.name : t.name + " #" + std::to_string(t.lanes.size() + 1);
  t.lanes.push_back({new_track(t.parent, name, false), end});
  return t.lanes.back().uuid;
}

const std::string& PerfettoGpuWriter::kernel_name(const std::string& raw) {
  auto it = demangled_.find(raw);
  if (it == demangled_.end()) it = demangled_.emplace(raw, demangle(raw)).first;
  return it->second;
}

void PerfettoGpuWriter::slice(uint64_t track_uuid, const std::string& name, const char* category, uint64_t start,
                              uint64_t end, std::string_view annotations, Interned& interned, uint64_t flow,
                              bool terminating) {
  EventFields b;
  b.type = pf::TrackEvent::TYPE_SLICE_BEGIN;
  b.track_uuid = track_uuid;
  w_.set_name(seq_, name, interned, b);
  b.category_iid = w_.category_iid(seq_, category, interned);
  b.annotations = annotations;
  if (flow) {
    b.has_flow = true;
    b.flow_id = flow;
    b.terminating_flow = terminating;
  }
  w_.event(seq_, start, b, &interned);
  EventFields e;
  e.type = pf::TrackEvent::TYPE_SLICE_END;
  e.track_uuid = track_uuid;
  w_.event(seq_, end, e);
  ++written_;
}

void PerfettoGpuWriter::segment(const SegmentView& view) {
  const DecodedSegment& seg = view.segment;
  order_.resize(seg.gpu.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(),
                   [&](size_t x, size_t y) { return seg.gpu[x].start_ns < seg.gpu[y].start_ns; });
  for (size_t index : order_) {
    const GpuActivity& a = seg.gpu[index];
    if (a.kind == GpuKind::ExternalCorrelation || !range_.overlaps(a.start_ns, a.end_ns)) continue;
    const std::string name = a.name ? seg.gpu_names[a.name - 1] : std::string();
    const uint64_t launch_flow = process_flow_id(process_->trace_pid, a.correlation, 1);
    Interned interned;
    Annotations args(w_, seq_, interned);
    switch (a.kind) {
      case GpuKind::Kernel:
      case GpuKind::Memcpy:
      case GpuKind::Memset: {
        const std::string label = "GPU " + std::to_string(a.device) + " stream " + std::to_string(a.stream);
        Track& t = track("s" + std::to_string(a.device) + "/" + std::to_string(a.stream), process_uuid_, label);
        const uint64_t uuid = lane(t, a.start_ns, a.end_ns);
        if (a.kind == GpuKind::Kernel) {
          args.add("grid", gpu_dims(a.grid));
          args.add("block", gpu_dims(a.block));
          args.add("registers_per_thread", uint64_t{a.registers});
          args.add("static_shared_memory", uint64_t{a.static_smem});
          args.add("dynamic_shared_memory", uint64_t{a.dynamic_smem});
          args.add("local_memory_per_thread", uint64_t{a.local_mem});
          args.add("device", uint64_t{a.device});
          args.add("context", uint64_t{a.context});
          args.add("stream", uint64_t{a.stream});
          args.add("correlation", uint64_t{a.correlation});
          if (const GpuDevice* dev = process_->gpu_device(a.device)) {
            const Occupancy o = compute_occupancy(*dev, a);
            if (o.known) {
              args.add("blocks_per_sm", o.grid_blocks_per_sm);
              args.add("max_blocks_per_sm", uint64_t{o.blocks_per_sm});
              args.add("occupancy_limited_by", o.limiter);
              args.add("theoretical_occupancy_pct", o.theoretical * 100);
              args.add("est_achieved_occupancy_pct", o.achieved * 100);
            }
          }
          slice(uuid, kernel_name(name.empty() ? "<unnamed kernel>" : name), "kernel", a.start_ns, a.end_ns,
                args.bytes(), interned, launch_flow, true);
        } else {
          const bool copy = a.kind == GpuKind::Memcpy;
          const char* kind = gpu_copy_kind_name(static_cast<GpuCopyKind>(a.sub_kind));
          if (copy) args.add("kind", kind);
          args.add("bytes", a.bytes);
          const uint64_t dur = a.end_ns - a.start_ns;
          if (copy && dur) args.add("bandwidth_gb_per_s", double(a.bytes) / double(dur));
          if (!copy) args.add("value", a.value);
          args.add("correlation", uint64_t{a.correlation});
          slice(uuid, copy ? std::string("Memcpy ") + kind : std::string("Memset"), copy ? "gpu_memcpy" : "gpu_memset",
                a.start_ns, a.end_ns, args.bytes(), interned, launch_flow, true);
        }
        break;
      }
      case GpuKind::RuntimeApi:
      case GpuKind::DriverApi: {
        const std::optional<uint64_t> host = thread_track_(a.tid);
        if (!host) break;
        const uint64_t thread = *host;
        Track& t = track("a" + std::to_string(a.tid), thread ? thread : process_uuid_,
                         thread ? "CUDA API" : "CUDA API (thread " + std::to_string(a.tid) + ")");
        args.add("correlation", uint64_t{a.correlation});
        args.add("return", a.value);
        slice(lane(t, a.start_ns, a.end_ns), name, a.kind == GpuKind::RuntimeApi ? "cuda_runtime" : "cuda_driver",
              a.start_ns, a.end_ns, args.bytes(), interned, gpu_api_launches_work(name) ? launch_flow : 0, false);
        break;
      }
      case GpuKind::Sync: {
        Track& t = track("c" + std::to_string(a.context), process_uuid_,
                         "CUDA sync (context " + std::to_string(a.context) + ")");
        args.add("stream", uint64_t{a.stream});
        args.add("correlation", uint64_t{a.correlation});
        slice(lane(t, a.start_ns, a.end_ns), gpu_sync_name(a.sub_kind), "cuda_sync", a.start_ns, a.end_ns, args.bytes(),
              interned, 0, false);
        break;
      }
      case GpuKind::Overhead: {
        Track& t = track("o", process_uuid_, "CUPTI overhead");
        slice(lane(t, a.start_ns, a.end_ns), name, "cupti_overhead", a.start_ns, a.end_ns, {}, interned, 0, false);
        break;
      }
      case GpuKind::Marker: {
        const std::optional<uint64_t> host = thread_track_(a.tid);
        if (!host) break;
        const uint64_t thread = *host;
        Track& t = track("n" + std::to_string(a.tid), thread ? thread : process_uuid_,
                         thread ? "NVTX" : "NVTX (thread " + std::to_string(a.tid) + ")");
        if (a.sub_kind == 1) {
          if (a.value) args.add("color", a.value);
          slice(lane(t, a.start_ns, a.end_ns), name, "nvtx", a.start_ns, a.end_ns, args.bytes(), interned, 0, false);
        } else {
          EventFields f;
          f.type = pf::TrackEvent::TYPE_INSTANT;
          // An instant cannot cross a slice: it needs no lane of its own.
          f.track_uuid = t.lanes.empty() ? lane(t, a.start_ns, a.start_ns) : t.lanes.front().uuid;
          w_.set_name(seq_, name, interned, f);
          f.category_iid = w_.category_iid(seq_, "nvtx", interned);
          w_.event(seq_, a.start_ns, f, &interned);
          ++written_;
        }
        break;
      }
      case GpuKind::Memory: {
        auto [it, inserted] = allocated_.try_emplace(a.device);
        if (inserted)
          it->second.first = new_track(process_uuid_, "GPU " + std::to_string(a.device) + " memory allocated", true);
        int64_t& total = it->second.second;
        total += a.sub_kind == 1 ? int64_t(a.bytes) : a.sub_kind == 2 ? -int64_t(a.bytes) : 0;
        EventFields f;
        f.type = pf::TrackEvent::TYPE_COUNTER;
        f.track_uuid = it->second.first;
        f.has_int = true;
        f.int_value = total;
        w_.event(seq_, a.start_ns, f);
        ++written_;
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace ringprof::internal
