// Interpreter frames in CPU samples: the seam between the sampler (which
// knows nothing of any interpreter) and code compiled against an
// interpreter's own headers (the Python package registers CPython's).
//
// How a sample gets them:
//   1. The sample signal lands on a thread. The handler unwinds the native
//      stack, then calls `capture`, which reads this thread's interpreter
//      frames (innermost first) through the guarded reader it is given. It
//      runs inside a signal handler: no allocation, no lock, no call into
//      the interpreter, every read through `mem` (a frame may be half built).
//   2. The handler merges them into the native stack: each native frame whose
//      address lies in [eval_begin, eval_end) (one run of the interpreter's
//      evaluation loop) is replaced by the group of interpreter frames that run
//      was evaluating (the frames up to and including the next one marked
//      `entry`). Groups left over go above the last native frame.
//   3. The drainer turns each (code, check, instr) into a location (function,
//      file, line) with `describe`, cached, and stores the location in the
//      stack (see kInterpreterFrameTag), so a file names each frame once.
//
// Code objects die and their addresses are reused: `check` is a fingerprint
// of the code object read at sample time (for CPython: its name, file and
// first line objects); `describe` reads the object again and must refuse when
// the fingerprint no longer matches, and the frame is then named
// "<unknown interpreter frame>" rather than after whatever lives there now.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "ringprof/sink.h"

namespace ringprof::internal {

// One read of a batch: `n` bytes at `addr` into `out`.
struct ReadRequest {
  uint64_t addr = 0;
  void* out = nullptr;
  size_t n = 0;
};

// Guarded reads of this process's memory (process_vm_readv, so an unmapped
// address fails instead of faulting). Async-signal-safe.
struct MemoryReader {
  bool (*read_fn)(void* self, uint64_t addr, void* out, size_t n) noexcept = nullptr;
  // A batch in as few system calls as it can (one process_vm_readv with an
  // iovec each); how many of the first requests were read whole. Optional.
  size_t (*read_many_fn)(void* self, const ReadRequest* requests, size_t n) noexcept = nullptr;
  void* self = nullptr;
  // Working memory `capture` may use (in the handler: the thread's own).
  unsigned char* scratch = nullptr;
  size_t scratch_bytes = 0;

  bool read(uint64_t addr, void* out, size_t n) const noexcept { return read_fn(self, addr, out, n); }
  template <class T>
  bool read(uint64_t addr, T* out) const noexcept {
    return read_fn(self, addr, out, sizeof(T));
  }
  size_t read_many(const ReadRequest* requests, size_t n) const noexcept {
    if (read_many_fn) return read_many_fn(self, requests, n);
    size_t i = 0;
    while (i < n && read(requests[i].addr, requests[i].out, requests[i].n)) ++i;
    return i;
  }
};

struct CapturedFrame {
  uint64_t code = 0;   // the code object's address (non-zero, below 2^56)
  uint32_t check = 0;  // fingerprint of the code object at sample time
  uint32_t instr = 0;  // instruction offset in the code object (bytes), for the line
  bool entry = false;  // the outermost frame of one run of the evaluation loop
};

struct FrameName {
  std::string function;  // qualified name ("Model.forward")
  std::string file;      // source file as the interpreter knows it
  uint32_t line = 0;     // 0 when unknown
};

struct InterpreterFrameHooks {
  const char* name = "";    // "CPython 3.11", stated in warnings and docs
  uint64_t eval_begin = 0;  // native address range of the evaluation loop
  uint64_t eval_end = 0;
  // Signal handler, on the sampled thread: its frames, innermost first.
  size_t (*capture)(const MemoryReader& mem, CapturedFrame* out, size_t max) noexcept = nullptr;
  // Drainer thread: names a captured frame; false when the code object is
  // gone or no longer the one sampled.
  bool (*describe)(const MemoryReader& mem, const CapturedFrame& frame, FrameName* out) = nullptr;
  // Optional. On the calling thread, outside any signal handler: its own
  // frames, innermost first, read in place (record_zone_stack() below). The
  // same frames `capture` would give there, without its guarded copies.
  size_t (*capture_self)(CapturedFrame* out, size_t max) noexcept = nullptr;
};

// Registers the hooks (the object must live for the rest of the process), or
// unregisters with nullptr. Takes effect at the next sample.
void set_interpreter_frame_hooks(const InterpreterFrameHooks* hooks) noexcept;
const InterpreterFrameHooks* interpreter_frame_hooks() noexcept;

// The calling thread's interpreter frames now, as the stack of the innermost
// zone it has open (a ZoneStack record after the zone's ZoneBegin): what an
// operator's with_stack records. Not in a signal handler: on the thread
// itself, between two calls, where its frame chain is whole and stays put
// while it is read (no other thread changes it), so reads are plain loads.
// False, recording nothing, when no hooks are registered, the thread runs no
// interpreter code, recording is off or the ring is full.
bool record_zone_stack() noexcept;

// In a stack as stored (StackTrace::frames), an interpreter frame is
// kInterpreterFrameTag | location id (ringprof/sink.h).
using ringprof::kInterpreterFrameTag;

// A captured frame as the two words a stack record carries before the
// drainer names it (stack_unwinder.h): kInterpreterFrameTag | code, then
// check << 32 | instr.
inline void interpreter_frame_words(const CapturedFrame& f, uint64_t* out) noexcept {
  out[0] = kInterpreterFrameTag | f.code;
  out[1] = (uint64_t{f.check} << 32) | f.instr;
}

}  // namespace ringprof::internal
