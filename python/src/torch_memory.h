// torch_memory.h — PyTorch's allocations and frees as ringprof memory events
// (ringprof.torch.profile(profile_memory=True), detailed windows) and as the
// sampled heap profile (always on while recording).
//
// PyTorch's allocators (the CPU allocator, CUDA's caching allocator) report
// each allocation and free to c10's profiler hook: the object the thread's
// debug-info stack holds in the profiler's slot, inherited by the threads
// that take the thread's state (autograd's workers, at::launch and
// TorchScript forks; not at::parallel_for's workers). ringprof puts its own
// there, a profiler state PyTorch reads as disabled, for two kinds of user:
// - exact (install_memory_reporting): each block becomes an Alloc or Free
//   event while ringprof's effective level is detailed, in a pool named
//   after its device ("torch:cpu", "torch:cuda:0"), on the thread that made
//   it, so the tools charge it to the operator open there; the device
//   allocators' totals follow as counters ("torch:cuda:0 allocated",
//   "torch:cuda:0 reserved");
// - heap (install_heap_reporting): each block goes to ringprof/heap.h's
//   sampler in the same pools, at every level while recording: the device
//   allocators' (CUDA's caching allocator reports every block to whatever
//   is in the slot), and the CPU allocator's only when asked (cpu = true).
// PyTorch's CPU allocator reports only to a profiler that asks for it, and
// then pays a global lock and a size table per block, and logs a warning
// when it frees a block allocated before: while a profile_memory user holds
// the slot, or the heap profile with cpu = true.
//
// torch.profiler keeps its own state in the same slot: while it profiles on
// the thread, installing refuses. When torch.profiler starts where ringprof's
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
// The heap profile's user on the calling thread (one, not counted; again
// with another `cpu` changes it); false when another profiler holds the slot.
bool install_heap_reporting(bool cpu);
void uninstall_heap_reporting();
bool heap_reporting_installed();
// Takes it off the calling thread for another profiler, keeping its users;
// true when a profile_memory user was among them (worth a line to the user).
bool yield_memory_reporting();
// Puts back what yield_memory_reporting() took off, unless every user of it
// ended meanwhile; true when it is installed again.
bool resume_memory_reporting();

}  // namespace ringprof::torch_operators
