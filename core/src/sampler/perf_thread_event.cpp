#include "sampler/perf_thread_event.h"

#include <errno.h>
#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ringprof/event.h"

namespace ringprof::sampler {

namespace {

// 1 metadata page + 8 data pages (32 KiB: ~30 deepest-stack samples, seconds
// of samples at 99 Hz for typical stacks). When the locked-memory allowance
// (perf_event_mlock_kb, RLIMIT_MEMLOCK) runs out, a thread gets 1 + 1.
constexpr size_t kDataPages = 8;
constexpr size_t kSmallDataPages = 1;

uint32_t max_stack() {
  static const uint32_t v = [] {
    uint32_t limit = 127;
    if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_max_stack", "re")) {
      unsigned x = 0;
      if (std::fscanf(f, "%u", &x) == 1 && x > 0) limit = x;
      std::fclose(f);
    }
    return std::min<uint32_t>(limit, kMaxSampleFrames);
  }();
  return v;
}

int open_event(uint32_t tid, uint32_t hz) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;  // the thread's own CPU time
  a.sample_period = perf_period_ns(hz);
  a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CALLCHAIN;
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.exclude_callchain_kernel = 1;
  a.sample_max_stack = static_cast<uint16_t>(max_stack());
  a.use_clockid = 1;
  a.clockid = CLOCK_MONOTONIC;
  a.watermark = 1;  // nobody polls: wake up (cheaply) only when half full
  a.wakeup_watermark = 4096;
  // syscall() reads full registers: every argument as a long.
  return static_cast<int>(syscall(SYS_perf_event_open, &a, static_cast<long>(tid), -1l, -1l,
                                  static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC)));
}

}  // namespace

bool PerfThreadEvent::set_hz(uint32_t hz) {
  if (hz == 0) return ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0) == 0;
  uint64_t period = perf_period_ns(hz);
  return ioctl(fd_, PERF_EVENT_IOC_PERIOD, &period) == 0 && ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0) == 0;
}

uint64_t perf_period_ns(uint32_t hz) { return std::max<uint64_t>(1000000000ull / std::max<uint32_t>(hz, 1), 10000); }

int probe_perf_event(uint32_t hz) {
  const int fd = open_event(static_cast<uint32_t>(syscall(SYS_gettid)), hz);
  if (fd < 0) return errno;
  close(fd);
  return 0;
}

std::unique_ptr<PerfThreadEvent> PerfThreadEvent::open(uint32_t tid, uint32_t hz, int* err) {
  const int fd = open_event(tid, hz);
  if (fd < 0) {
    *err = errno;
    return nullptr;
  }
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  void* m = MAP_FAILED;
  size_t pages = kDataPages;
  for (size_t try_pages : {kDataPages, kSmallDataPages}) {
    pages = try_pages;
    m = mmap(nullptr, (1 + pages) * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m != MAP_FAILED) break;
  }
  if (m == MAP_FAILED) {
    *err = errno;
    close(fd);
    return nullptr;
  }
  std::unique_ptr<PerfThreadEvent> e(new PerfThreadEvent());
  e->fd_ = fd;
  e->tid_ = tid;
  e->map_ = static_cast<unsigned char*>(m);
  e->map_bytes_ = (1 + pages) * page;
  e->data_ = e->map_ + page;
  e->data_size_ = pages * page;
  return e;
}

PerfThreadEvent::~PerfThreadEvent() {
  if (map_) munmap(map_, map_bytes_);
  if (fd_ >= 0) close(fd_);
}

uint64_t PerfThreadEvent::read(SampleVisitor& v, std::vector<unsigned char>& scratch) {
  auto* meta = reinterpret_cast<perf_event_mmap_page*>(map_);
  const uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
  uint64_t tail = meta->data_tail;
  uint64_t taken = 0;
  if (scratch.size() < 65536) scratch.resize(65536);
  while (tail + sizeof(perf_event_header) <= head) {
    // Copy the record out (it may wrap around the end of the data area).
    auto copy = [&](uint64_t pos, unsigned char* dst, size_t n) {
      const size_t off = static_cast<size_t>(pos % data_size_);
      const size_t first = std::min<size_t>(n, data_size_ - off);
      std::memcpy(dst, data_ + off, first);
      if (first < n) std::memcpy(dst + first, data_, n - first);
    };
    perf_event_header h;
    copy(tail, reinterpret_cast<unsigned char*>(&h), sizeof h);
    if (h.size < sizeof h || tail + h.size > head) break;
    unsigned char* rec = scratch.data();
    copy(tail, rec, h.size);
    const unsigned char* p = rec + sizeof h;
    const unsigned char* end = rec + h.size;
    if (h.type == PERF_RECORD_SAMPLE && end - p >= 24) {
      uint32_t pid_tid[2];
      uint64_t time, nr;
      std::memcpy(pid_tid, p, 8);
      std::memcpy(&time, p + 8, 8);
      std::memcpy(&nr, p + 16, 8);
      p += 24;
      nr = std::min<uint64_t>(nr, static_cast<uint64_t>(end - p) / 8);
      frames_.clear();
      for (uint64_t i = 0; i < nr && frames_.size() < kMaxSampleFrames; ++i) {
        uint64_t ip;
        std::memcpy(&ip, p + i * 8, 8);
        if (ip >= static_cast<uint64_t>(PERF_CONTEXT_MAX)) continue;  // PERF_CONTEXT_USER and other markers
        frames_.push_back(ip);
      }
      ++taken;
      v.on_sample(tid_, time, frames_);
    } else if (h.type == PERF_RECORD_LOST && end - p >= 16) {
      uint64_t lost;
      std::memcpy(&lost, p + 8, 8);
      taken += lost;
      v.on_lost(tid_, lost);
    }
    tail += h.size;
  }
  __atomic_store_n(&meta->data_tail, tail, __ATOMIC_RELEASE);
  return taken;
}

}  // namespace ringprof::sampler
