#include "draining/interpreter_names.h"

#include <errno.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "ringprof/internal/interpreter_frames.h"

namespace ringprof {

namespace {

// Reads our own memory through process_vm_readv: the code object may have
// been freed since the sample, and a read of it must fail, not fault.
bool read_self(void*, uint64_t addr, void* out, size_t n) noexcept {
  if (n == 0) return true;
  const int saved = errno;
  iovec local{out, n}, remote{reinterpret_cast<void*>(addr), n};
  const long got = syscall(SYS_process_vm_readv, static_cast<long>(getpid()), &local, 1ul, &remote, 1ul, 0ul);
  errno = saved;
  return got == static_cast<long>(n);
}

}  // namespace

uint32_t InterpreterNames::name(uint64_t code, uint64_t check_instr, LocationRegistry& locations) {
  const Key key{code, check_instr};
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;
  if (cache_.size() >= kMaxCached) cache_.clear();
  uint32_t id = 0;
  const internal::InterpreterFrameHooks* h = internal::interpreter_frame_hooks();
  internal::CapturedFrame f;
  f.code = code;
  f.check = static_cast<uint32_t>(check_instr >> 32);
  f.instr = static_cast<uint32_t>(check_instr);
  internal::FrameName n;
  const internal::MemoryReader mem{read_self, nullptr};
  if (h && h->describe && h->describe(mem, f, &n)) {
    ++described_;
    id = locations.for_interpreter_frame(n.function, n.file, n.line);
  } else {
    // The code object died (or changed) before the drainer got to it: say
    // so rather than name it after whatever lives at that address now.
    ++refused_;
    if (!unknown_id_) unknown_id_ = locations.for_interpreter_frame("<unknown interpreter frame>", "", 0);
    id = unknown_id_;
  }
  cache_.emplace(key, id);
  return id;
}

void InterpreterNames::convert(std::span<const uint64_t> words, LocationRegistry& locations,
                               std::vector<uint64_t>* frames, size_t max_frames) {
  frames->clear();
  for (size_t i = 0; i < words.size() && frames->size() < max_frames; ++i) {
    const uint64_t w = words[i];
    if (!(w & internal::kInterpreterFrameTag)) {
      frames->push_back(w);
      continue;
    }
    if (i + 1 >= words.size()) break;  // a torn pair: cannot happen, records are whole
    const uint64_t code = w & ~internal::kInterpreterFrameTag;
    frames->push_back(internal::kInterpreterFrameTag | name(code, words[++i], locations));
  }
}

}  // namespace ringprof
