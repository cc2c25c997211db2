// py_windows.cpp — completed windows handed from the drainer to Python (py_windows.h).
#include "py_windows.h"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <new>
#include <pthread.h>

#include "ringprof/ops.h"

namespace ringprof::python {
namespace {

struct WindowQueue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint64_t> ids;
  bool closed = false;
  bool listening = false;
};
// Never destroyed: the drainer may announce a window during exit, after
// static destructors would have run.
alignas(WindowQueue) unsigned char g_storage[sizeof(WindowQueue)];
WindowQueue* g_queue = new (g_storage) WindowQueue();

// Ids not taken within this many windows are dropped oldest first, so a
// callback thread that stopped taking them cannot grow the queue for ever.
constexpr size_t kMaxQueued = 4096;

}  // namespace

void windows_listen() {
  {
    std::lock_guard<std::mutex> lock(g_queue->mu);
    if (g_queue->listening) return;
    g_queue->listening = true;
  }
  // In a C handler, not Python's after-fork hook: the core's own child
  // handler may already have a drainer announcing windows when Python's runs.
  pthread_atfork(nullptr, nullptr, windows_after_fork_child);
  on_window_complete([](uint64_t id) {
    WindowQueue* q = g_queue;
    {
      std::lock_guard<std::mutex> lock(q->mu);
      if (q->ids.size() >= kMaxQueued) q->ids.pop_front();
      q->ids.push_back(id);
    }
    q->cv.notify_all();
  });
}

bool next_window(double timeout_s, uint64_t* id) {
  WindowQueue* q = g_queue;
  std::unique_lock<std::mutex> lock(q->mu);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  if (!q->cv.wait_until(lock, deadline, [&] { return q->closed || !q->ids.empty(); })) return false;
  if (q->closed && q->ids.empty()) return false;
  *id = q->ids.front();
  q->ids.pop_front();
  return true;
}

void windows_close() {
  {
    std::lock_guard<std::mutex> lock(g_queue->mu);
    g_queue->closed = true;
  }
  g_queue->cv.notify_all();
}

void windows_reopen() {
  std::lock_guard<std::mutex> lock(g_queue->mu);
  g_queue->closed = false;
}

void windows_after_fork_child() {
  // The core's callback stays registered in the child; only the queue is new.
  const bool listening = g_queue->listening;
  g_queue = new (g_storage) WindowQueue();
  g_queue->listening = listening;
}

}  // namespace ringprof::python
