// The in-process unwinder (sampler/cfi_rules.h, unwind_index.h,
// stack_unwinder.h) on this very process: rules read from the loaded
// objects' .eh_frame_hdr, a walk from a captured context up a chain of
// functions built without frame pointers (this file is compiled
// -fomit-frame-pointer, tests/CMakeLists.txt), and garbage that must end a
// walk without a fault.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "sampler/cfi_rules.h"
#include "sampler/frame_walker.h"
#include "sampler/stack_unwinder.h"
#include "sampler/unwind_index.h"

namespace ringprof::sampler {
namespace {

std::string symbol_of(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || !info.dli_sname) return {};
  return info.dli_sname;
}

struct Captured {
  uint64_t words[kMaxSampleFrames];
  size_t n = 0;
  bool root = false;
};

__attribute__((noinline)) void capture_here(Captured* out) {
  ucontext_t uc;
  getcontext(&uc);
  UnwindInput in;
  in.pc = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RIP]);
  in.sp = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RSP]);
  in.fp = static_cast<uint64_t>(uc.uc_mcontext.gregs[REG_RBP]);
  std::vector<unsigned char> window(StackReader::kWindowBytes);
  StackReader reader(getpid(), window.data(), StackReader::probe_mode());
  RuleCache cache;
  const UnwindResult r = unwind_stack(in, reader, &cache, out->words, kMaxSampleFrames);
  out->n = r.words;
  out->root = r.reached_root;
}

}  // namespace

// Exported (the test binary is built with ENABLE_EXPORTS) so dladdr names
// them; each does work after its call, so no call is a tail call.
extern "C" __attribute__((noinline)) double rp_unwind_c(double x, Captured* out) {
  volatile double pad[5] = {x};
  capture_here(out);
  return pad[0] * 3;
}
extern "C" __attribute__((noinline)) double rp_unwind_b(double x, Captured* out) {
  volatile double pad[9] = {x};
  return rp_unwind_c(pad[0] + 1, out) * 2;
}
extern "C" __attribute__((noinline)) double rp_unwind_a(double x, Captured* out) {
  volatile double pad[17] = {x};
  return rp_unwind_b(pad[0] + 1, out) + 1;
}

namespace {

TEST(CfiRules, TableFindsRulesForLoadedCode) {
  UnwindIndex index;
  index.refresh();
  ASSERT_GT(index.modules(), 2u);  // this program, libc, the vdso at least
  UnwindView view;
  const auto entry = reinterpret_cast<uint64_t>(&rp_unwind_a);
  const UnwindModule* m = view.find(entry);
  ASSERT_NE(m, nullptr);
  // At a function's first instruction the return address was just pushed.
  FrameRule r;
  ASSERT_TRUE(find_rule(*m, entry, &r));
  EXPECT_EQ(r.cfa, FrameRule::Cfa::Sp);
  EXPECT_EQ(r.cfa_offset, 8);
  EXPECT_EQ(r.ra_offset, -8);
  EXPECT_FALSE(r.ra_undefined);
  // libc's code is found too.
  EXPECT_NE(view.find(reinterpret_cast<uint64_t>(&std::strlen)), nullptr);
  // Nothing maps the first page.
  EXPECT_EQ(view.find(0x100), nullptr);
}

TEST(CfiUnwind, WalksToTheRootThroughFunctionsWithoutFramePointers) {
  UnwindIndex index;
  index.refresh();
  Captured c;
  rp_unwind_a(1, &c);
  std::vector<std::string> names;
  for (size_t i = 0; i < c.n; ++i) names.push_back(symbol_of(c.words[i]));
  std::string all;
  for (const auto& n : names) all += (n.empty() ? "?" : n) + " ";
  // The chain in order, leaf first: capture_here is internal (no dynamic
  // symbol), then c, b, a, and on to the thread's root.
  auto pos = [&](const char* name) {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == name) return static_cast<long>(i);
    return -1l;
  };
  ASSERT_GE(pos("rp_unwind_c"), 0) << all;
  EXPECT_EQ(pos("rp_unwind_b"), pos("rp_unwind_c") + 1) << all;
  EXPECT_EQ(pos("rp_unwind_a"), pos("rp_unwind_b") + 1) << all;
  EXPECT_TRUE(c.root) << "the walk stopped before the root: " << all;
  EXPECT_GE(pos("main"), pos("rp_unwind_a")) << all;
}

TEST(CfiUnwind, GarbageEndsTheWalkWithoutAFault) {
  UnwindIndex index;
  index.refresh();
  std::mt19937_64 rng(42);
  std::vector<uint64_t> junk(4096);
  std::vector<unsigned char> window(StackReader::kWindowBytes);
  StackReader reader(getpid(), window.data(), StackReader::probe_mode());
  RuleCache cache;
  uint64_t words[kMaxSampleFrames];
  const auto code = reinterpret_cast<uint64_t>(&std::strlen);
  for (int trial = 0; trial < 20000; ++trial) {
    for (auto& w : junk) {
      // Plausible-looking words: code addresses, stack-like addresses, noise.
      const uint64_t k = rng() % 4;
      w = k == 0 ? code + rng() % 65536 : k == 1 ? reinterpret_cast<uint64_t>(junk.data()) + rng() % 32768 : rng();
    }
    UnwindInput in;
    in.pc = trial % 2 ? code + rng() % 4096 : rng();
    in.sp = reinterpret_cast<uint64_t>(junk.data()) + (rng() % 2048) * 8;
    in.fp = trial % 3 ? junk[rng() % junk.size()] : rng();
    const UnwindResult r = unwind_stack(in, reader, &cache, words, kMaxSampleFrames);
    ASSERT_LE(r.words, kMaxSampleFrames);
    ASSERT_GE(r.words, 1u);
    ASSERT_EQ(words[0], in.pc);
  }
}

TEST(CfiUnwind, InterpreterFramesReplaceTheEvaluationLoop) {
  // The evaluation loop is rp_unwind_b here: its frame is replaced by the
  // group ending at the first entry-marked frame; the rest go on top.
  UnwindIndex index;
  index.refresh();
  internal::CapturedFrame frames[3];
  frames[0] = {0x1000, 7, 2, false};
  frames[1] = {0x2000, 8, 4, true};
  frames[2] = {0x3000, 9, 6, true};
  Captured c;
  rp_unwind_a(1, &c);  // a real stack to splice into: find b's return address
  size_t at_b = c.n;
  for (size_t i = 0; i < c.n; ++i)
    if (symbol_of(c.words[i]) == "rp_unwind_b") at_b = i;
  ASSERT_LT(at_b, c.n);
  // Unwind again with b as the evaluation loop (from its entry to the
  // return address).
  UnwindInput in;
  in.pc = c.words[at_b];  // start the walk at b itself, as if it were the leaf
  in.sp = 0;              // no stack: the walk ends after the first frame
  in.fp = 0;
  in.interp = frames;
  in.interp_count = 3;
  in.eval_begin = reinterpret_cast<uint64_t>(&rp_unwind_b);
  in.eval_end = c.words[at_b] + 1;
  std::vector<unsigned char> window(StackReader::kWindowBytes);
  StackReader reader(getpid(), window.data(), StackReader::probe_mode());
  uint64_t words[16];
  const UnwindResult r = unwind_stack(in, reader, nullptr, words, 16);
  ASSERT_EQ(r.words, 6u);  // two frames for b's group, then the third on top
  EXPECT_EQ(words[0], internal::kInterpreterFrameTag | 0x1000);
  EXPECT_EQ(words[1], (uint64_t{7} << 32) | 2);
  EXPECT_EQ(words[2], internal::kInterpreterFrameTag | 0x2000);
  EXPECT_EQ(words[3], (uint64_t{8} << 32) | 4);
  EXPECT_EQ(words[4], internal::kInterpreterFrameTag | 0x3000);
  EXPECT_EQ(words[5], (uint64_t{9} << 32) | 6);
}

}  // namespace
}  // namespace ringprof::sampler
