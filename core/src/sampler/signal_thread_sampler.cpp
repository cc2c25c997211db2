#include "sampler/signal_thread_sampler.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <new>

#include "ringprof/event.h"
#include "ringprof/recording.h"
#include "ringprof/internal/interpreter_frames.h"
#include "ringprof/internal/ring.h"
#include "draining/drainer_wake.h"
#include "sampler/cpu_alarm.h"
#include "sampler/perf_thread_event.h"
#include "sampler/stack_unwinder.h"

namespace ringprof::sampler {

namespace {

constexpr uint32_t kSlots = 4096;       // threads armed at once, at most
constexpr uint32_t kRingEvents = 1024;  // 32 KiB per thread: ~15 deepest samples
constexpr size_t kMaxInterpFrames = kMaxSampleFrames;
// Perf descriptors that signal: the slot key for each, by descriptor number
// (the signal carries si_fd). A thread whose descriptor is above this is not
// sampled (EMFILE). Untouched pages of this table cost nothing.
constexpr int kMaxPerfFd = 1 << 16;
std::atomic<uint64_t> g_fd_keys[kMaxPerfFd];

// The mapping of /proc/self/maps that holds `sp`, when it is the thread's
// own stack, which lives as long as the thread: the main thread's "[stack]",
// or a mapping that also holds the thread's descriptor (glibc keeps it at the
// top of every thread stack it sets up, the caller's own included). A
// coroutine's or an alternate signal stack, which may be unmapped while the
// thread lives, is refused: samples there keep the guarded reads.
bool thread_stack_mapping(uint64_t sp, uint64_t self, uint64_t* lo, uint64_t* hi) {
  FILE* f = std::fopen("/proc/self/maps", "re");
  if (!f) return false;
  char line[512];
  bool found = false;
  while (!found && std::fgets(line, sizeof line, f)) {
    const bool whole = std::strchr(line, '\n') != nullptr;
    if (!whole) {  // an overlong line: skip its rest
      int ch;
      while ((ch = std::fgetc(f)) != EOF && ch != '\n') {
      }
    }
    unsigned long long a = 0, b = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%llx-%llx %7s", &a, &b, perms) != 3) continue;
    if (sp < a || sp >= b || perms[0] != 'r' || perms[1] != 'w') continue;
    const bool main_stack = std::strstr(line, "[stack]") != nullptr;
    if (main_stack || (self >= a && self < b)) {
      *lo = a;
      *hi = b;
      found = true;
    }
    break;  // only one mapping holds sp
  }
  std::fclose(f);
  return found;
}

// What the handler needs besides the ring, allocated by the drainer.
struct Scratch {
  unsigned char stack_window[StackReader::kWindowBytes];
  unsigned char interp_window[StackReader::kWindowBytes];
  uint64_t words[kMaxSampleWords];
  internal::CapturedFrame interp[kMaxInterpFrames];
  // The interpreter hooks' working memory: copies of up to kMaxInterpFrames
  // frames' code objects and their bookkeeping.
  alignas(16) unsigned char interp_scratch[kMaxInterpFrames * 320];
  RuleCache rules;
};

struct alignas(64) Slot {
  std::atomic<uint64_t> key{0};         // (generation << 32) | (index + 1) while armed; 0 otherwise
  std::atomic<uint32_t> busy{0};        // handlers inside this slot
  std::atomic<uint64_t> taken{0};       // written by the handler only
  std::atomic<uint64_t> missed{0};      // periods the kernel folded into one signal (timer overruns)
  std::atomic<uint64_t> handler_ns{0};  // time spent in take_sample, written by the handler only
  // The thread's stack mapping, found by the drainer from the first sample's
  // stack pointer (seen_sp) and thread descriptor (seen_self); reads inside
  // it need no system call. 0: unknown.
  std::atomic<uint64_t> seen_self{0};
  std::atomic<uint64_t> seen_sp{0};
  std::atomic<uint64_t> stack_lo{0}, stack_hi{0};
  // Set by the drainer before `key` is published; read-only while armed.
  uint32_t tid = 0;
  int pid = 0;
  StackReader::Mode mode = StackReader::Mode::ProcessVmReadv;
  Ring* ring = nullptr;
  Scratch* scratch = nullptr;
  bool owned = false;  // drainer-only: the slot belongs to a SignalThreadSampler
};

Slot g_slots[kSlots];
std::atomic<uint32_t> g_generation{0};
std::atomic<int> g_signo{0};

void record_sample(Slot& s, void* ctx, uint64_t now) noexcept;

bool read_interp(void* self, uint64_t addr, void* out, size_t n) noexcept {
  return static_cast<StackReader*>(self)->read(addr, out, n);
}

size_t read_interp_many(void* self, const internal::ReadRequest* requests, size_t n) noexcept {
  constexpr size_t kBatch = 64;
  size_t done = 0;
  while (done < n) {
    uint64_t addrs[kBatch];
    void* outs[kBatch];
    size_t sizes[kBatch];
    const size_t m = n - done < kBatch ? n - done : kBatch;
    for (size_t i = 0; i < m; ++i) {
      addrs[i] = requests[done + i].addr;
      outs[i] = requests[done + i].out;
      sizes[i] = requests[done + i].n;
    }
    const size_t got = static_cast<StackReader*>(self)->read_many(addrs, outs, sizes, m);
    done += got;
    if (got < m) break;
  }
  return done;
}

void take_sample(Slot& s, uint64_t overrun, void* ctx) noexcept {
  // CPU-time timers expire on the scheduler tick: when more than one period
  // passed, one signal comes with the others as overruns. They count as taken
  // and lost, so the accounting shows a rate above CONFIG_HZ is not reached.
  if (overrun) s.missed.store(s.missed.load(std::memory_order_relaxed) + overrun, std::memory_order_relaxed);
  s.taken.store(s.taken.load(std::memory_order_relaxed) + 1 + overrun, std::memory_order_relaxed);
  const uint64_t t0 = internal::monotonic_ns();
  record_sample(s, ctx, t0);
  s.handler_ns.store(s.handler_ns.load(std::memory_order_relaxed) + (internal::monotonic_ns() - t0),
                     std::memory_order_relaxed);
}

void record_sample(Slot& s, void* ctx, uint64_t now) noexcept {
  Ring* r = s.ring;
  Scratch& x = *s.scratch;
  const auto* uc = static_cast<const ucontext_t*>(ctx);
  UnwindInput in;
  in.pc = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RIP]);
  in.fp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RBP]);
  in.sp = static_cast<uint64_t>(uc->uc_mcontext.gregs[REG_RSP]);
  if (const internal::InterpreterFrameHooks* h = internal::interpreter_frame_hooks(); h && h->capture) {
    StackReader interp_reader(s.pid, x.interp_window, s.mode);
    internal::MemoryReader mem{read_interp, read_interp_many, &interp_reader, x.interp_scratch,
                               sizeof x.interp_scratch};
    in.interp = x.interp;
    in.interp_count = h->capture(mem, x.interp, kMaxInterpFrames);
    in.eval_begin = h->eval_begin;
    in.eval_end = h->eval_end;
  }
  StackReader reader(s.pid, x.stack_window, s.mode);
  const uint64_t hi = s.stack_hi.load(std::memory_order_acquire);
  if (hi == 0) {
    if (s.seen_sp.load(std::memory_order_relaxed) == 0) {
      s.seen_self.store(static_cast<uint64_t>(pthread_self()), std::memory_order_relaxed);
      s.seen_sp.store(in.sp, std::memory_order_release);
    }
  } else if (in.sp >= s.stack_lo.load(std::memory_order_relaxed) && in.sp < hi) {
    // On its own stack (not a coroutine's or an alternate one): the part
    // from sp up is mapped for as long as this handler runs.
    reader.set_direct_range(in.sp, hi);
  }
  const size_t n = unwind_stack(in, reader, &x.rules, x.words, kMaxSampleWords).words;
  // Full: the ring counts the drop (never grown).
  write_words_record(r, EventKind::Sample, now, x.words, n);
  drainer_wake::wake_if_idle();
}

void enter_slot(uint64_t key, uint64_t overrun, void* ctx) noexcept {
  const uint64_t index = (key & 0xffffffffu) - 1;
  if (key == 0 || index >= kSlots) return;
  Slot& s = g_slots[index];
  s.busy.fetch_add(1, std::memory_order_seq_cst);
  if (s.key.load(std::memory_order_seq_cst) == key && s.tid == static_cast<uint32_t>(syscall(SYS_gettid)))
    take_sample(s, overrun, ctx);
  s.busy.fetch_sub(1, std::memory_order_release);
}

void on_signal(int, siginfo_t* si, void* ctx) {
  const int saved = errno;
  if (si && ctx) {
    if (si->si_code == SI_TIMER) {
      const auto key = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(si->si_value.sival_ptr));
      if (key == kCpuAlarmKey)
        drainer_wake::wake_if_idle();  // the drainer's alarm (cpu_alarm.h): the application ran
      else
        enter_slot(key, si->si_overrun > 0 ? static_cast<uint64_t>(si->si_overrun) : 0, ctx);
    } else if (si->si_code == POLL_IN && si->si_fd >= 0 && si->si_fd < kMaxPerfFd) {
      enter_slot(g_fd_keys[si->si_fd].load(std::memory_order_acquire), 0, ctx);
    }
  }
  errno = saved;
}

bool ours(const struct sigaction& sa) { return (sa.sa_flags & SA_SIGINFO) && sa.sa_sigaction == on_signal; }

}  // namespace

bool sample_signal_intact(int signo) {
  struct sigaction cur;
  return signo > 0 && sigaction(signo, nullptr, &cur) == 0 && ours(cur);
}

int ensure_sample_signal(std::string* why) {
  const int known = g_signo.load(std::memory_order_relaxed);
  if (known && sample_signal_intact(known)) return known;
  // The first real-time signal from SIGRTMIN+8 on (then the lower ones) whose
  // handler is the default: a signal the application uses is never taken.
  const int lo = SIGRTMIN, hi = SIGRTMAX;
  for (int k = 0; k <= hi - lo; ++k) {
    const int sig = lo + (8 + k) % (hi - lo + 1);
    struct sigaction cur;
    if (sigaction(sig, nullptr, &cur) != 0) continue;
    if (ours(cur)) {
      g_signo.store(sig, std::memory_order_relaxed);
      return sig;
    }
    if ((cur.sa_flags & SA_SIGINFO) || cur.sa_handler != SIG_DFL) continue;
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, nullptr) != 0) continue;
    g_signo.store(sig, std::memory_order_relaxed);
    return sig;
  }
  *why = "no free real-time signal for the timer-signal sampler";
  return 0;
}

namespace {

// A task-clock counter of `tid` with no ring whose overflows signal `tid`.
int open_perf_clock(uint32_t tid, uint32_t hz, int signo, int* err) {
  perf_event_attr a;
  std::memset(&a, 0, sizeof a);
  a.size = sizeof a;
  a.type = PERF_TYPE_SOFTWARE;
  a.config = PERF_COUNT_SW_TASK_CLOCK;  // the thread's own CPU time
  a.sample_period = perf_period_ns(hz);
  a.exclude_kernel = 1;
  a.exclude_hv = 1;
  a.disabled = 1;  // enabled once the signal is routed
  // syscall() reads full registers: every argument as a long.
  const int fd = static_cast<int>(syscall(SYS_perf_event_open, &a, static_cast<long>(tid), -1l, -1l,
                                          static_cast<unsigned long>(PERF_FLAG_FD_CLOEXEC)));
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  f_owner_ex owner{F_OWNER_TID, static_cast<pid_t>(tid)};
  if (fcntl(fd, F_SETSIG, signo) != 0 || fcntl(fd, F_SETOWN_EX, &owner) != 0 ||
      fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) != 0) {
    *err = errno;
    close(fd);
    return -1;
  }
  *err = 0;
  return fd;
}

}  // namespace

int probe_perf_clock(uint32_t hz, int signo) {
  int err = 0;
  const int fd = open_perf_clock(static_cast<uint32_t>(syscall(SYS_gettid)), hz, signo, &err);
  if (fd >= 0) close(fd);
  return err;
}

std::unique_ptr<SignalThreadSampler> SignalThreadSampler::open(uint32_t tid, uint32_t hz, int signo, Clock clock,
                                                               StackReader::Mode mode, int* err) {
  uint32_t index = kSlots;
  for (uint32_t i = 0; i < kSlots; ++i) {
    if (!g_slots[i].owned && g_slots[i].busy.load(std::memory_order_acquire) == 0) {
      index = i;
      break;
    }
  }
  if (index == kSlots) {
    *err = EMFILE;
    return nullptr;
  }
  Slot& s = g_slots[index];
  Ring* ring = Ring::create(kRingEvents, tid);
  // Not value-initialized: its windows and buffers are written before they
  // are read, and zeroing 80 KiB touched 20 fresh pages per thread (a page
  // fault each, tens of microseconds on a virtual machine) at every start.
  auto* scratch = new (std::nothrow) Scratch;
  std::unique_ptr<SignalThreadSampler> t(new (std::nothrow) SignalThreadSampler());
  if (!ring || !scratch || !t) {
    if (ring) {
      Ring::release(ring);
      Ring::release(ring);
    }
    delete scratch;
    *err = ENOMEM;
    return nullptr;
  }
  s.owned = true;
  s.tid = tid;
  s.pid = static_cast<int>(getpid());
  s.mode = mode;
  s.ring = ring;
  s.scratch = scratch;
  s.taken.store(0, std::memory_order_relaxed);
  s.missed.store(0, std::memory_order_relaxed);
  s.handler_ns.store(0, std::memory_order_relaxed);
  s.seen_sp.store(0, std::memory_order_relaxed);
  s.seen_self.store(0, std::memory_order_relaxed);
  s.stack_lo.store(0, std::memory_order_relaxed);
  s.stack_hi.store(0, std::memory_order_relaxed);
  const uint64_t gen = g_generation.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint64_t key = (gen << 32) | (index + 1);
  s.key.store(key, std::memory_order_seq_cst);
  t->tid_ = tid;
  t->slot_ = index;
  t->has_slot_ = true;
  t->clock_ = clock;

  if (clock == Clock::Perf) {
    const int fd = open_perf_clock(tid, hz ? hz : 1, signo, err);
    if (fd < 0) return nullptr;  // t's destructor frees the slot
    t->fd_ = fd;
    if (fd >= kMaxPerfFd) {
      *err = EMFILE;
      return nullptr;
    }
    g_fd_keys[fd].store(key, std::memory_order_seq_cst);
    t->armed_ = true;
    if (ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) != 0) {
      *err = errno;
      return nullptr;
    }
    *err = 0;
    return t;
  }
  sigevent sev;
  std::memset(&sev, 0, sizeof sev);
  sev.sigev_notify = SIGEV_THREAD_ID;
  sev.sigev_signo = signo;
  sev.sigev_value.sival_ptr = reinterpret_cast<void*>(static_cast<uintptr_t>(key));
  sev._sigev_un._tid = static_cast<pid_t>(tid);
  // The per-thread CPU-time clock of `tid`: CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED.
  const auto cpu_clock = static_cast<clockid_t>((~static_cast<uint32_t>(tid) << 3) | 6u);
  if (timer_create(cpu_clock, &sev, &t->timer_) != 0) {
    *err = errno;
    return nullptr;
  }
  t->armed_ = true;
  if (!t->set_hz(hz ? hz : 1)) {
    *err = errno;
    return nullptr;
  }
  *err = 0;
  return t;
}

bool SignalThreadSampler::set_hz(uint32_t hz) {
  if (!armed_) {
    errno = EINVAL;
    return false;
  }
  if (clock_ == Clock::Perf) {
    if (hz == 0) return ioctl(fd_, PERF_EVENT_IOC_DISABLE, 0) == 0;
    uint64_t period = perf_period_ns(hz);
    return ioctl(fd_, PERF_EVENT_IOC_PERIOD, &period) == 0 && ioctl(fd_, PERF_EVENT_IOC_ENABLE, 0) == 0;
  }
  const uint64_t period = hz ? 1000000000ull / hz : 0;  // all zero: stopped
  itimerspec its;
  its.it_interval.tv_sec = static_cast<time_t>(period / 1000000000ull);
  its.it_interval.tv_nsec = static_cast<long>(period % 1000000000ull);
  its.it_value = its.it_interval;
  return timer_settime(timer_, 0, &its, nullptr) == 0;
}

void SignalThreadSampler::disarm() {
  Slot& s = g_slots[slot_];
  s.key.store(0, std::memory_order_seq_cst);
  if (fd_ >= 0) {
    if (fd_ < kMaxPerfFd) g_fd_keys[fd_].store(0, std::memory_order_seq_cst);
    close(fd_);
    fd_ = -1;
  }
  if (armed_ && clock_ == Clock::Timer) timer_delete(timer_);
  armed_ = false;
  // A handler that got in before the key was cleared finishes in
  // microseconds; one stopped in a debugger might not: then leak its memory
  // rather than free it under it.
  for (int i = 0; s.busy.load(std::memory_order_seq_cst) != 0; ++i) {
    if (i > 100000) {
      leaked_ = true;
      return;
    }
    sched_yield();
  }
}

SignalThreadSampler::~SignalThreadSampler() {
  if (!has_slot_) return;
  Slot& s = g_slots[slot_];
  disarm();
  if (leaked_) return;  // the slot stays owned forever
  if (s.ring) {
    Ring::release(s.ring);  // the ring starts with two references; we hold both
    Ring::release(s.ring);
  }
  delete s.scratch;
  s.ring = nullptr;
  s.scratch = nullptr;
  s.owned = false;
}

uint64_t SignalThreadSampler::handler_ns() const noexcept {
  return g_slots[slot_].handler_ns.load(std::memory_order_relaxed);
}

uint64_t SignalThreadSampler::taken() const noexcept { return g_slots[slot_].taken.load(std::memory_order_relaxed); }

void SignalThreadSampler::read(SampleVisitor& v) {
  Slot& s = g_slots[slot_];
  Ring* r = s.ring;
  if (!r) return;
  if (!stack_looked_up_) {
    if (const uint64_t sp = s.seen_sp.load(std::memory_order_acquire)) {
      stack_looked_up_ = true;
      uint64_t lo = 0, hi = 0;
      if (thread_stack_mapping(sp, s.seen_self.load(std::memory_order_relaxed), &lo, &hi)) {
        s.stack_lo.store(lo, std::memory_order_relaxed);
        s.stack_hi.store(hi, std::memory_order_release);
      }
    }
  }
  uint64_t ready = r->readable();
  uint64_t i = 0;
  while (i < ready) {
    const Event& e = r->peek(i);
    const size_t n = e.extra <= kMaxSampleWords ? e.extra : kMaxSampleWords;
    const uint32_t slots = sample_frame_slots(e.extra);
    if (i + 1 + slots > ready) break;  // cannot happen: records are published whole
    read_words_record(*r, i, words_, n);
    const uint64_t ts = e.ts;
    i += 1 + slots;
    v.on_sample(tid_, ts, std::span<const uint64_t>(words_, n));
  }
  r->consume(i);
  const uint64_t d = r->dropped() + g_slots[slot_].missed.load(std::memory_order_relaxed);
  if (d != dropped_seen_) {
    v.on_lost(tid_, d - dropped_seen_);
    dropped_seen_ = d;
  }
}

void reset_signal_slots_after_fork() noexcept {
  for (Slot& s : g_slots) {
    if (!s.owned && s.key.load(std::memory_order_relaxed) == 0) continue;  // leave untouched pages untouched
    s.key.store(0, std::memory_order_relaxed);
    s.busy.store(0, std::memory_order_relaxed);
    s.owned = false;
    s.ring = nullptr;
    s.scratch = nullptr;
  }
  for (auto& k : g_fd_keys)
    if (k.load(std::memory_order_relaxed)) k.store(0, std::memory_order_relaxed);
}

}  // namespace ringprof::sampler
