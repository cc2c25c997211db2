#include "ringprof/tools/gpu_summary.h"

#include <algorithm>
#include <array>
#include <cstdio>
#include <map>
#include <unordered_map>

#include "summaries/interval_union.h"
#include "symbols/demangle.h"
#include "ringprof/tools/gpu_occupancy.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_range.h"
#include "common/number_text.h"

namespace ringprof {

namespace {

// The union of busy intervals, in bounded memory: past kMax disjoint spans
// the oldest half is summed and forgotten.
class BusyTime {
 public:
  void add(uint64_t b, uint64_t e) {
    spans_.add(b, e);
    if (spans_.size() > kMax) done_ += spans_.forget_oldest_half();
  }
  uint64_t total() const { return done_ + spans_.length(); }

 private:
  static constexpr size_t kMax = 1 << 14;
  internal::IntervalUnion spans_;
  uint64_t done_ = 0;
};

struct DeviceState {
  GpuDeviceRow row;
  BusyTime busy;
};

class Collector final : public SegmentVisitor {
 public:
  Collector(GpuSummary& out, TimeRange range) : out_(out), range_(range) {}

  void begin_process(const ProcessState& p) override { process_ = &p; }

  void segment(const SegmentView& view) override {
    const DecodedSegment& seg = view.segment;
    for (const GpuActivity& a : seg.gpu) {
      if (a.kind == GpuKind::ExternalCorrelation || !range_.overlaps(a.start_ns, a.end_ns)) continue;
      switch (a.kind) {
        case GpuKind::Kernel: kernel(seg, a); break;
        case GpuKind::Memcpy: {
          GpuCopyRow& c = copies_[std::min<uint8_t>(a.sub_kind, kGpuCopyKindCount - 1)];
          ++c.count;
          c.bytes += a.bytes;
          c.total_ns += a.end_ns - a.start_ns;
          busy(a);
          break;
        }
        case GpuKind::Memset:
          ++out_.memsets;
          out_.memset_bytes += a.bytes;
          busy(a);
          break;
        case GpuKind::RuntimeApi: ++out_.runtime_calls; break;
        case GpuKind::DriverApi: ++out_.driver_calls; break;
        case GpuKind::Sync: ++out_.syncs; break;
        case GpuKind::Marker: out_.nvtx_ranges += a.sub_kind == 1; break;
        default: break;
      }
    }
  }

  void end_process(const ProcessState& p) override {
    out_.dropped_records += p.gpu_stats.dropped_records;
    out_.refused_buffers += p.gpu_stats.refused_buffers;
    out_.clock_violations += p.gpu_stats.clock_violations;
    out_.unknown_records += p.gpu_stats.unknown_records;
    for (auto& [id, d] : devices_) {
      if (const GpuDevice* dev = p.gpu_device(id)) {
        d.row.name = dev->name;
        d.row.cc_major = dev->cc_major;
        d.row.cc_minor = dev->cc_minor;
        d.row.sm_count = dev->sm_count;
      }
      d.row.pid = p.pid;
      d.row.device = id;
      d.row.busy_ns = d.busy.total();
      out_.devices.push_back(d.row);
    }
    devices_.clear();
  }

  void finish(size_t top) {
    for (auto& [name, row] : kernels_) out_.kernels.push_back(std::move(row));
    std::sort(out_.kernels.begin(), out_.kernels.end(), [](const GpuKernelRow& a, const GpuKernelRow& b) {
      return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
    });
    if (top && out_.kernels.size() > top) out_.kernels.resize(top);
    for (size_t k = 0; k < copies_.size(); ++k) {
      if (copies_[k].count == 0) continue;
      copies_[k].kind = static_cast<GpuCopyKind>(k);
      out_.copies.push_back(copies_[k]);
    }
  }

 private:
  void busy(const GpuActivity& a) {
    devices_[a.device].busy.add(std::max(a.start_ns, range_.begin_ns), std::min(a.end_ns, range_.end_ns));
  }

  void kernel(const DecodedSegment& seg, const GpuActivity& a) {
    busy(a);
    const uint64_t d = a.end_ns - a.start_ns;
    DeviceState& dev = devices_[a.device];
    ++dev.row.kernels;
    dev.row.kernel_ns += d;
    const std::string& raw = a.name ? seg.gpu_names[a.name - 1] : unnamed_;
    auto dm = demangled_.find(raw);
    if (dm == demangled_.end()) dm = demangled_.emplace(raw, internal::demangle(raw)).first;
    auto [it, inserted] = kernels_.try_emplace(dm->second);
    GpuKernelRow& row = it->second;
    const uint32_t smem = a.static_smem + a.dynamic_smem;
    if (inserted) {
      row.name = dm->second;
      row.min_ns = d;
      std::copy(a.grid, a.grid + 3, row.grid);
      std::copy(a.block, a.block + 3, row.block);
      row.registers = a.registers;
      row.shared_bytes = smem;
    } else if (!std::equal(a.grid, a.grid + 3, row.grid) || !std::equal(a.block, a.block + 3, row.block) ||
               a.registers != row.registers || smem != row.shared_bytes) {
      row.varies = true;
    }
    ++row.calls;
    row.total_ns += d;
    row.min_ns = std::min(row.min_ns, d);
    row.max_ns = std::max(row.max_ns, d);
    if (const GpuDevice* props = process_->gpu_device(a.device)) {
      const Occupancy o = compute_occupancy(*props, a);
      if (o.known) {
        row.blocks_per_sm_sum += o.grid_blocks_per_sm;
        row.achieved_sum += o.achieved;
        ++row.occupancy_calls;
        dev.row.sm_efficiency_ns += o.sm_efficiency * double(d);
        dev.row.achieved_ns += o.achieved * double(d);
        dev.row.occupancy_ns += d;
      }
    }
  }

  GpuSummary& out_;
  TimeRange range_;
  const ProcessState* process_ = nullptr;
  std::map<uint32_t, DeviceState> devices_;
  std::unordered_map<std::string, GpuKernelRow> kernels_;
  std::unordered_map<std::string, std::string> demangled_;
  std::array<GpuCopyRow, kGpuCopyKindCount> copies_{};
  const std::string unnamed_ = "<unnamed kernel>";
};

std::string dims(const int32_t d[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// Aligned text columns: first column left, the rest right.
std::string table(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) {
      if (width.size() <= c) width.push_back(0);
      width[c] = std::max(width[c], r[c].size());
    }
  std::string out;
  for (const auto& r : rows) {
    std::string line;
    for (size_t c = 0; c < r.size(); ++c) {
      const std::string pad(width[c] - r[c].size(), ' ');
      if (c > 0) line += "  ";
      line += c == 0 ? r[c] + pad : pad + r[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += "  " + line + "\n";
  }
  return out;
}

}  // namespace

GpuSummary compute_gpu_summary(TraceReader& reader, const GpuSummaryOptions& options) {
  GpuSummary s;
  TimeRange range;
  if (auto trace = reader.time_range()) {
    range = TimeRange{trace->first, trace->second};
    if (!options.range.empty()) {
      if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // the CLI checked it
    }
    // An open end of the range stops at the trace's own end.
    const uint64_t b = std::max(range.begin_ns, trace->first), e = std::min(range.end_ns, trace->second);
    s.range_ns = e >= b ? e - b : 0;
  }
  Collector c(s, range);
  reader.read(c);
  c.finish(options.top);
  return s;
}

std::string format_gpu_summary(const GpuSummary& s, size_t name_width) {
  std::string out;
  out += "Time range: " + format_us(s.range_ns) + " us\n";
  out += "Devices: " + std::to_string(s.devices.size()) + "\n";
  for (const GpuDeviceRow& d : s.devices) {
    std::string line = "  pid " + std::to_string(d.pid) + " GPU " + std::to_string(d.device);
    if (!d.name.empty())
      line += " \"" + d.name + "\" (cc " + std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " +
              std::to_string(d.sm_count) + " SMs)";
    out += line + "\n";
    out += "    utilization " + format_percent(d.busy_ns, s.range_ns) + "% (busy " + format_us(d.busy_ns) + " us), " +
           std::to_string(d.kernels) + " kernels, " + format_us(d.kernel_ns) + " us\n";
    if (d.occupancy_ns > 0)
      out += "    SM efficiency (est.) " + internal::percent_of(d.sm_efficiency_ns / double(d.occupancy_ns)) +
             ", achieved occupancy (est.) " + internal::percent_of(d.achieved_ns / double(d.occupancy_ns)) + "\n";
    else
      out += "    SM efficiency and occupancy: unknown (no device properties in the files)\n";
  }

  out += "Kernels: " + std::to_string(s.kernels.size()) + "\n";
  if (!s.kernels.empty()) {
    std::vector<std::vector<std::string>> rows = {{"Name", "Calls", "Total (us)", "Mean (us)", "Min (us)", "Max (us)",
                                                   "Blocks/SM", "Occupancy", "Grid", "Block", "Regs", "Shared (B)"}};
    for (const GpuKernelRow& k : s.kernels) {
      const bool occ = k.occupancy_calls > 0;
      const bool cut = name_width > 3 && k.name.size() > name_width;
      rows.push_back({cut ? k.name.substr(0, name_width - 3) + "..." : k.name, std::to_string(k.calls),
                      format_us(k.total_ns), format_us(k.total_ns / k.calls), format_us(k.min_ns), format_us(k.max_ns),
                      occ ? internal::fixed(k.blocks_per_sm_sum / double(k.occupancy_calls), 2) : "-",
                      occ ? internal::percent_of(k.achieved_sum / double(k.occupancy_calls)) : "-",
                      k.varies ? "varies" : dims(k.grid), k.varies ? "varies" : dims(k.block),
                      k.varies ? "varies" : std::to_string(k.registers),
                      k.varies ? "varies" : std::to_string(k.shared_bytes)});
    }
    out += table(rows);
  }

  out += "Memcpy: " + std::to_string(s.copies.size()) + " directions\n";
  if (!s.copies.empty()) {
    std::vector<std::vector<std::string>> rows = {{"Direction", "Count", "Bytes", "Total (us)", "GB/s"}};
    for (const GpuCopyRow& c : s.copies) {
      // bytes / ns = GB/s (10^9 bytes per second).
      rows.push_back({gpu_copy_kind_name(c.kind), std::to_string(c.count), std::to_string(c.bytes),
                      format_us(c.total_ns),
                      c.total_ns ? internal::fixed(double(c.bytes) / double(c.total_ns), 2) : "-"});
    }
    out += table(rows);
  }
  out += "Memset: " + std::to_string(s.memsets) + " (" + std::to_string(s.memset_bytes) + " bytes)\n";
  out += "API calls: " + std::to_string(s.runtime_calls) + " runtime, " + std::to_string(s.driver_calls) +
         " driver; syncs: " + std::to_string(s.syncs) + "; NVTX ranges: " + std::to_string(s.nvtx_ranges) + "\n";
  out += "Lost: " + std::to_string(s.dropped_records) + " records dropped by CUPTI, " +
         std::to_string(s.refused_buffers) + " buffers refused (pool full), " + std::to_string(s.unknown_records) +
         " unknown records\n";
  out += "Clock order violations: " + std::to_string(s.clock_violations) + "\n";
  return out;
}

}  // namespace ringprof
