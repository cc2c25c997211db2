// tools_module.cpp — the `_ringprof_tools` extension: the analysis library the
// CLI is a front for, bound for Python. ringprof.torch.profile's traces and
// tables come from here (never from running the CLI). Every call reads the
// files afresh, with the GIL released while it does.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>
#include <vector>

#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/trace_range.h"
#include "tools_records.h"

namespace py = pybind11;
using namespace ringprof;

namespace {

// Each call first finds the window (find_window, without the GIL): an id the
// files do not mark is a ValueError, raised once the GIL is back.
RangeSpec window_range(std::optional<uint64_t> window_id) {
  RangeSpec w;
  w.window_id = window_id;
  return w;
}

py::dict table(const std::vector<std::string>& paths, std::optional<uint64_t> window_id, bool group_by_args,
               const std::string& thread, size_t group_by_stack_n) {
  TableResult result;
  std::vector<std::string> problems;
  std::string error;
  bool window_ok;
  {
    py::gil_scoped_release release;
    TraceReader reader(paths);
    window_ok = python::find_window(reader, window_id, &error).has_value();
    if (window_ok) {
      TableOptions options;
      options.range = window_range(window_id);
      options.thread = thread;
      options.group_by_args = group_by_args;
      options.group_by_stack_n = group_by_stack_n;
      result = compute_table(reader, options);
      problems = python::problem_lines(reader);
    }
  }
  if (!window_ok) throw py::value_error(error);
  py::list rows;
  for (const TableRow& r : result.rows) {
    py::dict row;
    row["name"] = r.name;
    row["args"] = r.args;
    row["arg_list"] = r.arg_list;
    row["calls"] = r.calls;
    row["total_ns"] = r.total_ns;
    row["self_ns"] = r.self_ns;
    row["min_ns"] = r.min_ns;
    row["max_ns"] = r.max_ns;
    row["gpu_self_ns"] = r.gpu_self_ns;
    row["gpu_total_ns"] = r.gpu_total_ns;
    row["self_mem"] = r.self_mem;
    row["flops"] = r.flops;
    row["self_device_mem"] = r.self_device_mem;
    row["device_mem"] = r.device_mem;
    row["mem"] = r.mem;
    row["stack"] = r.stack;
    rows.append(row);
  }
  py::dict d;
  d["rows"] = rows;
  d["sum_self_ns"] = result.sum_self_ns;
  d["has_gpu"] = result.has_gpu;
  d["sum_gpu_ns"] = result.sum_gpu_ns;
  d["has_memory"] = result.has_memory;
  d["has_flops"] = result.has_flops;
  d["mem_allocated"] = result.mem_allocated;
  d["mem_freed"] = result.mem_freed;
  d["mem_outside"] = result.mem_outside_zones;
  d["mem_outside_events"] = result.mem_outside_events;
  d["mem_outside_device"] = result.mem_outside_zones_device;
  d["problems"] = problems;
  return d;
}

py::dict chrome_trace(const std::vector<std::string>& paths, const std::string& out,
                      std::optional<uint64_t> window_id) {
  ChromeTraceStats stats;
  std::string error;
  bool ok;
  std::vector<std::string> problems;
  {
    py::gil_scoped_release release;
    TraceReader reader(paths);
    ok = python::find_window(reader, window_id, &error).has_value();
    if (ok) {
      ChromeTraceOptions options;
      options.range = window_range(window_id);
      ok = write_chrome_trace_file(reader, options, out, &stats, &error);
      problems = python::problem_lines(reader);
    }
  }
  if (!ok) throw py::value_error(error);
  py::dict d;
  d["events_written"] = stats.events_written;
  d["zones_written"] = stats.zones_written;
  d["problems"] = problems;
  return d;
}

py::list windows(const std::vector<std::string>& paths) {
  std::vector<MarkedWindow> found;
  {
    py::gil_scoped_release release;
    TraceReader reader(paths);
    found = find_marked_windows(reader);
  }
  py::list out;
  for (const MarkedWindow& w : found) {
    py::dict d;
    d["pid"] = w.pid;
    d["id"] = w.id;
    d["warmup_ns"] = w.warmup_ns;
    d["begin_ns"] = w.begin_ns;
    d["end_ns"] = w.end_ns;
    d["triggered"] = w.triggered;
    out.append(d);
  }
  return out;
}

}  // namespace

PYBIND11_MODULE(_ringprof_tools, m) {
  m.doc() = "ringprof's analysis library; use ringprof.torch.profile or ringprof.open instead.";
  m.def("table", &table, py::arg("paths"), py::arg("window_id") = py::none(), py::arg("group_by_args") = false,
        py::arg("thread") = "", py::arg("group_by_stack_n") = 0,
        "Per-name zone totals, as `ringprof table` computes them.");
  m.def("chrome_trace", &chrome_trace, py::arg("paths"), py::arg("out"), py::arg("window_id") = py::none(),
        "Writes a Chrome trace (JSON; gzipped when out ends in .gz).");
  m.def("read_records", &ringprof::python::read_records, py::arg("paths"), py::arg("window_id") = py::none(),
        "Every zone, sample, GPU record, memory event, step and counter, as columns.");
  m.def("windows", &windows, py::arg("paths"), "The detailed windows the files mark.");
}
