// RINGPROF_* environment variables over the built-in defaults. A bad value
// must never stop the application: it keeps the default and says so once.
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringprof/config.h"

namespace ringprof {

bool parse_byte_size(const std::string& text, uint64_t* out) {
  if (text.empty()) return false;
  size_t i = 0;
  uint64_t v = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    const uint64_t d = static_cast<uint64_t>(text[i] - '0');
    if (v > (~0ull - d) / 10) return false;
    v = v * 10 + d;
    ++i;
  }
  if (i == 0) return false;
  std::string unit = text.substr(i);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b')) unit.pop_back();
  if (unit.size() == 2 && (unit[1] == 'i' || unit[1] == 'I')) unit.pop_back();  // "MiB"
  unsigned shift = 0;
  if (unit.empty()) shift = 0;
  else if (unit == "K" || unit == "k") shift = 10;
  else if (unit == "M" || unit == "m") shift = 20;
  else if (unit == "G" || unit == "g") shift = 30;
  else if (unit == "T" || unit == "t") shift = 40;
  else return false;
  if (shift && v > (~0ull >> shift)) return false;
  *out = v << shift;
  return true;
}

namespace {

struct EnvReader {
  const SettingLookup& lookup;
  std::vector<std::string>* warnings;

  const char* get(const char* name) const {
    const char* v = lookup(name);
    return (v && *v) ? v : nullptr;
  }
  void warn(const char* name, const char* value, const char* expected) const {
    std::string line = std::string("ringprof: warning: ignoring ") + name + "=" + value + " (expected " +
                       expected + "); using the default";
    if (warnings)
      warnings->push_back(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  }
  void bytes(const char* name, uint64_t* field, uint64_t min, uint64_t max) const {
    const char* v = get(name);
    if (!v) return;
    uint64_t parsed = 0;
    if (!parse_byte_size(v, &parsed) || parsed < min || parsed > max) {
      warn(name, v, "a size such as 64M, between the allowed bounds");
      return;
    }
    *field = parsed;
  }
  template <typename T>
  void integer(const char* name, T* field, long long min, long long max) const {
    const char* v = get(name);
    if (!v) return;
    char* end = nullptr;
    errno = 0;
    const long long parsed = std::strtoll(v, &end, 10);
    if (errno || !end || *end || parsed < min || parsed > max) {
      warn(name, v, ("an integer from " + std::to_string(min) + " to " + std::to_string(max)).c_str());
      return;
    }
    *field = static_cast<T>(parsed);
  }
  // True when the variable is set to a valid value (now in *field).
  bool boolean(const char* name, bool* field) const {
    const char* v = get(name);
    if (!v) return false;
    if (internal::parse_switch(v, field)) return true;
    warn(name, v, "1 or 0");
    return false;
  }
};

}  // namespace

static const char* setting_from_env(const char* name) { return std::getenv(name); }

Config config_from_env(std::vector<std::string>* warnings) { return config_from(setting_from_env, warnings); }

Config config_from(const SettingLookup& lookup, std::vector<std::string>* warnings) {
  Config c;
  EnvReader env{lookup, warnings};
  if (const char* d = env.get("RINGPROF_DIR")) c.dir = d;
  env.bytes("RINGPROF_MAX_BYTES", &c.max_bytes, 64ull << 10, ~0ull);
  env.bytes("RINGPROF_FILE_BYTES", &c.file_bytes, 16ull << 10, ~0ull);
  uint64_t ring = c.ring_bytes;
  env.bytes("RINGPROF_RING_BYTES", &ring, 4ull << 10, 1ull << 30);
  c.ring_bytes = static_cast<uint32_t>(ring);
  uint64_t ring_max = c.ring_max_bytes;
  env.bytes("RINGPROF_RING_MAX_BYTES", &ring_max, 4ull << 10, 1ull << 30);
  c.ring_max_bytes = static_cast<uint32_t>(ring_max);
  env.integer("RINGPROF_ZSTD_LEVEL", &c.zstd_level, 1, 19);
  if (const char* s = env.get("RINGPROF_SINK")) {
    if (std::string(s) == "file" || std::string(s) == "null")
      c.sink = s;
    else
      env.warn("RINGPROF_SINK", s, "file or null");
  }
  if (const char* s = env.get("RINGPROF_CLOCK")) {
    const std::string v = s;
    if (v == "auto") c.clock = ClockChoice::Auto;
    else if (v == "tsc") c.clock = ClockChoice::Tsc;
    else if (v == "monotonic") c.clock = ClockChoice::Monotonic;
    else env.warn("RINGPROF_CLOCK", s, "auto, tsc or monotonic");
  }
  if (const char* h = env.get("RINGPROF_HOSTNAME")) c.hostname = h;
  env.integer("RINGPROF_CLOCK_SKEW_NS", &c.clock_skew_ns, -kMaxClockSkewNs, kMaxClockSkewNs);
  env.integer("RINGPROF_IO_RETRY_MS", &c.io_retry_ms, 0, 3600000);
  env.integer("RINGPROF_DRAIN_MS", &c.drain_interval_ms, 1, 1000);
  env.integer("RINGPROF_FLUSH_MS", &c.flush_interval_ms, 1, 600000);
  env.integer("RINGPROF_BATCH_EVENTS", &c.batch_events, 1024, 1 << 22);
  env.boolean("RINGPROF_FLUSH_AT_EXIT", &c.flush_at_exit);
  env.integer("RINGPROF_STALL_MS", &c.stall_ms, 1, 600000);
  // Asked for explicitly only by a value that says yes: garbage was warned
  // about and left the default, which must not warn of a missing driver.
  c.gpu_requested = env.boolean("RINGPROF_GPU", &c.gpu) && c.gpu;
  env.bytes("RINGPROF_CUPTI_BUFFER_SIZE", &c.cupti_buffer_bytes, 64ull << 10, 256ull << 20);
  env.integer("RINGPROF_CUPTI_BUFFERS", &c.cupti_buffers, 1, 1024);
  if (const char* lib = env.get("RINGPROF_CUPTI_LIB")) c.cupti_library = lib;
  env.integer("RINGPROF_SAMPLE_HZ", &c.sample_hz, 0, 10000);
  env.integer("RINGPROF_DETAILED_SAMPLE_HZ", &c.detailed_sample_hz, 0, 10000);
  env.bytes("RINGPROF_HEAP_INTERVAL", &c.heap_interval, 0, 1ull << 40);
  if (const char* s = env.get("RINGPROF_SAMPLER")) {
    const std::string v = s;
    if (v == "auto") c.sampler = SamplerChoice::Auto;
    else if (v == "perf") c.sampler = SamplerChoice::Perf;
    else if (v == "timer") c.sampler = SamplerChoice::Timer;
    else if (v == "perf_signal")
      c.sampler = SamplerChoice::PerfSignal;
    else
      env.warn("RINGPROF_SAMPLER", s, "auto, perf_signal, perf or timer");
  }
  ops_config_from(c.ops, lookup, warnings);  // RINGPROF_MODE, _SCHEDULE, _DUTY_CYCLE, _FORK, ... (ops_config.cpp)
  return c;
}

namespace internal {
bool parse_switch(const char* text, bool* out) noexcept {
  if (!text) return false;
  const std::string_view s = text;
  if (s == "1" || s == "true" || s == "yes" || s == "on") {
    *out = true;
    return true;
  }
  if (s == "0" || s == "false" || s == "no" || s == "off") {
    *out = false;
    return true;
  }
  return false;
}
}  // namespace internal

}  // namespace ringprof
