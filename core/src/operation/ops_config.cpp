// RINGPROF_MODE, RINGPROF_SCHEDULE, RINGPROF_DUTY_CYCLE, RINGPROF_FORK,
// RINGPROF_CRASH_FLUSH, RINGPROF_SIGNAL_FLUSH, RINGPROF_TRIGGER_POLL_MS.
// Same rule as config.cpp: a bad value keeps the default and says so once.
//
// The core cannot use the tools' time parser (tools/ depends on the core, not
// the other way round), so the duty cycle's period is read by the small
// integer-with-unit parser below; it accepts the same units (ns us ms s m h).
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ringprof/ops.h"

namespace ringprof {
namespace {

bool parse_uint(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 18) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

bool parse_period_ns(std::string_view text, uint64_t* out) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  uint64_t n = 0;
  if (!parse_uint(text.substr(0, digits), &n)) return false;
  const std::string_view unit = text.substr(digits);
  uint64_t scale = 0;
  if (unit.empty() || unit == "s") scale = 1000000000ull;
  else if (unit == "ms") scale = 1000000ull;
  else if (unit == "us") scale = 1000ull;
  else if (unit == "ns") scale = 1;
  else if (unit == "m") scale = 60000000000ull;
  else if (unit == "h") scale = 3600000000000ull;
  else return false;
  if (n > UINT64_MAX / scale) return false;
  *out = n * scale;
  return true;
}

// prefix + text + suffix. Built in a fresh string: GCC 12 at -O3 warns
// (-Wrestrict, a false positive) about "literal" + std::string and about
// assigning into a string it cannot prove distinct from the text.
std::string quoted(std::string_view prefix, std::string_view text, std::string_view suffix) {
  std::string out;
  out.reserve(prefix.size() + text.size() + suffix.size());
  out.append(prefix).append(text).append(suffix);
  return out;
}

// Calls fn(key, value) for each "key=value" of a comma-separated list; false
// (with *error) at the first malformed item or when fn refuses one.
template <typename Fn>
bool for_each_pair(std::string_view text, std::string* error, Fn fn) {
  while (!text.empty()) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string_view::npos) {
      if (error) *error = quoted("'", item, "' is not key=value");
      return false;
    }
    if (!fn(item.substr(0, eq), item.substr(eq + 1))) {
      if (error) *error = quoted("bad item '", item, "'");
      return false;
    }
  }
  return true;
}

}  // namespace

bool parse_schedule(std::string_view text, Schedule* out, std::string* error) {
  Schedule s;
  const bool ok = for_each_pair(text, error, [&](std::string_view k, std::string_view v) {
    uint64_t n = 0;
    if (!parse_uint(v, &n) || n > UINT32_MAX) return false;
    const auto u = static_cast<uint32_t>(n);
    if (k == "skip_first") s.skip_first = u;
    else if (k == "wait") s.wait = u;
    else if (k == "warmup") s.warmup = u;
    else if (k == "active") s.active = u;
    else if (k == "repeat") s.repeat = u;
    else return false;
    return true;
  });
  if (!ok) return false;
  if (s.active == 0) {
    if (error) *error = "active must be at least 1";
    return false;
  }
  *out = s;
  return true;
}

bool parse_duty_cycle(std::string_view text, DutyCycle* out, std::string* error) {
  DutyCycle d;
  const bool ok = for_each_pair(text, error, [&](std::string_view k, std::string_view v) {
    if (k == "steps") {
      uint64_t n = 0;
      if (!parse_uint(v, &n) || n == 0 || n > UINT32_MAX) return false;
      d.steps = static_cast<uint32_t>(n);
      return true;
    }
    if (k == "every") return parse_period_ns(v, &d.every_ns) && d.every_ns > 0;
    return false;
  });
  if (!ok) return false;
  if (d.steps == 0 || d.every_ns == 0) {
    if (error) *error = "needs steps=N and every=PERIOD";
    return false;
  }
  *out = d;
  return true;
}

void ops_config_from_env(OpsConfig& ops, std::vector<std::string>* warnings) {
  ops_config_from(ops, [](const char* name) -> const char* { return std::getenv(name); }, warnings);
}

void ops_config_from(OpsConfig& ops, const SettingLookup& lookup, std::vector<std::string>* warnings) {
  auto get = [&](const char* name) -> const char* {
    const char* v = lookup(name);
    return (v && *v) ? v : nullptr;
  };
  auto warn = [&](const char* name, const char* value, const std::string& expected) {
    const std::string line = std::string("ringprof: warning: ignoring ") + name + "=" + value + " (expected " +
                             expected + "); using the default";
    if (warnings)
      warnings->push_back(line);
    else
      std::fprintf(stderr, "%s\n", line.c_str());
  };
  auto boolean = [&](const char* name, bool* field) {
    const char* v = get(name);
    if (!v) return;
    const std::string s = v;
    if (s == "1" || s == "true" || s == "yes" || s == "on") *field = true;
    else if (s == "0" || s == "false" || s == "no" || s == "off") *field = false;
    else warn(name, v, "1 or 0");
  };
  if (const char* v = get("RINGPROF_MODE")) {
    if (!parse_mode(v, &ops.mode)) warn("RINGPROF_MODE", v, "always_on, detailed or off");
  }
  if (const char* v = get("RINGPROF_SCHEDULE")) {
    std::string why;
    if (!parse_schedule(v, &ops.schedule, &why))
      warn("RINGPROF_SCHEDULE", v, "skip_first=N,wait=N,warmup=N,active=N,repeat=N: " + why);
  }
  if (const char* v = get("RINGPROF_DUTY_CYCLE")) {
    std::string why;
    if (!parse_duty_cycle(v, &ops.duty_cycle, &why)) warn("RINGPROF_DUTY_CYCLE", v, "steps=N,every=10m: " + why);
  }
  if (const char* v = get("RINGPROF_FORK")) {
    const std::string s = v;
    if (s == "off") ops.fork = ForkPolicy::Off;
    else if (s == "record") ops.fork = ForkPolicy::Record;
    else warn("RINGPROF_FORK", v, "off or record");
  }
  boolean("RINGPROF_CRASH_FLUSH", &ops.crash_flush);
  boolean("RINGPROF_SIGNAL_FLUSH", &ops.signal_flush);
  if (const char* v = get("RINGPROF_TRIGGER_POLL_MS")) {
    uint64_t n = 0;
    if (parse_uint(v, &n) && n <= 60000) ops.trigger_poll_ms = static_cast<uint32_t>(n);
    else warn("RINGPROF_TRIGGER_POLL_MS", v, "an integer from 0 to 60000");
  }
}

}  // namespace ringprof
