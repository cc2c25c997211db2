// The UTC stamp in ringprof's file names, YYYYMMDDTHHMMSS.
#pragma once

#include <time.h>

#include <cstdint>
#include <string>

namespace ringprof {

// `realtime_ns` (CLOCK_REALTIME; 0: now) as YYYYMMDDTHHMMSS in UTC.
inline std::string utc_stamp(uint64_t realtime_ns) {
  // YYYYMMDDTHHMMSS by arithmetic: gmtime_r() and strftime() load the local
  // time zone (a file read) the first time either runs, for a UTC stamp.
  const int64_t secs = realtime_ns ? static_cast<int64_t>(realtime_ns / 1000000000ull) : time(nullptr);
  const int64_t days = secs >= 0 ? secs / 86400 : (secs - 86399) / 86400;
  const int64_t sod = secs - days * 86400;
  // Days since 1970-01-01 to a civil date (proleptic Gregorian; eras of
  // 400 years, years starting in March so the leap day comes last).
  const int64_t z = days + 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const int64_t doe = z - era * 146097;
  const int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const int64_t mp = (5 * doy + 2) / 153;
  const int64_t day = doy - (153 * mp + 2) / 5 + 1;
  const int64_t month = mp < 10 ? mp + 3 : mp - 9;
  const int64_t year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const int64_t fields[6] = {year, month, day, sod / 3600, sod / 60 % 60, sod % 60};
  std::string out;
  out.reserve(15);
  for (int f = 0; f < 6; ++f) {
    const int width = f == 0 ? 4 : 2;
    char digits[4];
    int64_t v = fields[f];
    for (int d = width - 1; d >= 0; --d, v /= 10) digits[d] = static_cast<char>('0' + v % 10);
    out.append(digits, static_cast<size_t>(width));
    if (f == 2) out += 'T';
  }
  return out;
}

}  // namespace ringprof
