#include "exporters/chrome_trace_gpu.h"

#include <charconv>
#include <cstdio>

#include "symbols/demangle.h"
#include "exporters/gpu_labels.h"
#include "common/json_text.h"
#include "ringprof/tools/gpu_occupancy.h"

namespace ringprof::internal {

namespace {

// Synthetic thread ids for GPU tracks, above any kernel tid (pid_max <= 2^22).
constexpr uint32_t kNvtxBase = 0x20000000;
constexpr uint32_t kStreamBase = 0x40000000;
constexpr uint32_t kSyncBase = 0x50000000;
constexpr uint32_t kOverheadTrack = 0x5fffffff;

uint32_t stream_track(uint32_t device, uint32_t stream) { return kStreamBase | (device & 0xff) << 22 | (stream & 0x3fffff); }

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void append_fixed(std::string& out, double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  out += buf;
}

}  // namespace

void GpuTraceWriter::begin_process(const ProcessState& p) {
  process_ = &p;
  named_tracks_.clear();
  allocated_.clear();
}

const std::string& GpuTraceWriter::kernel_name(const std::string& raw) {
  auto it = demangled_.find(raw);
  if (it == demangled_.end()) it = demangled_.emplace(raw, demangle(raw)).first;
  return it->second;
}

void GpuTraceWriter::track(uint32_t tid, const std::string& name, uint32_t sort_index) {
  if (!named_tracks_.insert(tid).second) return;
  for (const char* kind : {"thread_name", "thread_sort_index"}) {
    line_ = "{\"name\":\"";
    line_ += kind;
    line_ += "\",\"cat\":\"__metadata\",\"ph\":\"M\",\"pid\":";
    append_uint(line_, process_->trace_pid);
    line_ += ",\"tid\":";
    append_uint(line_, tid);
    if (kind[7] == 'n') {
      line_ += ",\"args\":{\"name\":";
      append_json_string(line_, name);
    } else {
      line_ += ",\"args\":{\"sort_index\":";
      append_uint(line_, sort_index);
    }
    line_ += "}}";
    emit_(line_);
  }
}

void GpuTraceWriter::complete(const std::string& name, const char* cat, uint64_t ts, uint64_t dur, uint32_t tid,
                              const std::string& args) {
  line_ = "{\"name\":";
  append_json_string(line_, name);
  line_ += ",\"cat\":\"";
  line_ += cat;
  line_ += "\",\"ph\":\"X\",\"ts\":";
  append_us(line_, ts);
  line_ += ",\"dur\":";
  append_us(line_, dur);
  line_ += ",\"pid\":";
  append_uint(line_, process_->trace_pid);
  line_ += ",\"tid\":";
  append_uint(line_, tid);
  if (!args.empty()) line_ += ",\"args\":{" + args + "}";
  line_ += "}";
  emit_(line_);
}

void GpuTraceWriter::flow(const char* ph, uint64_t ts, uint32_t tid, uint32_t correlation) {
  line_ = "{\"name\":\"launch\",\"cat\":\"gpu_flow\",\"ph\":\"";
  line_ += ph;
  line_ += "\",\"ts\":";
  append_us(line_, ts);
  line_ += ",\"pid\":";
  append_uint(line_, process_->trace_pid);
  line_ += ",\"tid\":";
  append_uint(line_, tid);
  line_ += ",\"id\":";
  append_uint(line_, uint64_t{process_->trace_pid} << 32 | correlation);
  line_ += ",\"bp\":\"e\"}";
  emit_(line_);
}

void GpuTraceWriter::segment(const SegmentView& view) {
  const DecodedSegment& seg = view.segment;
  std::string args;
  auto arg = [&](const char* key, uint64_t v) {
    if (!args.empty()) args += ',';
    args += '"';
    args += key;
    args += "\":";
    append_uint(args, v);
  };
  auto arg_str = [&](const char* key, const std::string& v) {
    if (!args.empty()) args += ',';
    args += '"';
    args += key;
    args += "\":";
    append_json_string(args, v);
  };
  auto arg_fixed = [&](const char* key, double v, int decimals) {
    if (!args.empty()) args += ',';
    args += '"';
    args += key;
    args += "\":";
    append_fixed(args, v, decimals);
  };
  for (const GpuActivity& a : seg.gpu) {
    if (a.kind == GpuKind::ExternalCorrelation || !range_.overlaps(a.start_ns, a.end_ns)) continue;
    const std::string name = a.name ? seg.gpu_names[a.name - 1] : std::string();
    const uint64_t dur = a.end_ns - a.start_ns;
    args.clear();
    switch (a.kind) {
      case GpuKind::Kernel: {
        const uint32_t tid = stream_track(a.device, a.stream);
        track(tid, "GPU " + std::to_string(a.device) + " stream " + std::to_string(a.stream), 1000000 + (tid & 0x3fffffff));
        arg_str("grid", gpu_dims(a.grid));
        arg_str("block", gpu_dims(a.block));
        arg("registers_per_thread", a.registers);
        arg("static_shared_memory", a.static_smem);
        arg("dynamic_shared_memory", a.dynamic_smem);
        arg("local_memory_per_thread", a.local_mem);
        arg("device", a.device);
        arg("context", a.context);
        arg("stream", a.stream);
        arg("correlation", a.correlation);
        if (const GpuDevice* dev = process_->gpu_device(a.device)) {
          const Occupancy o = compute_occupancy(*dev, a);
          if (o.known) {
            arg_fixed("blocks_per_sm", o.grid_blocks_per_sm, 2);
            arg("max_blocks_per_sm", o.blocks_per_sm);
            arg_str("occupancy_limited_by", o.limiter);
            arg_fixed("theoretical_occupancy_pct", o.theoretical * 100, 1);
            arg_fixed("est_achieved_occupancy_pct", o.achieved * 100, 1);
          }
        }
        complete(kernel_name(name.empty() ? "<unnamed kernel>" : name), "kernel", a.start_ns, dur, tid, args);
        flow("f", a.start_ns, tid, a.correlation);
        break;
      }
      case GpuKind::Memcpy:
      case GpuKind::Memset: {
        const uint32_t tid = stream_track(a.device, a.stream);
        track(tid, "GPU " + std::to_string(a.device) + " stream " + std::to_string(a.stream), 1000000 + (tid & 0x3fffffff));
        const bool copy = a.kind == GpuKind::Memcpy;
        if (copy) arg_str("kind", gpu_copy_kind_name(static_cast<GpuCopyKind>(a.sub_kind)));
        arg("bytes", a.bytes);
        if (copy && dur) arg_fixed("bandwidth_gb_per_s", double(a.bytes) / double(dur), 2);
        if (!copy) arg("value", a.value);
        arg("correlation", a.correlation);
        complete(copy ? std::string("Memcpy ") + gpu_copy_kind_name(static_cast<GpuCopyKind>(a.sub_kind))
                      : std::string("Memset"),
                 copy ? "gpu_memcpy" : "gpu_memset", a.start_ns, dur, tid, args);
        flow("f", a.start_ns, tid, a.correlation);
        break;
      }
      case GpuKind::RuntimeApi:
      case GpuKind::DriverApi: {
        arg("correlation", a.correlation);
        arg("return", a.value);
        complete(name, a.kind == GpuKind::RuntimeApi ? "cuda_runtime" : "cuda_driver", a.start_ns, dur, a.tid, args);
        if (gpu_api_launches_work(name)) flow("s", a.start_ns, a.tid, a.correlation);
        break;
      }
      case GpuKind::Sync: {
        const uint32_t tid = kSyncBase | (a.context & 0xffffff);
        track(tid, "CUDA sync (context " + std::to_string(a.context) + ")", 2000000 + a.context);
        arg("stream", a.stream);
        arg("correlation", a.correlation);
        complete(gpu_sync_name(a.sub_kind), "cuda_sync", a.start_ns, dur, tid, args);
        break;
      }
      case GpuKind::Overhead:
        track(kOverheadTrack, "CUPTI overhead", 3000000);
        complete(name, "cupti_overhead", a.start_ns, dur, kOverheadTrack, args);
        break;
      case GpuKind::Marker: {
        const uint32_t tid = kNvtxBase | (a.tid & 0x3fffff);
        track(tid, "NVTX (thread " + std::to_string(a.tid) + ")", 500000 + (a.tid & 0x3fffff));
        if (a.sub_kind == 1) {
          if (a.value) arg("color", a.value);
          complete(name, "nvtx", a.start_ns, dur, tid, args);
        } else {
          line_ = "{\"name\":";
          append_json_string(line_, name);
          line_ += ",\"cat\":\"nvtx\",\"ph\":\"i\",\"ts\":";
          append_us(line_, a.start_ns);
          line_ += ",\"pid\":";
          append_uint(line_, process_->trace_pid);
          line_ += ",\"tid\":";
          append_uint(line_, tid);
          line_ += ",\"s\":\"t\"}";
          emit_(line_);
        }
        break;
      }
      case GpuKind::Memory: {
        int64_t& total = allocated_[a.device];
        total += a.sub_kind == 1 ? int64_t(a.bytes) : a.sub_kind == 2 ? -int64_t(a.bytes) : 0;
        line_ = "{\"name\":\"GPU " + std::to_string(a.device) + " memory allocated\",\"cat\":\"gpu_memory\",\"ph\":\"C\",\"ts\":";
        append_us(line_, a.start_ns);
        line_ += ",\"pid\":";
        append_uint(line_, process_->trace_pid);
        line_ += ",\"args\":{\"bytes\":";
        line_ += std::to_string(total);
        line_ += "}}";
        emit_(line_);
        break;
      }
      default:
        break;
    }
  }
}

}  // namespace ringprof::internal
