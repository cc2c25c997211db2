// ringprof/crash.h — what the crash handler hands a sink.
//
// On SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGABRT the core's handler stops the
// drainer at a safe point, then asks the sink (Sink::write_crash) to store
// whatever is still in memory: the drainer's unwritten batch and the unread
// part of every live ring. Everything here is read inside a signal handler:
// no allocation, no lock, no stdio; names are plain C strings that the
// recording path already pointed to (static SourceLocations, static strings)
// or bytes inside the rings. The sink encodes them itself (the core knows no
// format) into a buffer it prepared in advance and write(2)s them.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringprof/event.h"

namespace ringprof {

struct CrashInfo {
  int signo = 0;
  int code = 0;                // siginfo si_code
  uint32_t tid = 0;            // faulting thread (kernel tid)
  uint32_t thread_index = 0;   // its recorder index (0: it never recorded)
  uint64_t fault_address = 0;  // si_addr for faults, 0 otherwise
  uint64_t ts_ns = 0;          // CLOCK_MONOTONIC ns when the handler ran
};

// One event, its name resolved to strings that stay valid during the call.
struct CrashEvent {
  uint64_t ts_ns = 0;
  EventKind kind = EventKind::None;
  uint32_t thread_index = 0;
  uint64_t value = 0;          // p1 for kinds with a value
  // The name (kinds with a location): `key` identifies it for de-duplication
  // (the SourceLocation or string address; null for a name copied from the
  // ring, which is not de-duplicated).
  const void* key = nullptr;
  const char* name = nullptr;
  size_t name_len = 0;
  const char* function = nullptr;  // NUL-terminated or null
  const char* file = nullptr;
  uint32_t line = 0;
};

struct CrashThread {
  uint32_t index = 0;
  uint32_t tid = 0;
  const char* name = nullptr;
  size_t name_len = 0;
  bool name_from_rename = false;  // set_thread_name() seen in the ring: newer than any file holds
};

// Implemented by the core. Iterating twice gives the same sequence (the
// writer sizes the frame first, then writes it). Async-signal-safe.
class CrashEventSource {
 public:
  using ThreadFn = void (*)(void* ctx, const CrashThread& t);
  using EventFn = void (*)(void* ctx, const CrashEvent& e);
  virtual void for_each_thread(ThreadFn fn, void* ctx) const noexcept = 0;
  virtual void for_each_event(EventFn fn, void* ctx) const noexcept = 0;

 protected:
  ~CrashEventSource() = default;
};

}  // namespace ringprof
