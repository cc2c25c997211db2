// py_names.h — the names and call sites Python code hands to ringprof, turned
// into the static storage the rings need.
//
// A ring slot holds a pointer to its name, read by the drainer later, so every
// name an event points at must live as long as the process: the strings and
// source locations made here are never freed (the interpreter may be gone when
// the drainer reads them at exit). Each is made once per distinct name or call
// site, and their number is capped (kMaxNames, kMaxSites); past the cap callers
// fall back to run-time names, which travel inline in the ring.
//
// Everything here runs with the GIL held; that is the only lock.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <string_view>

#include "ringprof/recording.h"

namespace ringprof::python {

inline constexpr size_t kMaxNames = 65536;
inline constexpr size_t kMaxSites = 65536;
inline constexpr size_t kMaxNamesPerSite = 16;

// A copy of `name` with static storage; the same pointer for the same text.
// Null when the table is full.
const char* intern_name(std::string_view name);

// The source location of a zone or instant named `name` (null: the code's
// qualified name) opened at instruction `lasti` of `code`: made at the first
// call from that site with that name, found again afterwards by the code
// object, the instruction and the name. Null past kMaxSites. *held tells
// whether the table keeps this very name object (and the code) alive for
// good, so that their addresses may serve as a cache key.
const SourceLocation* site_for(PyCodeObject* code, int lasti, PyObject* name, bool* held);

// The location a decorated function's zones carry: named `name` (null: the
// function's __qualname__), at the function's first line. Null on failure
// (with a Python error set only for a non-str name) or past kMaxSites.
const SourceLocation* site_for_function(PyObject* func, PyObject* name);

// The UTF-8 text of a str, or an empty view with a Python error set.
std::string_view utf8(PyObject* str);

// Names the calling thread after its Python thread (threading's name) the
// first time it records in a session: a thread's name is an event in its ring,
// so each session needs it once. Costs one load and compare otherwise.
void name_thread_slow(uint32_t session);
// set_thread_name() from Python: remembered for the thread's later sessions.
void set_user_thread_name(std::string_view name);
// The session in which the calling thread was last named (by us or by the
// user's set_thread_name, which must not be overridden).
inline uint32_t& named_session() {
  static thread_local uint32_t s = 0;
  return s;
}
inline void name_thread_once() {
  const uint32_t s = internal::g_session.load(std::memory_order_relaxed);
  if (s != named_session() && s != 0) [[unlikely]] {
    named_session() = s;
    name_thread_slow(s);
  }
}

}  // namespace ringprof::python
