// RINGPROF_HOSTNAME and RINGPROF_CLOCK_SKEW_NS, read at session start: the
// host name the files state, and a shift of every wall-clock time stored (the
// process start's and the clock calibration's), checked against plain
// CLOCK_REALTIME readings taken around start(). A bad skew is ignored.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

#include "recording/clock.h"
#include "ringprof/ringprof.h"
#include "support/capture_sink.h"

namespace ringprof {
namespace {

// Sets variables for one test and puts back what was there before.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto& [k, v] : vars) {
      const char* old = getenv(k);
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      setenv(k, v, 1);
    }
  }
  ~Env() {
    for (const auto& [k, v] : saved_) {
      if (v)
        setenv(k, v->c_str(), 1);
      else
        unsetenv(k);
    }
  }

 private:
  std::vector<std::pair<const char*, std::optional<std::string>>> saved_;
};

// CLOCK_REALTIME - CLOCK_MONOTONIC now: what realtime_base_ns -
// monotonic_base_ns states for an unskewed clock.
int64_t wall_offset_ns() {
  const uint64_t real = realtime_now_ns();
  return static_cast<int64_t>(real - internal::monotonic_ns());
}

// What a session started with the environment as it is states.
SessionInfo session_from_env(std::vector<std::string>* warnings, uint64_t* before, uint64_t* after) {
  auto sink = std::make_shared<test::CaptureSink>();
  Config c = config_from_env(warnings);
  c.sample_hz = 0;
  *before = realtime_now_ns();
  EXPECT_TRUE(start(c, sink));  // returns once the sink has begun the session
  *after = realtime_now_ns();
  stop();
  return sink->session;
}

std::string plain_host_name() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

TEST(HostIdentity, ConfigTakesTheHostnameAndASignedSkew) {
  Env env{{"RINGPROF_HOSTNAME", "node-7"}, {"RINGPROF_CLOCK_SKEW_NS", "-2500000000"}};
  std::vector<std::string> warnings;
  const Config c = config_from_env(&warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.hostname, "node-7");
  EXPECT_EQ(c.clock_skew_ns, -2500000000);
  Env bounds{{"RINGPROF_CLOCK_SKEW_NS", "1000000000000000"}};
  EXPECT_EQ(config_from_env(&warnings).clock_skew_ns, kMaxClockSkewNs);
  EXPECT_TRUE(warnings.empty());
}

TEST(HostIdentity, TheSessionStatesTheHostnameAndSkewedWallClockTimes) {
  const int64_t skew = -3600000000123;  // an hour and a bit behind
  Env env{{"RINGPROF_HOSTNAME", "node-7"}, {"RINGPROF_CLOCK_SKEW_NS", "-3600000000123"}};
  std::vector<std::string> warnings;
  const int64_t offset_before = wall_offset_ns();
  uint64_t before = 0, after = 0;
  const SessionInfo s = session_from_env(&warnings, &before, &after);
  const int64_t offset_after = wall_offset_ns();
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(s.hostname, "node-7");
  // The start's wall-clock time, less the skew, lies between plain readings.
  const uint64_t start_unskewed = s.start_realtime_ns - static_cast<uint64_t>(skew);
  EXPECT_GE(start_unskewed, before);
  EXPECT_LE(start_unskewed, after);
  // So does the calibration's wall-clock offset, within a millisecond (the
  // two clocks are read one after the other, and NTP may slew between).
  const int64_t offset = static_cast<int64_t>(s.clock.realtime_base_ns - s.clock.monotonic_base_ns) - skew;
  EXPECT_GE(offset, std::min(offset_before, offset_after) - 1000000);
  EXPECT_LE(offset, std::max(offset_before, offset_after) + 1000000);
}

TEST(HostIdentity, ABadSkewIsIgnoredWithAWarningAndAnEmptyHostnameIsNotUsed) {
  for (const char* bad : {"12abc", "1e9", "2000000000000000", "-1000000000000001", "99999999999999999999", " "}) {
    Env env{{"RINGPROF_CLOCK_SKEW_NS", bad}};
    std::vector<std::string> warnings;
    EXPECT_EQ(config_from_env(&warnings).clock_skew_ns, 0) << bad;
    ASSERT_EQ(warnings.size(), 1u) << bad;
    EXPECT_NE(warnings[0].find("RINGPROF_CLOCK_SKEW_NS"), std::string::npos) << warnings[0];
  }
  Env env{{"RINGPROF_HOSTNAME", ""}, {"RINGPROF_CLOCK_SKEW_NS", "soon"}};
  std::vector<std::string> warnings;
  uint64_t before = 0, after = 0;
  const SessionInfo s = session_from_env(&warnings, &before, &after);
  EXPECT_EQ(warnings.size(), 1u);
  EXPECT_EQ(s.hostname, plain_host_name());
  EXPECT_GE(s.start_realtime_ns, before);  // no shift
  EXPECT_LE(s.start_realtime_ns, after);
}

}  // namespace
}  // namespace ringprof
