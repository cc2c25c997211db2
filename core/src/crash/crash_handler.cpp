// Fatal-signal flush and SIGTERM/SIGINT flush.
//
// Fatal signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT): the handler
//   1. lets one thread in (a second crashing thread waits for the first,
//      which ends the process, at most 15 s; a fault inside the handler
//      itself is fatal at once: every signal is blocked while it runs, and
//      the kernel kills a thread whose synchronous fault signal is blocked);
//   2. wakes the drainer and asks it to park at a safe point (at most 1 s;
//      not when the drainer itself crashed) and takes its unwritten batch;
//      then lets the writer thread write the batches it has queued, for as
//      long as it gets through them (a queue that has not moved for 300 ms,
//      or 3 s in all, is left), and holds it idle (at most 300 ms more; not
//      when the writer crashed). A writer that cannot be held (stuck in a
//      write) keeps the file: no crash segment then;
//   3. hands the batch and the unread part of every live ring of the session
//      to the sink's async-signal-safe write_crash(), with a ringprof.crash
//      mark naming the signal and the faulting thread;
//   4. hands the signal on: to the handler installed before ours, or to the
//      default action. A fault raised by the kernel is left to happen again
//      when the instruction re-executes (same si_addr in the core dump); a
//      sent signal (abort(), kill) is re-raised on this thread. Either way the
//      process dies as it would have: same signal, same core dump.
// Only async-signal-safe calls are made: sigaction, nanosleep, clock_gettime,
// syscall, getpid, raise/tgkill, write (in the sink); no allocation, no lock.
//
// SIGTERM/SIGINT, installed only where the application left the default
// action: the handler only records which signal came; the drainer sees it
// within one round, flushes and seals through the normal path, then
// termination_finish() restores the default action and re-sends the signal.
// A second SIGTERM/SIGINT before that, or one while not recording, takes the
// default action at once.
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

#include "crash/crash_source.h"
#include "crash/crash_state.h"
#include "draining/drainer_wake.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"

namespace ringprof::crash {
namespace {

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kTermSignals[] = {SIGTERM, SIGINT};
constexpr int kMaxSignal = 65;
// How long the handler waits for the other threads (step 2 above). The
// process is dying; a second more is cheap next to losing the last batches,
// and a thread that is truly stuck still cannot hold the exit up for long.
constexpr int kParkMs = 1000;
constexpr int kWriterStallMs = 300;
constexpr int kWriterBacklogMs = 3000;
// A second crashing thread waits for the first this long at most: all of the
// waits above, and 10 s for writing the crash segment (up to 4096 rings).
constexpr uint64_t kSecondThreadWaitMs = kParkMs + kWriterBacklogMs + 2 * kWriterStallMs + 10'000;

struct sigaction g_previous[kMaxSignal];
constinit std::atomic<bool> g_installed_fatal{false};
constinit std::atomic<bool> g_installed_term{false};
constinit std::atomic<uint32_t> g_owner{0};      // tid of the thread flushing a crash
constinit std::atomic<int> g_term_signal{0};

uint32_t current_tid() noexcept { return static_cast<uint32_t>(syscall(SYS_gettid)); }

void sleep_ms(int ms) noexcept {
  timespec ts{0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void set_default(int sig) noexcept {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
}

// Hands the signal to whoever had it before us.
void chain(int sig, siginfo_t* info, void* context) noexcept {
  const struct sigaction& prev = g_previous[sig];
  if ((prev.sa_flags & SA_SIGINFO) && prev.sa_sigaction != nullptr) {
    prev.sa_sigaction(sig, info, context);
    return;
  }
  if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
    return;
  }
  if (prev.sa_handler == SIG_IGN && (info == nullptr || info->si_code <= 0)) return;  // ignored, as before
  set_default(sig);
  // A fault the kernel raised comes back when the instruction re-executes;
  // anything sent (abort(), kill, raise) must be sent again. It stays pending
  // while this handler runs (every signal is blocked) and takes the default
  // action the moment the handler returns.
  const bool kernel_fault = info != nullptr && info->si_code > 0 && sig != SIGABRT;
  if (!kernel_fault) syscall(SYS_tgkill, getpid(), current_tid(), sig);
}

void flush_crash(int sig, siginfo_t* info, uint32_t tid) noexcept {
  Sink* sink = current_sink();
  // A crash right after start(): the drainer is still opening its session.
  // Give it a moment (bounded: it may need a lock the crashed thread holds).
  for (int i = 0; sink == nullptr && session_expected() && i < 300; ++i) {
    sleep_ms(1);
    sink = current_sink();
  }
  if (sink == nullptr) return;
  begin_crash();
  PendingBatch pending;
  bool parked = false;
  if (static_cast<pid_t>(tid) != drainer_tid()) {  // a crashed drainer never parks
    drainer_wake::wake();  // it may sleep for up to RINGPROF_DRAIN_MS between rounds
    parked = wait_for_park(kParkMs, &pending);
  }
  // The writer empties its queue into the files, then stays off the sink.
  // The crash segment goes into the file the writer writes: without the
  // sink to itself (a write stuck on a slow disk), the handler writes none.
  // (A writer that crashed itself is stopped here, between or inside a call.)
  const bool writer_crashed = static_cast<pid_t>(tid) == writer_tid();
  const bool drainer_crashed = static_cast<pid_t>(tid) == drainer_tid();
  const bool writer_held =
      !writer_crashed && hold_writer(kWriterStallMs, kWriterBacklogMs, parked || drainer_crashed);
  if (!writer_crashed && !writer_held) {
    end_crash(false);
    return;
  }
  CrashInfo ci;
  ci.signo = sig;
  ci.code = info ? info->si_code : 0;
  ci.tid = tid;
  const Ring* own = internal::t_slot.ring;
  ci.thread_index = (own != nullptr && own->session == current_session()) ? own->thread_index : 0;
  ci.fault_address = (info && sig != SIGABRT) ? reinterpret_cast<uint64_t>(info->si_addr) : 0;
  ci.ts_ns = internal::monotonic_ns();
  LiveCrashSource& source = LiveCrashSource::snapshot(ci, parked ? &pending : nullptr, current_session());
  const bool stored = sink->write_crash(ci, source);
  // The rings' slots now live in the file: free them, in case a previous
  // handler recovers and the process goes on (only with the drainer parked:
  // otherwise it may be reading them).
  if (stored && parked) source.consume_rings();
  if (writer_held) release_writer();
  end_crash(stored && parked);
}

void fatal_handler(int sig, siginfo_t* info, void* context) {
  const int saved_errno = errno;
  const uint32_t tid = current_tid();
  uint32_t expected = 0;
  if (!g_owner.compare_exchange_strong(expected, tid, std::memory_order_acq_rel)) {
    if (expected != tid) {
      // Another thread is flushing; it will end the process. Wait for it
      // (bounded: it may itself be stuck), then take our own signal's course.
      const uint64_t deadline = now_ms() + kSecondThreadWaitMs;
      while (g_owner.load(std::memory_order_acquire) != 0 && now_ms() < deadline) sleep_ms(1);
    }
    chain(sig, info, context);
    errno = saved_errno;
    return;
  }
  flush_crash(sig, info, tid);
  chain(sig, info, context);
  // Only reached when the signal was not fatal after all (a previous handler
  // recovered, or a default-ignored signal): recording goes on.
  g_owner.store(0, std::memory_order_release);
  errno = saved_errno;
}

void term_handler(int sig) {
  const int saved_errno = errno;
  int expected = 0;
  const bool first = g_term_signal.compare_exchange_strong(expected, sig, std::memory_order_acq_rel);
  if (!first || current_sink() == nullptr) {
    // Not recording, or asked twice: no more waiting.
    set_default(sig);
    raise(sig);
  }
  // The drainer may be sleeping a backed-off idle interval: it finishes like
  // stop() as soon as it looks (a futex wake, async-signal-safe).
  drainer_wake::wake();
  errno = saved_errno;
}

void install(int sig, void (*action)(int, siginfo_t*, void*), void (*plain)(int), bool only_if_default) noexcept {
  struct sigaction current {};
  if (sigaction(sig, nullptr, &current) != 0) return;
  if (only_if_default && ((current.sa_flags & SA_SIGINFO) || current.sa_handler != SIG_DFL)) return;
  struct sigaction ours {};
  sigfillset(&ours.sa_mask);  // nothing interrupts the flush; SIGXFSZ becomes EFBIG
  if (action) {
    ours.sa_sigaction = action;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
  } else {
    ours.sa_handler = plain;
    ours.sa_flags = SA_RESTART;
  }
  g_previous[sig] = current;
  sigaction(sig, &ours, nullptr);
}

}  // namespace

void install_handlers(bool crash_flush, bool signal_flush) noexcept {
  if (crash_flush && !g_installed_fatal.exchange(true)) {
    for (int sig : kFatalSignals) install(sig, fatal_handler, nullptr, false);
  }
  if (signal_flush && !g_installed_term.exchange(true)) {
    for (int sig : kTermSignals) install(sig, nullptr, term_handler, true);
  }
}

int termination_signal() noexcept { return g_term_signal.load(std::memory_order_acquire); }

void termination_finish() noexcept {
  const int sig = g_term_signal.load(std::memory_order_acquire);
  if (sig == 0) return;
  set_default(sig);
  kill(getpid(), sig);  // process-directed: an application thread takes it (the drainer blocks all)
}

}  // namespace ringprof::crash
