#include "ringprof/tools/op_table.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <unordered_map>

#include "summaries/gpu_attribution.h"
#include "summaries/memory_pairing.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"
#include "common/number_text.h"
#include "common/text_table.h"

namespace ringprof {

std::optional<TableColumn> parse_table_column(const std::string& text) {
  static const std::pair<const char*, TableColumn> kNames[] = {
      {"name", TableColumn::Name},        {"calls", TableColumn::Calls},      {"total", TableColumn::Total},
      {"self", TableColumn::Self},        {"avg", TableColumn::Avg},          {"min", TableColumn::Min},
      {"max", TableColumn::Max},          {"self_gpu", TableColumn::SelfGpu}, {"gpu", TableColumn::GpuTotal},
      {"self_mem", TableColumn::SelfMem}, {"mem", TableColumn::Mem},          {"flops", TableColumn::Flops}};
  for (const auto& [name, col] : kNames)
    if (text == name) return col;
  return std::nullopt;
}

namespace {

class TableBuilder final : public SegmentVisitor {
 public:
  TableBuilder(const TableOptions& options, TimeRange range)
      : options_(options),
        range_(range),
        zones_([this](const ClosedZone& z) { on_zone(z); }),
        threads_(options.thread),
        gpu_([this](const GpuActivity& w, const std::vector<const std::string*>& ops,
                    uint32_t tid) { on_gpu_work(w, ops, tid); },
             options.group_by_args || options.group_by_stack_n
                 ? internal::GpuAttribution::KeyFn([this](uint32_t loc, const std::vector<ZoneArgIds>& args,
                                                          uint32_t stack) { return key(loc, args, stack); })
                 : nullptr) {
    // Async spans are rows of their own: calls and durations, but no self
    // time, since no thread spends it (the % column stays a share of threads' time).
    zones_.set_on_async([this](const ClosedZone& z) { on_zone(z); });
  }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    stack_text_.clear();  // stack ids are per process
    flops_key_.clear();
    device_pool_.clear();
    zones_.clear();
    gpu_.begin_process(p);
    memory_.clear();
  }
  void segment(const SegmentView& view) override {
    const std::vector<DecodedEvent>& events = view.segment.events;
    memory_.resolve(view.segment, range_, {}, changes_);
    mem_bytes_.assign(changes_.empty() ? 0 : events.size(), 0);
    for (const internal::MemoryChange& c : changes_) {
      mem_bytes_[c.index] = c.bytes;
      has_memory_ = true;
      if (!threads_.matches(*process_, events[c.index].thread_index)) continue;
      if (c.bytes > 0)
        mem_allocated_ += static_cast<uint64_t>(c.bytes);
      else
        mem_freed_ += static_cast<uint64_t>(-c.bytes);
      unmatched_frees_ += c.unmatched;
    }
    for (size_t i = 0; i < events.size(); ++i) {
      const DecodedEvent& e = events[i];
      zones_.add(e);
      gpu_.event(e);
      // Zones in segment (per-thread) order, sizes from the time-ordered pairing.
      if (kind_is_exact_memory(e.kind) && !mem_bytes_.empty() && mem_bytes_[i] != 0 &&
          !zones_.add_memory(e.thread_index, mem_bytes_[i], is_device_pool(e.loc)) &&
          threads_.matches(*process_, e.thread_index)) {
        mem_outside_ += mem_bytes_[i];
        if (is_device_pool(e.loc)) mem_outside_device_ += mem_bytes_[i];
        ++mem_outside_events_;
      }
    }
    if (!view.segment.gpu.empty()) gpu_.gpu_records(view.segment);
  }
  void end_process(const ProcessState&) override {
    zones_.finish();
    gpu_.end_process();
  }

  TableResult result() {
    TableResult r;
    r.rows.reserve(rows_.size());
    r.has_args = options_.group_by_args;
    r.has_stacks = options_.group_by_stack_n > 0;
    for (auto& [name, row] : rows_) {
      r.sum_self_ns += row.self_ns;
      r.zones += row.calls;
      r.rows.push_back(std::move(row));
    }
    r.unmatched_zone_ends = zones_.unmatched_ends();
    r.unterminated_zones = zones_.unterminated();
    r.zones_too_deep = zones_.too_deep();
    r.has_gpu = has_gpu_;
    r.sum_gpu_ns = sum_gpu_ns_;
    r.gpu_outside_zones_ns = gpu_outside_ns_;
    r.has_memory = has_memory_;
    r.has_flops = has_flops_;
    r.mem_allocated = mem_allocated_;
    r.mem_freed = mem_freed_;
    r.mem_outside_zones = mem_outside_;
    r.mem_outside_events = mem_outside_events_;
    r.mem_outside_zones_device = mem_outside_device_;
    r.unmatched_frees = unmatched_frees_;
    sort_table_rows(r.rows, options_.sort);
    if (options_.top > 0 && r.rows.size() > options_.top) r.rows.resize(options_.top);
    return r;
  }

 private:
  void on_zone(const ClosedZone& z) {
    if (!range_.overlaps(z.begin_ns, z.end_ns) || !threads_.matches(*process_, z.thread_index)) return;
    TableRow& row = this->row(key(z.loc, z.args, z.stack));
    const uint64_t d = z.duration_ns();
    if (row.calls == 0 && options_.group_by_args) {
      for (const ZoneArgIds& a : z.args)
        if (!is_flops(a.key))
          row.arg_list.emplace_back(process_->location_name(a.key), zone_arg_value(*process_, a.value));
    }
    for (const ZoneArgIds& a : z.args) {  // (one "flops" per zone: a key given again replaces its value)
      if (!is_flops(a.key)) continue;
      const std::string v = zone_arg_value(*process_, a.value);
      uint64_t n = 0;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
      if (ec == std::errc() && end == v.data() + v.size()) {
        row.flops += n;
        row.flops_ns += d;
        has_flops_ = true;
      }
    }
    if (row.calls == 0) row.min_ns = d;  // a row made by GPU work first has no calls yet
    ++row.calls;
    row.total_ns += d;
    if (!z.async) row.self_ns += z.self_ns();
    row.min_ns = std::min(row.min_ns, d);
    row.max_ns = std::max(row.max_ns, d);
    row.self_mem += z.self_mem;
    row.mem += z.mem;
    row.self_device_mem += z.self_device_mem;
    row.device_mem += z.device_mem;
  }

  // GPU work goes to its operators: Self GPU to the innermost, GPU total to
  // each distinct name on the way out (recursion counts once, as for a call).
  void on_gpu_work(const GpuActivity& w, const std::vector<const std::string*>& ops, uint32_t tid) {
    if (!range_.overlaps(w.start_ns, w.end_ns)) return;
    if (!options_.thread.empty()) {
      bool selected = false;
      for (const auto& [index, t] : process_->threads)
        if (t.tid == tid) selected = selected || threads_.matches(*process_, index);
      if (!selected) return;
    }
    has_gpu_ = true;
    const uint64_t d = w.end_ns - w.start_ns;
    sum_gpu_ns_ += d;
    if (ops.empty()) {
      gpu_outside_ns_ += d;
      return;
    }
    row(*ops[0]).gpu_self_ns += d;
    for (size_t i = 0; i < ops.size(); ++i) {
      bool seen = false;
      for (size_t j = 0; j < i && !seen; ++j) seen = *ops[j] == *ops[i];
      if (!seen) row(*ops[i]).gpu_total_ns += d;
    }
  }
  // A zone's row key: its name, then "\x1f<arguments>" when grouped by
  // them, then "\x1e<frame>" for each of its first N stack frames when
  // grouped by stack.
  std::string key(uint32_t loc, const std::vector<ZoneArgIds>& args, uint32_t stack) {
    std::string k;
    if (options_.group_by_args) {
      // FLOPs are a measure, summed per row, not a part of its key.
      bool any = false;
      for (const ZoneArgIds& a : args) any = any || is_flops(a.key);
      if (any) {
        std::vector<ZoneArgIds> kept;
        for (const ZoneArgIds& a : args)
          if (!is_flops(a.key)) kept.push_back(a);
        k = zone_key_with_args(*process_, loc, kept);
      } else {
        k = zone_key_with_args(*process_, loc, args);
      }
    } else {
      k = process_->location_name(loc);
    }
    if (options_.group_by_stack_n && stack) k += stack_text(stack);
    return k;
  }
  // Whether a memory pool is a device's: one ringprof.torch names after a
  // device other than the CPU ("torch:cuda:0"), cached per id.
  bool is_device_pool(uint32_t pool_id) {
    auto [it, inserted] = device_pool_.try_emplace(pool_id, false);
    if (inserted) it->second = is_device_pool_name(process_->location_name(pool_id));
    return it->second;
  }
  // Whether an argument key is "flops" (ringprof.torch's with_flops), cached per id.
  bool is_flops(uint32_t key_id) {
    auto [it, inserted] = flops_key_.try_emplace(key_id, false);
    if (inserted) it->second = process_->location_name(key_id) == kFlopsArgKey;
    return it->second;
  }
  // "\x1e<frame>" for each of the stack's first N frames (cached per id).
  const std::string& stack_text(uint32_t stack) {
    auto [it, inserted] = stack_text_.try_emplace(stack);
    if (inserted) {
      if (!resolver_) resolver_ = std::make_unique<StackResolver>();
      size_t n = 0;
      for (const ResolvedFrame& f : resolver_->stack(*process_, stack)) {
        if (n++ == options_.group_by_stack_n) break;
        it->second += '\x1e' + source_frame_text(f);
      }
    }
    return it->second;
  }
  // The row of a key (above).
  TableRow& row(const std::string& key) {
    auto [it, inserted] = rows_.try_emplace(key);
    if (inserted) {
      const size_t stack = options_.group_by_stack_n ? key.find('\x1e') : std::string::npos;
      const std::string head = key.substr(0, stack);
      const size_t split = options_.group_by_args ? head.find('\x1f') : std::string::npos;
      it->second.name = head.substr(0, split);
      if (split != std::string::npos) it->second.args = head.substr(split + 1);
      for (size_t at = stack; at != std::string::npos;) {
        const size_t next = key.find('\x1e', at + 1);
        it->second.stack.push_back(key.substr(at + 1, next == std::string::npos ? next : next - at - 1));
        at = next;
      }
    }
    return it->second;
  }

  const TableOptions& options_;
  TimeRange range_;
  ZoneTracker zones_;
  ThreadFilter threads_;
  internal::GpuAttribution gpu_;
  bool has_gpu_ = false;
  uint64_t sum_gpu_ns_ = 0;
  uint64_t gpu_outside_ns_ = 0;
  internal::MemoryPairing memory_;
  std::vector<internal::MemoryChange> changes_;
  std::vector<int64_t> mem_bytes_;  // by event index in the current segment
  bool has_memory_ = false;
  uint64_t mem_allocated_ = 0;
  uint64_t mem_freed_ = 0;
  int64_t mem_outside_ = 0;
  uint64_t mem_outside_events_ = 0;
  int64_t mem_outside_device_ = 0;
  uint64_t unmatched_frees_ = 0;
  const ProcessState* process_ = nullptr;
  std::unordered_map<std::string, TableRow> rows_;
  std::unique_ptr<StackResolver> resolver_;  // group_by_stack_n only
  std::unordered_map<uint32_t, std::string> stack_text_;
  std::unordered_map<uint32_t, bool> flops_key_;    // by argument key id, per process
  std::unordered_map<uint32_t, bool> device_pool_;  // by pool id, per process
  bool has_flops_ = false;
};

int64_t column_value(const TableRow& r, TableColumn c) {
  switch (c) {
    case TableColumn::SelfMem: return r.self_mem;
    case TableColumn::Mem: return r.mem;
    // Times fit in int64_t for 292 years.
    case TableColumn::Calls: return static_cast<int64_t>(r.calls);
    case TableColumn::Total: return static_cast<int64_t>(r.total_ns);
    case TableColumn::Self: return static_cast<int64_t>(r.self_ns);
    case TableColumn::Avg: return static_cast<int64_t>(r.avg_ns());
    case TableColumn::Min: return static_cast<int64_t>(r.min_ns);
    case TableColumn::Max: return static_cast<int64_t>(r.max_ns);
    case TableColumn::SelfGpu: return static_cast<int64_t>(r.gpu_self_ns);
    case TableColumn::GpuTotal: return static_cast<int64_t>(r.gpu_total_ns);
    case TableColumn::Flops: return static_cast<int64_t>(r.flops);
    case TableColumn::Name: break;
  }
  return 0;
}

}  // namespace

void sort_table_rows(std::vector<TableRow>& rows, TableColumn column) {
  std::sort(rows.begin(), rows.end(), [column](const TableRow& a, const TableRow& b) {
    if (column != TableColumn::Name) {
      const int64_t va = column_value(a, column), vb = column_value(b, column);
      if (va != vb) return va > vb;
    }
    if (a.name != b.name) return a.name < b.name;
    return a.args != b.args ? a.args < b.args : a.stack < b.stack;
  });
}

bool is_device_pool_name(std::string_view pool) { return pool.substr(0, 6) == "torch:" && pool != "torch:cpu"; }

std::string format_percent(uint64_t part, uint64_t whole) {
  if (whole == 0) return "0.00";
  // Hundredths of a percent, rounded; long double keeps 64-bit ns exact enough.
  const auto hundredths = static_cast<uint64_t>(std::llround(static_cast<long double>(part) * 10000.0L / whole));
  std::string s = std::to_string(hundredths / 100) + ".";
  const uint64_t frac = hundredths % 100;
  if (frac < 10) s += '0';
  return s + std::to_string(frac);
}

TableResult compute_table(TraceReader& reader, const TableOptions& options) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // trace_range.h
  }
  TableBuilder builder(options, range);
  reader.read(builder);
  return builder.result();
}

std::string format_table(const TableResult& table, TableFormat format) {
  internal::TextRow headers = {"Name",   "Calls",    "Total (us)", "Total %", "Self (us)",
                               "Self %", "Avg (us)", "Min (us)",   "Max (us)"};
  internal::TextRow csv_headers = {"name",     "calls",  "total_us", "total_pct", "self_us",
                                   "self_pct", "avg_us", "min_us",   "max_us"};
  if (table.has_args) {
    headers.insert(headers.begin() + 1, "Args");
    csv_headers.insert(csv_headers.begin() + 1, "args");
  }
  if (table.has_gpu) {
    headers.insert(headers.end(), {"Self GPU (us)", "GPU total (us)"});
    csv_headers.insert(csv_headers.end(), {"self_gpu_us", "gpu_total_us"});
  }
  if (table.has_memory) {
    headers.insert(headers.end(), {"Self Mem (B)", "Mem (B)"});
    csv_headers.insert(csv_headers.end(), {"self_mem_bytes", "mem_bytes"});
  }
  if (table.has_flops) {
    headers.insert(headers.end(), {"FLOPs", "GFLOP/s"});
    csv_headers.insert(csv_headers.end(), {"flops", "gflops_per_s"});
  }
  if (table.has_stacks) {
    headers.push_back("Source location");
    csv_headers.push_back("stack");
  }
  std::vector<internal::TextRow> cells;
  for (const TableRow& r : table.rows) {
    cells.push_back({r.name, std::to_string(r.calls), format_us(r.total_ns),
                     format_percent(r.total_ns, table.sum_self_ns), format_us(r.self_ns),
                     format_percent(r.self_ns, table.sum_self_ns), format_us(r.avg_ns()), format_us(r.min_ns),
                     format_us(r.max_ns)});
    if (table.has_args) cells.back().insert(cells.back().begin() + 1, r.args);
    if (table.has_gpu) {
      cells.back().push_back(format_us(r.gpu_self_ns));
      cells.back().push_back(format_us(r.gpu_total_ns));
    }
    if (table.has_memory) {
      cells.back().push_back(std::to_string(r.self_mem));
      cells.back().push_back(std::to_string(r.mem));
    }
    if (table.has_flops) {
      // Achieved rate: FLOPs over the time of the calls that carried them
      // (not the row's calls recorded without, outside windows), per ns: GFLOP/s.
      cells.back().push_back(r.flops ? std::to_string(r.flops) : "");
      cells.back().push_back(r.flops && r.flops_ns
                                 ? internal::fixed(static_cast<double>(r.flops) / static_cast<double>(r.flops_ns), 3)
                                 : "");
    }
    if (table.has_stacks) {
      if (format == TableFormat::Csv) {
        std::string joined;
        for (const std::string& f : r.stack) joined += (joined.empty() ? "" : "; ") + f;
        cells.back().push_back(joined);
      } else {
        // The first frame on the row's line, each caller on a line of its own below.
        cells.back().push_back(r.stack.empty() ? std::string() : r.stack[0]);
        for (size_t i = 1; i < r.stack.size(); ++i) {
          cells.emplace_back(headers.size());
          cells.back().back() = r.stack[i];
        }
      }
    }
  }
  if (format == TableFormat::Csv) return internal::format_csv_table(csv_headers, cells);

  std::vector<bool> left(headers.size(), false);
  left[0] = true;
  if (table.has_args) left[1] = true;
  if (table.has_stacks) left.back() = true;
  std::string out = internal::format_text_table(headers, cells, left);
  out += "Self time total: " + format_us(table.sum_self_ns) + " us over " + std::to_string(table.zones) + " zones";
  if (table.unmatched_zone_ends)
    out += "; " + std::to_string(table.unmatched_zone_ends) + " zone ends without a begin skipped";
  if (table.unterminated_zones) out += "; " + std::to_string(table.unterminated_zones) + " unterminated zones";
  if (table.zones_too_deep)
    out += "; " + std::to_string(table.zones_too_deep) + " zones nested deeper than " +
           std::to_string(ZoneTracker::kMaxDepth) + " left out";
  out += "\n";
  if (table.has_gpu)
    out += "GPU time total: " + format_us(table.sum_gpu_ns) +
           " us; outside any zone: " + format_us(table.gpu_outside_zones_ns) + " us\n";
  if (table.has_memory) {
    out += "Memory: " + std::to_string(table.mem_allocated) + " B allocated, " + std::to_string(table.mem_freed) +
           " B freed; outside any zone: " + std::to_string(table.mem_outside_zones) + " B";
    if (table.unmatched_frees) out += "; " + std::to_string(table.unmatched_frees) + " frees without their allocation";
    out += "\n";
  }
  return out;
}

}  // namespace ringprof
