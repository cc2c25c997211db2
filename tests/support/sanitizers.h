// Which sanitizer runtime a test binary runs under, for the few tests whose
// expectations differ there (fork children, core dumps, delayed signals).
//   RINGPROF_SANITIZED_RUNTIME: ASan or TSan (their runtimes catch fatal
//                               signals and get in the way of fork tests)
//   RINGPROF_TSAN:              TSan (it defers signals to its own hooks)
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define RINGPROF_SANITIZED_RUNTIME 1
#endif
#if __has_feature(thread_sanitizer)
#define RINGPROF_TSAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define RINGPROF_SANITIZED_RUNTIME 1
#endif
#if defined(__SANITIZE_THREAD__)
#define RINGPROF_TSAN 1
#endif
