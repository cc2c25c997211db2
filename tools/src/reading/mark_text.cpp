#include "ringprof/tools/mark_text.h"

#include <signal.h>

#include "ringprof/ops.h"
#include "ringprof/internal/ring.h"

namespace ringprof {

std::string signal_name(int signo) {
  switch (signo) {
    case SIGSEGV: return "SIGSEGV";
    case SIGBUS: return "SIGBUS";
    case SIGILL: return "SIGILL";
    case SIGFPE: return "SIGFPE";
    case SIGABRT: return "SIGABRT";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    default: return "signal " + std::to_string(signo);
  }
}

MarkClass classify_mark(const std::string& name) {
  if (name == kMarkWindowBegin || name == kMarkWindowEnd || name == kMarkWindowWarmup) return MarkClass::Window;
  if (name == kMarkTrigger) return MarkClass::Trigger;
  if (name == kMarkMode) return MarkClass::Level;
  if (name == kMarkCrash) return MarkClass::Crash;
  if (name == kMarkSignal) return MarkClass::Signal;
  if (name == kMarkDropsBegin || name == kMarkDropsEnd) return MarkClass::Drops;
  return MarkClass::Other;
}

std::string describe_mark(const std::string& name, uint64_t value) {
  const std::string n = std::to_string(value);
  if (name == kMarkWindowBegin) return "window " + n + " begins";
  if (name == kMarkWindowEnd) return "window " + n + " ends";
  if (name == kMarkWindowWarmup) return "window " + n + " warmup";
  if (name == kMarkTrigger) return "trigger: window " + n + " requested";
  if (name == kMarkMode)
    return std::string("level: ") + (value <= 2 ? mode_name(static_cast<Level>(value)) : n.c_str());
  if (name == kMarkCrash)
    return "crash: " + signal_name(static_cast<int>(value & 0xffffffffu)) + " on thread " + std::to_string(value >> 32);
  if (name == kMarkSignal) return signal_name(static_cast<int>(value)) + ": files flushed, signal re-raised";
  if (name == kMarkDropsBegin) return n + " events dropped from here (ring full)";
  if (name == kMarkDropsEnd) return n + " events dropped until here (ring full)";
  return name + " = " + n;
}

}  // namespace ringprof
