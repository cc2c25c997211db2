#include "ringprof/time_window.h"

#include <charconv>
#include <cctype>

namespace ringprof {

namespace {

struct Unit {
  const char* suffix;
  uint64_t ns;
};
// Longest suffixes first so "ms" is not read as "m" followed by junk.
constexpr Unit kUnits[] = {{"ns", 1},           {"us", 1000},           {"ms", 1000000},
                           {"s", 1000000000ull}, {"m", 60000000000ull}, {"h", 3600000000000ull}};

bool mul_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_mul_overflow(a, b, out); }
bool add_overflows(uint64_t a, uint64_t b, uint64_t* out) { return __builtin_add_overflow(a, b, out); }

}  // namespace

std::optional<uint64_t> parse_duration_ns(std::string_view text) {
  size_t digits_end = 0;
  while (digits_end < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits_end])) || text[digits_end] == '.'))
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

TimeWindow resolve_window(const WindowSpec& spec, uint64_t trace_first_ns, uint64_t trace_last_ns) {
  TimeWindow w;
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

std::string format_us(uint64_t ns) {
  std::string s;
  append_us(s, ns);
  return s;
}

}  // namespace ringprof
