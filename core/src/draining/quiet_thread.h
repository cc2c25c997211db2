// ringprof's own threads (the drainer, the writer) block every signal: the
// application's handlers run on its own threads, and SIGXFSZ turns into EFBIG
// that the sink handles.
#pragma once

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
  bool started = true;
  try {
    thread = std::thread(std::forward<F>(body));
  } catch (...) {
    started = false;
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return started;
}

}  // namespace ringprof
