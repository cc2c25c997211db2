#include "sampler/frame_walker.h"

#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>

namespace ringprof::sampler {

namespace {

// The largest user-space address on x86-64 (47-bit canonical, or 56-bit with
// 5-level paging); anything above is a kernel address or garbage.
constexpr uint64_t kUserTop = 1ull << 56;

// An uninstrumented 16-byte load: the page was checked with mincore().
__attribute__((no_sanitize("address", "thread", "undefined"))) void load_pair(uint64_t addr, uint64_t out[2]) noexcept {
  const volatile uint64_t* p = reinterpret_cast<const volatile uint64_t*>(addr);
  out[0] = p[0];
  out[1] = p[1];
}

// The same for n bytes.
__attribute__((no_sanitize("address", "thread", "undefined"))) void load_bytes(uint64_t addr, void* out,
                                                                               size_t n) noexcept {
  if (n == 8 && (addr & 7) == 0) {  // the unwinder's common case: one aligned word
    const uint64_t v = *reinterpret_cast<const volatile uint64_t*>(addr);
    std::memcpy(out, &v, 8);
    return;
  }
  const volatile unsigned char* p = reinterpret_cast<const volatile unsigned char*>(addr);
  auto* o = static_cast<unsigned char*>(out);
  for (size_t i = 0; i < n; ++i) o[i] = p[i];
}

// syscall() is variadic and reads every argument as a full register: pass
// unsigned long counts, never int literals whose upper halves are undefined.
long read_self(int pid, iovec* local, iovec* remote, unsigned long remote_count) noexcept {
  return syscall(SYS_process_vm_readv, static_cast<long>(pid), local, 1ul, remote, remote_count, 0ul);
}

bool page_mapped(uint64_t page) noexcept {
  unsigned char vec = 0;
  return syscall(SYS_mincore, reinterpret_cast<void*>(page), static_cast<unsigned long>(StackReader::kPageBytes),
                 &vec) == 0;
}

}  // namespace

StackReader::Mode StackReader::probe_mode() noexcept {
  const int saved = errno;
  uint64_t src[2] = {1, 2}, dst[2] = {0, 0};
  iovec local{dst, sizeof dst}, remote{src, sizeof src};
  const long n = read_self(getpid(), &local, &remote, 1);
  errno = saved;
  return n == static_cast<long>(sizeof dst) && dst[1] == 2 ? Mode::ProcessVmReadv : Mode::Mincore;
}

bool StackReader::fill(uint64_t page) noexcept {
  len_ = 0;
  base_ = page;
  if (mode_ == Mode::Mincore) return page_mapped(page);
  // Two iovecs of one page each: when the second page is unmapped the kernel
  // stops there and we still get the first.
  iovec local{buf_, kWindowBytes};
  iovec remote[2] = {{reinterpret_cast<void*>(page), kPageBytes},
                     {reinterpret_cast<void*>(page + kPageBytes), kPageBytes}};
  const long n = read_self(pid_, &local, remote, 2);
  if (n <= 0) return false;
  len_ = static_cast<uint64_t>(n);
  return true;
}

bool StackReader::read_pair(uint64_t addr, uint64_t out[2]) noexcept {
  if (addr >= kUserTop - 16) return false;
  if (addr >= direct_lo_ && addr + 16 <= direct_hi_) {
    load_pair(addr, out);
    return true;
  }
  if (mode_ == Mode::Mincore) {
    const uint64_t first = addr & ~uint64_t{kPageBytes - 1}, last = (addr + 15) & ~uint64_t{kPageBytes - 1};
    if (!page_mapped(first) || (last != first && !page_mapped(last))) return false;
    load_pair(addr, out);
    return true;
  }
  if (len_ == 0 || addr < base_ || addr + 16 > base_ + len_) {
    if (!fill(addr & ~uint64_t{kPageBytes - 1})) return false;
    if (addr + 16 > base_ + len_) return false;
  }
  std::memcpy(out, buf_ + (addr - base_), 16);
  return true;
}

bool StackReader::read(uint64_t addr, void* out, size_t n) noexcept {
  if (n == 0) return true;
  if (n > kPageBytes || addr >= kUserTop - n) return false;
  if (addr >= direct_lo_ && addr + n <= direct_hi_) {
    load_bytes(addr, out, n);
    return true;
  }
  if (mode_ == Mode::Mincore) {
    const uint64_t first = addr & ~uint64_t{kPageBytes - 1}, last = (addr + n - 1) & ~uint64_t{kPageBytes - 1};
    if (!page_mapped(first) || (last != first && !page_mapped(last))) return false;
    load_bytes(addr, out, n);
    return true;
  }
  if (len_ == 0 || addr < base_ || addr + n > base_ + len_) {
    if (!fill(addr & ~uint64_t{kPageBytes - 1})) return false;
    if (addr + n > base_ + len_) return false;
  }
  std::memcpy(out, buf_ + (addr - base_), n);
  return true;
}

size_t StackReader::read_many(const uint64_t* addrs, void* const* outs, const size_t* sizes, size_t n) noexcept {
  if (mode_ == Mode::Mincore) {
    size_t i = 0;
    while (i < n && read(addrs[i], outs[i], sizes[i])) ++i;
    return i;
  }
  constexpr size_t kBatch = 64;
  size_t done = 0;
  while (done < n) {
    const size_t m = n - done < kBatch ? n - done : kBatch;
    iovec local[kBatch], remote[kBatch];
    size_t want = 0;
    for (size_t i = 0; i < m; ++i) {
      if (addrs[done + i] >= kUserTop - sizes[done + i]) return done + i;
      local[i] = {outs[done + i], sizes[done + i]};
      remote[i] = {reinterpret_cast<void*>(addrs[done + i]), sizes[done + i]};
      want += sizes[done + i];
    }
    const long got = syscall(SYS_process_vm_readv, static_cast<long>(pid_), local, static_cast<unsigned long>(m),
                             remote, static_cast<unsigned long>(m), 0ul);
    if (got < 0) return done;
    if (static_cast<size_t>(got) == want) {
      done += m;
      continue;
    }
    // The kernel stops at the first range it cannot read: count the whole
    // ones before it.
    size_t left = static_cast<size_t>(got);
    for (size_t i = 0; i < m && left >= sizes[done + i]; ++i) {
      left -= sizes[done + i];
      ++done;
    }
    return done;
  }
  return done;
}

size_t walk_frame_pointers(uint64_t ip, uint64_t fp, uint64_t sp, uint64_t* out, size_t max,
                           StackReader& reader) noexcept {
  if (max == 0) return 0;
  const int saved = errno;
  size_t n = 0;
  out[n++] = ip;
  uint64_t prev = 0;
  while (n < max) {
    if (fp == 0 || (fp & 7) != 0 || fp < sp || fp <= prev) break;
    uint64_t rec[2];
    if (!reader.read_pair(fp, rec)) break;
    const uint64_t ret = rec[1];
    if (ret == 0 || ret >= kUserTop) break;
    out[n++] = ret;
    prev = fp;
    fp = rec[0];
  }
  errno = saved;
  return n;
}

}  // namespace ringprof::sampler
