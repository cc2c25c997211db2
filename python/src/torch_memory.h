// torch_memory.h — PyTorch's allocations and frees as ringprof memory events
// (ringprof.torch.profile(profile_memory=True), and the detailed level).
//
// PyTorch's allocators (the CPU allocator, CUDA's caching allocator) report
// each allocation and free to c10's profiler hook: the object the thread's
// debug-info stack holds in the profiler's slot, inherited by the threads
// that take the thread's state (autograd's workers, at::launch and
// TorchScript forks; not at::parallel_for's workers). install() puts
// ringprof's there, a profiler state PyTorch reads as disabled. It records
// only while ringprof's effective level is detailed; PyTorch's CPU allocator
// pays for reporting (a lock and a size table per block) for as long as it
// is installed. Each block becomes an Alloc or Free event in a pool named
// after its device ("torch:cpu", "torch:cuda:0"), on the thread that made
// it, so the tools charge it to the operator open there; the device
// allocators' totals follow as counters ("torch:cuda:0 allocated",
// "torch:cuda:0 reserved").
//
// torch.profiler keeps its own state in the same slot: while it profiles on
// the thread, install() refuses. When torch.profiler starts where ringprof's
// is installed, ringprof's yields (yield_memory_reporting, called by the
// wrappers of torch's profiler functions, _cupti_handover.py) and comes back
// when torch.profiler stops: left in place, it would make torch.profiler
// refuse to start ("Profiler is already enabled on this thread"), and
// PyTorch 2.x's Kineto would stay half-prepared for the rest of the process.
#pragma once

namespace ringprof::torch_operators {

// Puts ringprof's memory reporting on the calling thread (nested calls
// count); false when another profiler holds the slot.
bool install_memory_reporting();
// Takes it off the calling thread again when the count reaches 0; false when
// something else was pushed above it since (it is then left in place,
// inert while ringprof is not detailed).
bool uninstall_memory_reporting();
// Whether it is installed on the calling thread.
bool memory_reporting_installed();
// Takes it off the calling thread for another profiler, keeping its install
// count; true when it was installed (and on top of the slot).
bool yield_memory_reporting();
// Puts back what yield_memory_reporting() took off, unless the blocks that
// installed it ended meanwhile; true when it is installed again.
bool resume_memory_reporting();

}  // namespace ringprof::torch_operators
