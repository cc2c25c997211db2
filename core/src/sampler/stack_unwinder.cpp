#include "sampler/stack_unwinder.h"

#include <errno.h>

#include "sampler/unwind_index.h"

namespace ringprof::sampler {

namespace {

constexpr uint64_t kUserTop = 1ull << 56;
constexpr size_t kMaxSteps = 1024;

// The rule for pc, through the thread's cache.
bool rule_for(const UnwindView& view, RuleCache* cache, uint64_t pc, FrameRule* out) noexcept {
  RuleCache::Entry* e = nullptr;
  if (cache) {
    if (cache->generation != view.generation()) {
      for (auto& x : cache->entries) x.pc = 0;
      cache->generation = view.generation();
    }
    e = &cache->entries[(pc ^ (pc >> 9) ^ (pc >> 17)) & (RuleCache::kEntries - 1)];
    if (e->pc == pc) {
      *out = e->rule;
      return e->known;
    }
  }
  const UnwindModule* m = view.find(pc);
  const bool known = m && find_rule(*m, pc, out);
  if (e) {
    e->pc = pc;
    e->known = known;
    if (known) e->rule = *out;
  }
  return known;
}

}  // namespace

UnwindResult unwind_stack(const UnwindInput& in, StackReader& stack, RuleCache* cache, uint64_t* out,
                          size_t max_words) noexcept {
  const int saved = errno;
  UnwindResult r;
  UnwindView view;
  size_t next_interp = 0;
  auto emit_interp_group = [&] {
    while (next_interp < in.interp_count && r.words + 2 <= max_words) {
      const internal::CapturedFrame& f = in.interp[next_interp++];
      internal::interpreter_frame_words(f, out + r.words);
      r.words += 2;
      if (f.entry) break;
    }
  };
  uint64_t pc = in.pc, sp = in.sp, fp = in.fp;
  for (size_t step = 0; step < kMaxSteps && r.words < max_words; ++step) {
    if (next_interp < in.interp_count && pc >= in.eval_begin && pc < in.eval_end)
      emit_interp_group();
    else
      out[r.words++] = pc;
    // A return address points after its call: look up the call itself.
    const uint64_t lookup = step == 0 ? pc : pc - 1;
    FrameRule rule;
    uint64_t ra = 0, cfa = 0;
    if (rule_for(view, cache, lookup, &rule)) {
      if (rule.ra_undefined) {
        r.reached_root = true;
        break;
      }
      switch (rule.cfa) {
        case FrameRule::Cfa::Sp: cfa = sp + static_cast<int64_t>(rule.cfa_offset); break;
        case FrameRule::Cfa::Fp: cfa = fp + static_cast<int64_t>(rule.cfa_offset); break;
        case FrameRule::Cfa::Plt: cfa = sp + 8 + ((pc & 15) >= static_cast<uint64_t>(rule.cfa_offset) ? 8 : 0); break;
      }
      if (!stack.read_word(cfa + static_cast<int64_t>(rule.ra_offset), &ra)) break;
      if (rule.fp_saved && !stack.read_word(cfa + static_cast<int64_t>(rule.fp_offset), &fp)) break;
    } else {
      // No call-frame information (JIT code, hand-written assembly): trust
      // the frame pointer if it looks like one.
      if (fp == 0 || (fp & 7) != 0 || fp < sp) break;
      uint64_t rec[2];
      if (!stack.read_pair(fp, rec)) break;
      cfa = fp + 16;
      ra = rec[1];
      fp = rec[0];
    }
    // The stack grows down: each caller's frame lies above its callee's.
    if (ra == 0 || ra >= kUserTop || cfa <= sp) break;
    pc = ra;
    sp = cfa;
  }
  // Interpreter frames whose native runs were not found go on top.
  while (next_interp < in.interp_count && r.words + 2 <= max_words) emit_interp_group();
  errno = saved;
  return r;
}

}  // namespace ringprof::sampler
