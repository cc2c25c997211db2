// module.cpp — the `_ringprof` extension: the recording API for Python.
// The pure-Python package (python/ringprof/__init__.py) is the public face;
// this module holds what must be native. Calls that wait (start, stop, flush,
// next_window) release the GIL, so other Python threads run meanwhile.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "py_frames.h"
#include "py_names.h"
#include "py_record.h"
#include "py_settings.h"
#include "py_windows.h"
#include "ringprof/ringprof.h"

namespace py = pybind11;
using namespace ringprof;

namespace {

// Warnings go to stderr as the C++ API's do: the application carries on.
void print_warnings(const std::vector<std::string>& warnings) {
  for (const auto& w : warnings) std::fprintf(stderr, "%s\n", w.c_str());
}

// Returns whether recording started, and the directory its files go to.
std::pair<bool, std::string> py_start(const std::map<std::string, std::string>& settings) {
  std::vector<std::string> warnings;
  const Config config = python::config_from_settings(settings, &warnings);
  print_warnings(warnings);
  py::gil_scoped_release release;
  return {start(config), config.dir};
}

// Names given from Python must outlive the process's recording: interned.
const char* static_name(const std::string& name) {
  const char* s = python::intern_name(name);
  return s ? s : "flow";
}

py::dict stats_dict() {
  const RecorderStats s = recorder_stats();
  py::dict d;
  d["events_written"] = s.events_written;
  d["dropped_ring"] = s.dropped_ring;
  d["dropped_io"] = s.dropped_io;
  d["batches"] = s.batches;
  d["threads_seen"] = s.threads_seen;
  d["samples_taken"] = s.samples_taken;
  d["sample_handler_ns"] = s.sample_handler_ns;
  d["samples_written"] = s.samples_written;
  d["samples_lost"] = s.samples_lost;
  d["drainer_cpu_ns"] = s.drainer_cpu_ns;
  d["writer_cpu_ns"] = s.writer_cpu_ns;
  py::list drops;
  for (const auto& t : s.thread_drops) {
    py::dict td;
    td["tid"] = t.tid;
    td["name"] = t.name;
    td["dropped_ring"] = t.dropped_ring;
    td["dropped_io"] = t.dropped_io;
    drops.append(td);
  }
  d["thread_drops"] = drops;
  return d;
}

// Test only (tests/python/test_frames.py): the calling thread's frames as the
// sampler captures them, innermost first, named as the drainer names them:
// (function, file, line, entry), or raw (code, check, instr, entry).
py::list capture_python_frames(bool raw) {
  py::list out;
  for (const auto& f : python::capture_frames_for_test()) {
    if (raw) {
      out.append(py::make_tuple(f.code, f.check, f.instr, f.entry));
      continue;
    }
    internal::FrameName n;
    if (!python::describe_frame_for_test(f, &n)) n.function = "<unknown interpreter frame>";
    out.append(py::make_tuple(n.function, n.file, n.line, f.entry));
  }
  return out;
}

// Test only: the calling thread's frames read both ways within one call,
// (guarded capture, in-place capture_self) as raw (code, check, instr).
py::tuple capture_python_frames_both_ways() {
  const auto guarded = python::capture_frames_for_test(false);
  const auto in_place = python::capture_frames_for_test(true);
  auto raw = [](const std::vector<internal::CapturedFrame>& frames) {
    py::list out;
    for (const auto& f : frames) out.append(py::make_tuple(f.code, f.check, f.instr));
    return out;
  };
  return py::make_tuple(raw(guarded), raw(in_place));
}

// Test only: one raw frame named, or None where describe refuses it; fault
// 1 or 2 is python::FrameFault's kNameChanges or kCodeDies.
py::object describe_python_frame(uint64_t code, uint32_t check, uint32_t instr, int fault) {
  internal::CapturedFrame f;
  f.code = code;
  f.check = check;
  f.instr = instr;
  internal::FrameName n;
  if (fault < 0 || fault > 2) throw py::value_error("fault is 0, 1 or 2");
  if (!python::describe_frame_for_test(f, &n, static_cast<python::FrameFault>(fault))) return py::none();
  return py::make_tuple(n.function, n.file, n.line);
}

}  // namespace

PYBIND11_MODULE(_ringprof, m) {
  m.doc() = "ringprof's native recording API; import ringprof instead.";
  if (!python::add_record_api(m.ptr())) throw py::error_already_set();
  // Python frames in CPU samples (py_frames.h): said once, at import, where
  // this interpreter's frames cannot be read.
  if (std::string why; !python::register_python_frame_hooks(&why)) {
    if (PyErr_WarnEx(PyExc_RuntimeWarning, ("ringprof: " + why).c_str(), 1) < 0) throw py::error_already_set();
  }

  m.def("_start", &py_start, py::arg("settings"));
  m.def("stop", [] {
    py::gil_scoped_release release;
    stop();
  }, "Drains every ring, writes and seals the files, stops the drainer.");
  m.def("flush", [] {
    py::gil_scoped_release release;
    flush();
  }, "Writes everything recorded so far and makes it visible.");
  m.def("is_recording", &is_recording);
  m.def(
      "_announce_thread", [] { python::name_thread_once(); },
      "Registers the calling thread with the recording (its name, so the sampler covers it from now on).");
  m.def("set_thread_name", [](const std::string& name) { python::set_user_thread_name(name); },
        "Names the calling thread in the trace (threads are named after their Python name by default).");
  m.def("set_rank", [](int32_t rank, int32_t world_size, int32_t local_rank, const std::string& job_id) {
    set_rank(rank, world_size, local_rank, job_id);
  }, py::arg("rank"), py::arg("world_size") = -1, py::arg("local_rank") = -1, py::arg("job_id") = "",
  "The process's place in a distributed job, recorded in its files (-1: unknown); overrides RANK, WORLD_SIZE, ...");
  m.def("rank_info", [] {
    const RankInfo r = ringprof::rank_info();
    py::dict d;
    d["rank"] = r.rank;
    d["world_size"] = r.world_size;
    d["local_rank"] = r.local_rank;
    d["job_id"] = r.job_id;
    d["source"] = r.source;
    return d;
  }, "The identity recorded now: rank, world_size, local_rank (-1: unknown), job_id, source.");
  m.def("_set_mode", [](const std::string& text) {
    Level mode;
    if (!parse_mode(text, &mode)) throw py::value_error("mode must be always_on, detailed or off, not " + text);
    set_mode(mode);
  });
  m.def("mode", [] { return std::string(mode_name(mode())); }, "The effective level: off, always_on or detailed.");
  m.def("_set_schedule", [](const std::string& text) {
    Schedule s;
    std::string why;
    if (!text.empty() && !parse_schedule(text, &s, &why)) throw py::value_error("schedule " + text + ": " + why);
    set_schedule(s);
  });
  m.def("_set_duty_cycle", [](const std::string& text) {
    DutyCycle d;
    std::string why;
    if (!text.empty() && !parse_duty_cycle(text, &d, &why)) throw py::value_error("duty cycle " + text + ": " + why);
    set_duty_cycle(d);
  });
  // The core's own reading of a torch.profiler schedule: the drop-in profile
  // asks it which steps end a cycle rather than redoing the arithmetic.
  m.def("_schedule_action", [](uint32_t skip_first, uint32_t wait, uint32_t warmup, uint32_t active, uint32_t repeat,
                               uint64_t step) {
    switch (schedule_action(Schedule{skip_first, wait, warmup, active, repeat}, step)) {
      case ScheduleAction::Warmup: return "warmup";
      case ScheduleAction::Record: return "record";
      case ScheduleAction::RecordAndSave: return "save";
      case ScheduleAction::None: break;
    }
    return "none";
  });
  m.def("request_window", &request_window, py::arg("steps") = 0, py::arg("duration_ns") = 0,
        "Asks for an on-demand detailed window; returns its id (0 when not recording).");
  m.def("flow_begin", [](uint64_t id, const std::optional<std::string>& name) {
    flow_begin(id, name ? static_name(*name) : nullptr);
  }, py::arg("id"), py::arg("name") = py::none());
  m.def("flow_step", [](uint64_t id) { flow_step(id); }, py::arg("id"));
  m.def("flow_end", [](uint64_t id) { flow_end(id); }, py::arg("id"));
  m.def(
      "async_begin",
      [](const std::string& name, uint64_t id) -> uint64_t {
        if (id == 0) id = new_async_id();
        return async_begin(id, std::string_view(name)) ? id : 0;
      },
      py::arg("name"), py::arg("id") = 0,
      "Begins an async span (it may end on another thread); returns its id, 0 when not recording.");
  m.def(
      "async_end",
      [](uint64_t id) {
        if (id != 0) async_end(id);
      },
      py::arg("id"));
  m.def("mark", [](const std::string& name, uint64_t value) { mark(static_name(name), value); },
        py::arg("name"), py::arg("value") = 0);
  // ringprof.torch calls these around torch.profiler (ringprof/recording.h).
  m.def("_gpu_hand_over", [](const std::string& client) {
    py::gil_scoped_release release;  // CUPTI's forced flush waits for its buffers
    return gpu_hand_over(client.c_str());
  });
  m.def("_gpu_take_back", [](const std::string& client) {
    py::gil_scoped_release release;
    return gpu_take_back(client.c_str());
  });
  m.def("recorder_stats", &stats_dict, "The recorder's counters for this session (see RecorderStats).");

  m.def("_windows_listen", &python::windows_listen);
  m.def("_next_window", [](double timeout_s) -> std::optional<uint64_t> {
    uint64_t id = 0;
    bool got;
    {
      py::gil_scoped_release release;
      got = python::next_window(timeout_s, &id);
    }
    if (!got) return std::nullopt;
    return id;
  });
  m.def("_capture_python_frames", &capture_python_frames, py::arg("raw") = false);
  m.def("_capture_python_frames_both_ways", &capture_python_frames_both_ways);
  // Whether this interpreter's frames can be read, and why not: (ok, reason).
  m.def("_python_frames", [] {
    std::string why;
    const bool ok = python::register_python_frame_hooks(&why);
    return py::make_tuple(ok, why);
  });
  m.def("_describe_python_frame", &describe_python_frame, py::arg("code"), py::arg("check"), py::arg("instr"),
        py::arg("fault") = 0);
  m.def("_windows_close", &python::windows_close);
  m.def("_windows_reopen", &python::windows_reopen);
}
