#include "ringprof/tools/time_range.h"

#include <time.h>

#include <charconv>
#include <cctype>

namespace ringprof {

namespace {

struct Unit {
  const char* suffix;
  uint64_t ns;
};
// Longest suffixes first so "ms" is not read as "m" followed by junk.
constexpr Unit kUnits[] = {
    {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000ull}, {"m", 60000000000ull}, {"h", 3600000000000ull}};

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
  size_t digits_end = 0;
  while (digits_end < text.size() &&
         (std::isdigit(static_cast<unsigned char>(text[digits_end])) || text[digits_end] == '.'))
    ++digits_end;
  const std::string_view number = text.substr(0, digits_end);
  const std::string_view suffix = text.substr(digits_end);

  uint64_t unit_ns = 0;
  if (suffix.empty()) {
    unit_ns = 1000000000ull;  // a bare number is seconds
  } else {
    for (const Unit& u : kUnits)
      if (suffix == u.suffix) unit_ns = u.ns;
    if (unit_ns == 0) return std::nullopt;
  }

  const size_t dot = number.find('.');
  const std::string_view whole = number.substr(0, dot);
  const std::string_view frac = dot == std::string_view::npos ? std::string_view{} : number.substr(dot + 1);
  if (whole.empty() && frac.empty()) return std::nullopt;
  if (frac.find('.') != std::string_view::npos) return std::nullopt;
  if (dot != std::string_view::npos && frac.empty()) return std::nullopt;  // "2." is a typo

  uint64_t total = 0;
  for (char c : whole) {
    if (mul_overflows(total, 10, &total) || add_overflows(total, static_cast<uint64_t>(c - '0'), &total))
      return std::nullopt;
  }
  if (mul_overflows(total, unit_ns, &total)) return std::nullopt;

  // The fraction: each digit is worth unit_ns / 10^k; it must come out whole.
  uint64_t scale = unit_ns;
  for (char c : frac) {
    const uint64_t d = static_cast<uint64_t>(c - '0');
    if (scale % 10 != 0) {
      if (d != 0) return std::nullopt;  // finer than a nanosecond
      continue;
    }
    scale /= 10;
    if (add_overflows(total, d * scale, &total)) return std::nullopt;
  }
  return total;
}

TimeRange resolve_range(const RangeSpec& spec, uint64_t trace_first_ns, uint64_t trace_last_ns,
                        int64_t realtime_offset_ns) {
  TimeRange w;
  // A moment → CLOCK_MONOTONIC ns (saturating at the ends of the range).
  auto monotonic = [&](const TimePoint& p) -> uint64_t {
    if (!p.wall) {
      uint64_t t;
      return add_overflows(trace_first_ns, p.ns, &t) ? UINT64_MAX : t;
    }
    const int64_t m = static_cast<int64_t>(p.ns) - realtime_offset_ns;
    return m < 0 ? 0 : static_cast<uint64_t>(m);
  };
  if (spec.around) {
    const uint64_t centre = monotonic(*spec.around);
    const uint64_t half = spec.around_width_ns / 2;
    w.begin_ns = centre > half ? centre - half : 0;
    uint64_t e;
    w.end_ns = add_overflows(centre, spec.around_width_ns - half, &e) ? UINT64_MAX : e;
    return w;
  }
  if (spec.from_wall_ns) w.begin_ns = monotonic(TimePoint{true, *spec.from_wall_ns});
  if (spec.to_wall_ns) w.end_ns = monotonic(TimePoint{true, *spec.to_wall_ns});
  if (spec.last_ns) {
    w.begin_ns = trace_last_ns > *spec.last_ns ? trace_last_ns - *spec.last_ns : 0;
    return w;
  }
  if (spec.from_ns) {
    uint64_t b;
    w.begin_ns = add_overflows(trace_first_ns, *spec.from_ns, &b) ? UINT64_MAX : b;
  }
  if (spec.to_ns) {
    uint64_t e;
    w.end_ns = add_overflows(trace_first_ns, *spec.to_ns, &e) ? UINT64_MAX : e;
  }
  return w;
}

void append_us(std::string& out, uint64_t ns) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, ns / 1000);
  out.append(buf, r.ptr);
  const unsigned frac = static_cast<unsigned>(ns % 1000);
  const char tail[4] = {'.', static_cast<char>('0' + frac / 100), static_cast<char>('0' + frac / 10 % 10),
                        static_cast<char>('0' + frac % 10)};
  out.append(tail, 4);
}

namespace {

// Reads exactly `n` digits at `*p`; advances.
bool digits(std::string_view& t, size_t n, int* out) {
  if (t.size() < n) return false;
  int v = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(t[i]))) return false;
    v = v * 10 + (t[i] - '0');
  }
  *out = v;
  t.remove_prefix(n);
  return true;
}
bool eat(std::string_view& t, char c) {
  if (t.empty() || t[0] != c) return false;
  t.remove_prefix(1);
  return true;
}

// "HH:MM[:SS[.fff…]]" into *tm's time fields and nanoseconds.
bool parse_clock_time(std::string_view& t, struct tm* tm, uint64_t* ns) {
  int h, m, s = 0;
  if (!digits(t, 2, &h) || !eat(t, ':') || !digits(t, 2, &m)) return false;
  if (eat(t, ':')) {
    if (!digits(t, 2, &s)) return false;
    if (eat(t, '.')) {
      uint64_t scale = 100000000;
      size_t n = 0;
      while (n < t.size() && std::isdigit(static_cast<unsigned char>(t[n]))) {
        if (scale == 0) return false;
        *ns += static_cast<uint64_t>(t[n] - '0') * scale;
        scale /= 10;
        ++n;
      }
      if (n == 0) return false;
      t.remove_prefix(n);
    }
  }
  if (h > 23 || m > 59 || s > 60) return false;
  tm->tm_hour = h;
  tm->tm_min = m;
  tm->tm_sec = s;
  return true;
}

}  // namespace

std::optional<TimePoint> parse_time_point(std::string_view text, uint64_t now_realtime_ns) {
  if (auto d = parse_duration_ns(text)) return TimePoint{false, *d};
  struct tm tm {};
  uint64_t frac_ns = 0;
  std::string_view t = text;
  const bool has_date = t.size() >= 10 && t[4] == '-' && t[7] == '-';
  if (has_date) {
    int y, mo, d;
    if (!digits(t, 4, &y) || !eat(t, '-') || !digits(t, 2, &mo) || !eat(t, '-') || !digits(t, 2, &d))
      return std::nullopt;
    if (!eat(t, 'T') && !eat(t, ' ')) return std::nullopt;
    if (mo < 1 || mo > 12 || d < 1 || d > 31) return std::nullopt;
    tm.tm_year = y - 1900;
    tm.tm_mon = mo - 1;
    tm.tm_mday = d;
  } else {
    // Today, in local time.
    const time_t now = now_realtime_ns ? static_cast<time_t>(now_realtime_ns / 1000000000ull) : time(nullptr);
    if (!localtime_r(&now, &tm)) return std::nullopt;
  }
  if (!parse_clock_time(t, &tm, &frac_ns)) return std::nullopt;
  time_t secs;
  if (t.empty()) {
    tm.tm_isdst = -1;  // local time: let mktime work out daylight saving
    secs = mktime(&tm);
  } else if (has_date && (t == "Z" || t == "z")) {
    secs = timegm(&tm);
  } else if (has_date && (t[0] == '+' || t[0] == '-') && t.size() == 6 && t[3] == ':') {
    const int sign = t[0] == '-' ? -1 : 1;
    t.remove_prefix(1);
    int oh, om;
    if (!digits(t, 2, &oh) || !eat(t, ':') || !digits(t, 2, &om)) return std::nullopt;
    secs = timegm(&tm) - sign * (oh * 3600 + om * 60);
  } else {
    return std::nullopt;
  }
  if (secs < 0) return std::nullopt;
  return TimePoint{true, static_cast<uint64_t>(secs) * 1000000000ull + frac_ns};
}

std::string format_us(uint64_t ns) {
  std::string s;
  append_us(s, ns);
  return s;
}

}  // namespace ringprof
