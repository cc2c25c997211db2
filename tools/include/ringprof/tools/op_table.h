// ringprof/tools/op_table.h — per-name zone aggregates, in the manner of
// torch.profiler's key_averages().table().
//
// For every zone name: calls, total (inclusive) time, self time (total minus
// the time of its direct child zones), average, min and max of the inclusive
// time, and two percentages over the sum of all self times (self % adds up to
// 100; total % is the same denominator, as torch computes it). Zones still
// open at the end count to their thread's last timestamp, as in convert.
// Nothing but the open-zone stacks and one row per distinct name is kept
// (and, when the files hold memory events, the blocks still live).
//
// Memory, as torch.profiler's "Self CPU Mem" / "CPU Mem": for files with
// Alloc/Free events (the detailed level), bytes allocated minus bytes freed
// on the zone's thread while it was open, by memory events inside the
// range: self while it was the innermost zone, total including the zones
// inside it. A free of unknown size takes the size of its allocation
// (memory_pairing.h); one whose allocation is not in the range counts its
// own size (0 when unknown) and is reported as unmatched.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

// The zone argument that carries an operator's FLOPs (ringprof.torch).
inline constexpr const char* kFlopsArgKey = "flops";

enum class TableColumn { Name, Calls, Total, Self, Avg, Min, Max, SelfGpu, GpuTotal, SelfMem, Mem, Flops };
// "name", "calls", "total", "self", "avg", "min", "max", "self_gpu", "gpu", "self_mem", "mem", "flops".
std::optional<TableColumn> parse_table_column(const std::string& text);

struct TableOptions {
  RangeSpec range;                        // zones overlapping it count whole
  TableColumn sort = TableColumn::Total;  // descending, except Name (ascending)
  size_t top = 0;                    // 0: every row
  std::string thread;                // "" all; else a thread name, or a kernel tid in decimal
  // One row per name and distinct argument text (zone_arg(), as in
  // torch.profiler's key_averages(group_by_input_shape=True)) instead of one
  // per name; GPU columns follow the same split.
  bool group_by_args = false;
  // One row per name and the innermost N frames of the Python stack that
  // called it (zones recorded with with_stack, as torch.profiler's
  // key_averages(group_by_stack_n=N)); zones without a stack get a row of
  // their own with none. 0: not grouped by stack.
  size_t group_by_stack_n = 0;
};

struct TableRow {
  std::string name;
  std::string args;  // group_by_args: "key=value; key=value" (zone_args_text), "" for zones with none
  std::vector<std::pair<std::string, std::string>> arg_list;  // the same, as (key, value) pairs
  // group_by_stack_n: the row's stack frames, innermost first, each
  // "file(line): function" as torch.profiler prints them; empty for zones
  // recorded without a stack.
  std::vector<std::string> stack;
  uint64_t calls = 0;
  uint64_t total_ns = 0;
  uint64_t self_ns = 0;
  uint64_t min_ns = 0;
  uint64_t max_ns = 0;
  // GPU work (kernels, copies, sets) the zone launched: directly (its parent
  // is this zone) and in total (launched anywhere inside it). A row may be an
  // NVTX range name with GPU columns only.
  uint64_t gpu_self_ns = 0;
  uint64_t gpu_total_ns = 0;
  // Bytes allocated minus bytes freed inside the zone (see above).
  int64_t self_mem = 0;
  int64_t mem = 0;
  // The part of self_mem and mem in device pools (is_device_pool_name).
  int64_t self_device_mem = 0;
  int64_t device_mem = 0;
  // Floating-point operations: the sum of the zones' "flops" argument
  // (ringprof.torch's with_flops, torch.profiler's formulas). Not a part of
  // the row's key when grouped by arguments.
  uint64_t flops = 0;
  uint64_t flops_ns = 0;  // total time of the zones that carried a "flops" argument: the rate's denominator
  uint64_t avg_ns() const { return calls ? total_ns / calls : 0; }
};

struct TableResult {
  std::vector<TableRow> rows;        // sorted, cut to `top`
  uint64_t sum_self_ns = 0;          // over every row, before the cut: the % denominator
  uint64_t zones = 0;                // zones counted
  uint64_t unmatched_zone_ends = 0;
  uint64_t unterminated_zones = 0;
  uint64_t zones_too_deep = 0;       // nested deeper than ZoneTracker::kMaxDepth: left out
  bool has_gpu = false;              // the files hold GPU work: GPU columns are shown
  uint64_t sum_gpu_ns = 0;           // all GPU work in the range
  uint64_t gpu_outside_zones_ns = 0; // launched outside any zone, or by a call not in the files
  bool has_memory = false;           // memory events in the range: memory columns are shown
  bool has_args = false;             // grouped by arguments: an Args column is shown
  bool has_stacks = false;           // grouped by stacks: a Source location column is shown
  bool has_flops = false;            // zones with a "flops" argument: FLOPs and GFLOP/s (flops / flops_ns) columns
  uint64_t mem_allocated = 0;        // bytes, every memory event in the range
  uint64_t mem_freed = 0;
  int64_t mem_outside_zones = 0;     // net bytes of events with no zone open on their thread
  uint64_t mem_outside_events = 0;   // ... and how many there were
  int64_t mem_outside_zones_device = 0;  // the part of mem_outside_zones in device pools
  uint64_t unmatched_frees = 0;
};

TableResult compute_table(TraceReader& reader, const TableOptions& options);

// Whether a memory pool holds a device's memory rather than the host's: the
// pools ringprof.torch names after a device other than the CPU
// ("torch:cuda:0"; "torch:cpu" and every other pool are the host's).
bool is_device_pool_name(std::string_view pool);

// Sorts rows in place by `column` (ties broken by name, then arguments, so
// output is stable).
void sort_table_rows(std::vector<TableRow>& rows, TableColumn column);

// `part` as a percentage of `whole` with two decimals ("12.34"); "0.00" when
// whole is 0.
std::string format_percent(uint64_t part, uint64_t whole);

enum class TableFormat { Text, Csv };
// Text: aligned columns, times in microseconds with three decimals, a total
// line below; a row's stack frames one per line in the last column. CSV: a
// header row and one row per name, same units, frames joined by "; ".
std::string format_table(const TableResult& table, TableFormat format);

}  // namespace ringprof
