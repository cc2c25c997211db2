// The file names' UTC stamp is computed by arithmetic (gmtime_r would load
// the time zone on first use); it must agree with gmtime_r everywhere.
#include "files/utc_stamp.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdio>
#include <string>

namespace {

std::string by_gmtime(int64_t secs) {
  const time_t t = static_cast<time_t>(secs);
  struct tm tm;
  gmtime_r(&t, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d%02d%02dT%02d%02d%02d", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                tm.tm_min, tm.tm_sec);
  return buf;
}

TEST(UtcStamp, AgreesWithGmtimeOnEveryDayFrom1970To2400) {
  // Each day at a second that moves through the day, so hours, minutes and
  // seconds are covered too; the range has 1972's first leap day, 2000
  // (a leap year of 400) and 2100, 2200, 2300 (no leap day).
  int mismatches = 0;
  for (int64_t day = 1; day < 157800; ++day) {  // (0 ns means now: day 0 is in KnownInstants)
    const int64_t secs = day * 86400 + (day * 7919) % 86400;
    const std::string got = ringprof::utc_stamp(static_cast<uint64_t>(secs) * 1000000000ull);
    if (got != by_gmtime(secs) && ++mismatches <= 5) ADD_FAILURE() << secs << ": " << got << " vs " << by_gmtime(secs);
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(UtcStamp, KnownInstants) {
  EXPECT_EQ(ringprof::utc_stamp(1ull), "19700101T000000");  // 1 ns past the epoch
  EXPECT_EQ(ringprof::utc_stamp(951782400ull * 1000000000ull), "20000229T000000");
  EXPECT_EQ(ringprof::utc_stamp(1795830095ull * 1000000000ull + 999999999ull), "20261128T014135");
}

}  // namespace
