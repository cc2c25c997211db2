// Numbers as text (number_text.h).
#include "common/number_text.h"

#include <cmath>
#include <cstdio>

namespace ringprof::internal {

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string percent(double v) { return fixed(v, 1) + "%"; }

std::string percent_of(double fraction) { return percent(fraction * 100.0); }

std::string signed_percent(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

std::string duration_text(int64_t ns) {
  char buf[48];
  const double a = std::fabs(static_cast<double>(ns));
  const char* sign = ns < 0 ? "-" : "";
  if (a >= 1e9) {
    std::snprintf(buf, sizeof buf, "%s%.2f s", sign, a / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, sizeof buf, "%s%.2f ms", sign, a / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, sizeof buf, "%s%.1f µs", sign, a / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%s%.0f ns", sign, a);
  }
  return buf;
}

}  // namespace ringprof::internal
