// ringprof/level.h — the detail level: what a process records now.
//
//   Off        nothing is recorded (the drainer keeps running, so a trigger or
//              a schedule can still open a detailed window);
//   AlwaysOn   the cheap level; Detailed adds RINGPROF_ZONE_DETAIL zones and
//              what the sources that follow the level add (ringprof/ops.h).
// The effective level is the base level (RINGPROF_MODE, set_mode()) raised to
// Detailed while a window is open. Small on purpose: instrumented code that
// asks detailed() includes this, not the operations API.
#pragma once

#include <atomic>
#include <cstdint>
#include <string_view>

namespace ringprof {

enum class Level : uint8_t { Off = 0, AlwaysOn = 1, Detailed = 2 };
using Mode = Level;  // the name before 0.2, kept so existing code builds

// "off", "always_on", "detailed".
const char* mode_name(Level m) noexcept;
bool parse_mode(std::string_view text, Level* out);

// Sets the base level. Lock-free for the caller's thread apart from a short
// spin shared with other level changes; records a ringprof.mode mark when the
// effective level changes. Takes effect while recording (start() sets the
// base level from Config::ops.mode).
void set_mode(Level m) noexcept;
// The effective level (Off while not recording).
Level mode() noexcept;

namespace internal {
// The effective level, for the hot path of detailed-only instrumentation.
extern std::atomic<uint8_t> g_effective_mode;
}  // namespace internal

// True while the effective level is Detailed.
inline bool detailed() noexcept {
  return internal::g_effective_mode.load(std::memory_order_relaxed) == static_cast<uint8_t>(Level::Detailed);
}

}  // namespace ringprof
