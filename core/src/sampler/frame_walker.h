// Frame-pointer stack walking that never faults.
//
// The timer-signal sampler walks the interrupted thread's stack from inside a
// signal handler: RIP is the leaf, and each frame record [rbp] = caller's rbp,
// [rbp + 8] = return address. Any of those words may be garbage (code built
// without frame pointers uses rbp as a general register), so every read goes
// through a StackReader, which copies memory with process_vm_readv on our own
// pid: an unmapped address makes the system call fail instead of raising
// SIGSEGV, and no sanitizer sees a load of a wild address. Reads are served
// from a window of two pages copied at once, so a typical walk costs one or
// two system calls.
//
// Where the sampled thread's stack is known (set_direct_range), reads inside
// it are plain loads: the handler runs on that thread, whose stack cannot be
// unmapped under it.
//
// Where process_vm_readv is refused (seccomp in some container profiles), the
// reader falls back to mincore() to check that the page is mapped and then
// loads directly (uninstrumented); that is racy only against another thread
// unmapping the same page in between.
//
// Everything here is async-signal-safe: no allocation, no locks, errno is left
// as it was found.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringprof::sampler {

// Guarded reads of our own memory through a caller-provided buffer of
// kWindowBytes (the handler's buffer is allocated by the drainer per thread).
class StackReader {
 public:
  static constexpr size_t kPageBytes = 4096;
  static constexpr size_t kWindowBytes = 2 * kPageBytes;

  enum class Mode : uint8_t { ProcessVmReadv = 0, Mincore = 1 };

  StackReader(int pid, unsigned char* window, Mode mode) noexcept : pid_(pid), buf_(window), mode_(mode) {}

  // Reads the two words at addr (8-byte aligned). False when any byte of
  // [addr, addr + 16) is not readable.
  bool read_pair(uint64_t addr, uint64_t out[2]) noexcept;
  // Reads n bytes (n <= kPageBytes) at any address; false when any byte of
  // [addr, addr + n) is not readable.
  bool read(uint64_t addr, void* out, size_t n) noexcept;
  bool read_word(uint64_t addr, uint64_t* out) noexcept { return read(addr, out, sizeof *out); }
  // Reads scattered ranges (each at most kPageBytes) with one system call
  // per 64 of them, bypassing the window; how many of the first were read
  // whole. `local`/`remote` are n iovecs of scratch each.
  size_t read_many(const uint64_t* addrs, void* const* outs, const size_t* sizes, size_t n) noexcept;

  // Which mode works in this process: process_vm_readv unless refused.
  static Mode probe_mode() noexcept;

  // A range known to stay mapped while the reader is used (the sampled
  // thread's own stack, while that thread is stopped in our handler): reads
  // inside it are plain loads, without a system call.
  void set_direct_range(uint64_t lo, uint64_t hi) noexcept {
    direct_lo_ = lo;
    direct_hi_ = hi;
  }

 private:
  bool fill(uint64_t page) noexcept;

  int pid_;
  unsigned char* buf_;
  Mode mode_;
  uint64_t base_ = 0;   // address of buf_[0]
  uint64_t len_ = 0;    // readable bytes in buf_ (0: empty)
  uint64_t direct_lo_ = 0, direct_hi_ = 0;
};

// Walks frame pointers from (ip, fp), with `sp` the interrupted stack pointer.
// Writes ip, then each return address, into out[0..max) and returns how many.
// The walk ends at the first frame pointer that is null, not 8-byte aligned,
// below sp, not above the previous one (a cycle or a descent), unreadable, or
// whose return address is 0 or a kernel address. The frames before the bad
// one are kept.
size_t walk_frame_pointers(uint64_t ip, uint64_t fp, uint64_t sp, uint64_t* out, size_t max,
                           StackReader& reader) noexcept;

}  // namespace ringprof::sampler
