// torch_module.cpp — the `_ringprof_torch` extension: the operator capture of
// torch_capture.h for Python. The package registers the callbacks only while
// ringprof records (its start and stop listeners), so a process that is not
// recording pays nothing.
#include <pybind11/pybind11.h>

#include <pybind11/stl.h>

#include "ringprof/heap.h"
#include "torch_capture.h"
#include "torch_collectives.h"
#include "torch_memory.h"

namespace py = pybind11;

PYBIND11_MODULE(_ringprof_torch, m) {
  using namespace ringprof::torch_operators;
  m.doc() = "PyTorch operators as ringprof zones; import ringprof.torch instead.";
  m.def("_set_level", &set_level);
  m.def("_level", &level);
  m.def("_enable", &enable, "Registers the callbacks (while recording).");
  m.def("_disable", &disable, "Removes them.");
  m.def("_enabled", &enabled);
  m.def("_sync", &ringprof::torch_operators::sync);
  m.def("_set_sampling", &set_sampling);
  m.def("_sampling", &sampling);
  m.def("_registered_probability", &registered_probability);
  m.def("_set_record_shapes", &set_record_shapes);
  m.def("_record_shapes", &record_shapes);
  m.def("_recording_inputs", &recording_inputs);
  m.def("_set_record_stacks", &set_record_stacks);
  m.def("_record_stacks", &record_stacks);
  m.def("_recording_stacks", &recording_stacks);
  m.def("_set_record_flops", &set_record_flops);
  m.def("_record_flops", &record_flops);
  m.def("_install_memory_reporting", &install_memory_reporting,
        "Puts ringprof's memory reporting on this thread (torch_memory.h).");
  m.def("_uninstall_memory_reporting", &uninstall_memory_reporting);
  m.def("_yield_memory_reporting", &yield_memory_reporting);
  m.def("_resume_memory_reporting", &resume_memory_reporting);
  m.def("_memory_reporting_installed", &memory_reporting_installed);
  m.def("_install_heap_reporting", &install_heap_reporting, py::arg("cpu") = false,
        "PyTorch's allocations on this thread into the sampled heap profile (torch_memory.h).");
  m.def("_uninstall_heap_reporting", &uninstall_heap_reporting);
  m.def("_heap_reporting_installed", &heap_reporting_installed);
  m.def("_heap_sampling_interval", &ringprof::heap_sampling_interval);
  m.def("_note_collective", &note_collective, py::arg("group"), py::arg("seq"), py::arg("tensors"),
        "Notes a torch.distributed call about to be enqueued (torch_collectives.h).");
  m.def("_collective_notes", &collective_notes);
  m.def("_forget_collective", &forget_collective);
  m.def("_set_untold_group", &set_untold_group);
  m.def("_untold_group", &untold_group);
  m.def("_noop_callback", &set_noop_callback, py::arg("on"), py::arg("probability") = 1.0,
        "Benchmarks only: a global RecordFunction callback that does nothing.");
}
