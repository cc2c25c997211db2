// ringprof's own threads (the drainer, the writer) block every signal: the
// application's handlers run on its own threads, and SIGXFSZ turns into EFBIG
// that the sink handles.
//
// They also start on the CPU of the thread that creates them, then take that
// thread's CPU set: a thread whose first run wakes an idle virtual CPU is
// charged for that wake-up (0.4-0.9 ms measured on a 2-vCPU VM, against
// 0.03 ms on the creator's CPU), which was a third of an idle recording's
// cost. The creator waits for the new thread or sleeps soon after, so
// starting there delays nothing.
#pragma once

#include <sched.h>
#include <signal.h>

#include <thread>
#include <utility>

namespace ringprof {

// Starts `body` on `thread` with every signal blocked. False when the thread
// could not be created.
template <typename F>
bool start_quiet_thread(std::thread& thread, F&& body) noexcept {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);  // the new thread inherits the mask
  // Here only for the start: the new thread inherits the one-CPU set and
  // gives itself the creator's set back first thing.
  cpu_set_t allowed, here;
  bool pinned = false;
  if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
    const int cpu = sched_getcpu();
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_ISSET(cpu, &allowed)) {
      CPU_ZERO(&here);
      CPU_SET(cpu, &here);
      pinned = sched_setaffinity(0, sizeof here, &here) == 0;
    }
  }
  bool started = true;
  try {
    thread = std::thread([pinned, allowed, body = std::forward<F>(body)]() mutable {
      if (pinned) sched_setaffinity(0, sizeof allowed, &allowed);
      body();
    });
  } catch (...) {
    started = false;
  }
  if (pinned) sched_setaffinity(0, sizeof allowed, &allowed);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

}  // namespace ringprof
