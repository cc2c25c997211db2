// What one sample's stack walk costs in the signal handler, by method, on
// the same stack: 32 frames of a recursive function (this file keeps frame
// pointers, so every method can walk it), captured once, walked again and
// again.
//
// BM_Walk/0: frame pointers (the walk before call-frame information)
// BM_Walk/1: call-frame information, rules looked up in .eh_frame_hdr
//            every time (a thread's first samples, or a cold cache)
// BM_Walk/2: call-frame information through the per-thread rule cache
//            (a steady workload)
// Modes 0-2 read the stack through process_vm_readv (a thread's first
// samples, before the drainer has found its stack's mapping); modes 3-5 are
// the same walks reading the thread's own stack directly, as the handler
// does once the mapping is known.
// Run with --benchmark_enable_random_interleaving.
#include <benchmark/benchmark.h>
#include <pthread.h>
#include <ucontext.h>
#include <unistd.h>

#include <vector>

#include "bench_main.h"
#include "sampler/frame_walker.h"
#include "sampler/stack_unwinder.h"
#include "sampler/unwind_index.h"

namespace {

using namespace ringprof::sampler;

constexpr int kDepth = 32;

__attribute__((noinline)) void at_depth(int depth, benchmark::State& state) {
  volatile int guard = depth;
  if (depth > 0) {
    at_depth(depth - 1, state);
    guard = guard + 1;
    return;
  }
  ucontext_t uc;
  getcontext(&uc);
  const uint64_t pc = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RIP]);
  const uint64_t sp = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RSP]);
  const uint64_t fp = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RBP]);
  const auto mode = state.range(0) % 3;
  const bool direct = state.range(0) >= 3;
  pthread_attr_t attr;
  void* stack_addr = nullptr;
  size_t stack_size = 0;
  pthread_getattr_np(pthread_self(), &attr);
  pthread_attr_getstack(&attr, &stack_addr, &stack_size);
  pthread_attr_destroy(&attr);
  const uint64_t stack_hi = reinterpret_cast<uint64_t>(stack_addr) + stack_size;
  UnwindIndex index;
  index.refresh();
  std::vector<unsigned char> window(StackReader::kWindowBytes);
  auto cache = std::make_unique<RuleCache>();
  uint64_t out[256];
  size_t frames = 0;
  for (auto _ : state) {
    StackReader reader(getpid(), window.data(), StackReader::Mode::ProcessVmReadv);
    if (direct) reader.set_direct_range(sp, stack_hi);
    if (mode == 0) {
      frames = walk_frame_pointers(pc, fp, sp, out, 256, reader);
    } else {
      UnwindInput in;
      in.pc = pc;
      in.sp = sp;
      in.fp = fp;
      if (mode == 1) cache->generation = ~0ull;  // forces the cache empty
      frames = unwind_stack(in, reader, cache.get(), out, 256).words;
    }
    benchmark::DoNotOptimize(out[frames - 1]);
  }
  state.counters["frames"] = static_cast<double>(frames);
}

void BM_Walk(benchmark::State& state) { at_depth(kDepth, state); }
BENCHMARK(BM_Walk)->DenseRange(0, 5)->ArgName("fp0_cold1_warm2_direct_fp3_cold4_warm5");

}  // namespace
