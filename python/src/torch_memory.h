// torch_memory.h — PyTorch's allocations and frees as ringprof memory events
// (ringprof.torch.profile(profile_memory=True), and the detailed level).
//
// PyTorch's allocators (the CPU allocator, CUDA's caching allocator) report
// each allocation and free to c10's profiler hook: the memory-reporting
// object that the thread's debug-info stack holds for the profiler state,
// inherited by the threads that take the thread's state (autograd's
// workers, intra-op parallel work). install() puts ringprof's on the calling
// thread's stack; it records only while ringprof's effective level is
// detailed (a window, or detailed mode), so leaving it installed costs an
// allocation one relaxed load. Each block becomes an Alloc or Free event in a
// pool named after its device ("torch:cpu", "torch:cuda:0"), on the thread
// that made it, so the tools charge it to the operator open there; PyTorch's
// own totals for the device follow as counters ("torch:cpu allocated",
// "torch:cpu reserved").
//
// torch.profiler keeps its own state in the same place: while it profiles
// on a thread, its object is above ringprof's there and gets the reports.
#pragma once

namespace ringprof::torch_operators {

// Puts ringprof's memory reporting on the calling thread (nested calls
// count); false when PyTorch refused it.
bool install_memory_reporting();
// Takes it off the calling thread again when the count reaches 0; false when
// something else was pushed above it since (it is then left in place,
// inert while ringprof is not detailed).
bool uninstall_memory_reporting();
// Whether it is installed on the calling thread.
bool memory_reporting_installed();

}  // namespace ringprof::torch_operators
