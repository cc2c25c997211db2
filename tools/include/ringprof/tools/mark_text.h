// ringprof/tools/mark_text.h — operational marks (ringprof/ops.h) in words, for
// `ringprof info` and the Chrome trace.
#pragma once

#include <cstdint>
#include <string>

namespace ringprof {

// "window 3 begins", "level: detailed", "crash: SIGSEGV on thread 1234", …;
// an unknown mark reads "NAME = VALUE".
std::string describe_mark(const std::string& name, uint64_t value);

// "SIGSEGV", "SIGTERM", … ("signal N" for others).
std::string signal_name(int signo);

enum class MarkClass { Window, Trigger, Level, Crash, Signal, Drops, Other };
MarkClass classify_mark(const std::string& name);

}  // namespace ringprof
