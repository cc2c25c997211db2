// RINGPROF_* parsing: good values land, bad ones keep the default and say so.
#include <gtest/gtest.h>
#include <stdlib.h>

#include "ringprof/config.h"

using namespace ringprof;

namespace {
// Sets variables for one test and removes them afterwards.
class Env {
 public:
  Env(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (auto& [k, v] : vars) {
      setenv(k, v, 1);
      names_.push_back(k);
    }
  }
  ~Env() {
    for (const char* k : names_) unsetenv(k);
  }

 private:
  std::vector<const char*> names_;
};
}  // namespace

TEST(Config, ByteSizes) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_byte_size("4096", &v));
  EXPECT_EQ(v, 4096u);
  EXPECT_TRUE(parse_byte_size("64K", &v));
  EXPECT_EQ(v, 64u << 10);
  EXPECT_TRUE(parse_byte_size("16M", &v));
  EXPECT_EQ(v, 16u << 20);
  EXPECT_TRUE(parse_byte_size("2GiB", &v));
  EXPECT_EQ(v, 2ull << 30);
  EXPECT_TRUE(parse_byte_size("1tb", &v));
  EXPECT_EQ(v, 1ull << 40);
  for (const char* bad : {"", "M", "12Q", "-5", "1.5M", "99999999999999999999", "20000000000000T"})
    EXPECT_FALSE(parse_byte_size(bad, &v)) << bad;
}

TEST(Config, DefaultsWithoutEnvironment) {
  std::vector<std::string> warnings;
  const Config c = config_from_env(&warnings);
  EXPECT_TRUE(warnings.empty());
  EXPECT_EQ(c.dir, "ringprof");
  EXPECT_EQ(c.max_bytes, 256ull << 20);
  EXPECT_EQ(c.file_bytes, 16ull << 20);
  EXPECT_EQ(c.ring_bytes, 512u << 10);
  EXPECT_EQ(c.zstd_level, 3);
  EXPECT_EQ(c.sink, "file");
  EXPECT_EQ(c.io_retry_ms, 1000u);
  EXPECT_TRUE(c.flush_at_exit);
  EXPECT_EQ(c.sample_hz, 99u);
  EXPECT_EQ(c.detailed_sample_hz, 999u);
  EXPECT_EQ(c.sampler, SamplerChoice::Auto);
}

TEST(Config, SamplerSettings) {
  for (auto [text, choice] : {std::pair{"auto", SamplerChoice::Auto}, std::pair{"perf", SamplerChoice::Perf},
                              std::pair{"timer", SamplerChoice::Timer}}) {
    Env env{{"RINGPROF_SAMPLER", text}, {"RINGPROF_SAMPLE_HZ", "0"}};
    std::vector<std::string> warnings;
    const Config c = config_from_env(&warnings);
    EXPECT_TRUE(warnings.empty()) << text;
    EXPECT_EQ(c.sampler, choice) << text;
    EXPECT_EQ(c.sample_hz, 0u);
  }
  {
    Env env{{"RINGPROF_SAMPLE_HZ", "997"}};
    EXPECT_EQ(config_from_env().sample_hz, 997u);
  }
  {
    Env env{{"RINGPROF_DETAILED_SAMPLE_HZ", "0"}};
    EXPECT_EQ(config_from_env().detailed_sample_hz, 0u);
  }
  {
    Env env{{"RINGPROF_DETAILED_SAMPLE_HZ", "4999"}};
    EXPECT_EQ(config_from_env().detailed_sample_hz, 4999u);
  }
  {
    Env env{{"RINGPROF_DETAILED_SAMPLE_HZ", "20000"}};
    std::vector<std::string> warnings;
    const Config c = config_from_env(&warnings);
    ASSERT_EQ(warnings.size(), 1u);
    EXPECT_NE(warnings[0].find("RINGPROF_DETAILED_SAMPLE_HZ=20000"), std::string::npos) << warnings[0];
    EXPECT_EQ(c.detailed_sample_hz, 999u);
  }
  Env env{{"RINGPROF_SAMPLER", "ebpf"}, {"RINGPROF_SAMPLE_HZ", "-5"}};
  std::vector<std::string> warnings;
  const Config c = config_from_env(&warnings);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_NE(warnings[0].find("RINGPROF_SAMPLE_HZ=-5"), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[1].find("RINGPROF_SAMPLER=ebpf"), std::string::npos) << warnings[1];
  EXPECT_EQ(c.sampler, SamplerChoice::Auto);
  EXPECT_EQ(c.sample_hz, 99u);
}

TEST(Config, GoodValuesLand) {
  Env env{{"RINGPROF_DIR", "/tmp/x"},       {"RINGPROF_MAX_BYTES", "1G"},    {"RINGPROF_FILE_BYTES", "8M"},
          {"RINGPROF_RING_BYTES", "64K"},   {"RINGPROF_ZSTD_LEVEL", "9"},    {"RINGPROF_SINK", "null"},
          {"RINGPROF_CLOCK", "monotonic"},  {"RINGPROF_DRAIN_MS", "3"},      {"RINGPROF_FLUSH_MS", "250"},
          {"RINGPROF_BATCH_EVENTS", "4096"}, {"RINGPROF_FLUSH_AT_EXIT", "0"}, {"RINGPROF_IO_RETRY_MS", "0"},
          {"RINGPROF_RING_MAX_BYTES", "8M"}, {"RINGPROF_STALL_MS", "2500"}};
  std::vector<std::string> warnings;
  const Config c = config_from_env(&warnings);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_EQ(c.dir, "/tmp/x");
  EXPECT_EQ(c.max_bytes, 1ull << 30);
  EXPECT_EQ(c.file_bytes, 8ull << 20);
  EXPECT_EQ(c.ring_bytes, 64u << 10);
  EXPECT_EQ(c.ring_max_bytes, 8u << 20);
  EXPECT_EQ(c.zstd_level, 9);
  EXPECT_EQ(c.sink, "null");
  EXPECT_EQ(c.clock, ClockChoice::Monotonic);
  EXPECT_EQ(c.drain_interval_ms, 3u);
  EXPECT_EQ(c.flush_interval_ms, 250u);
  EXPECT_EQ(c.batch_events, 4096u);
  EXPECT_FALSE(c.flush_at_exit);
  EXPECT_EQ(c.io_retry_ms, 0u);
  EXPECT_EQ(c.stall_ms, 2500u);
}

TEST(Config, BadValuesKeepDefaultsWithOneWarningEach) {
  Env env{{"RINGPROF_MAX_BYTES", "lots"}, {"RINGPROF_ZSTD_LEVEL", "42"}, {"RINGPROF_SINK", "s3"},
          {"RINGPROF_CLOCK", "sundial"},  {"RINGPROF_DRAIN_MS", "0"},    {"RINGPROF_FLUSH_AT_EXIT", "maybe"},
          {"RINGPROF_RING_BYTES", "1K"},  {"RINGPROF_IO_RETRY_MS", "soon"}};
  std::vector<std::string> warnings;
  const Config c = config_from_env(&warnings);
  EXPECT_EQ(warnings.size(), 8u);
  for (const std::string& w : warnings) EXPECT_EQ(w.rfind("ringprof: warning: ignoring RINGPROF_", 0), 0u) << w;
  const Config d;
  EXPECT_EQ(c.max_bytes, d.max_bytes);
  EXPECT_EQ(c.zstd_level, d.zstd_level);
  EXPECT_EQ(c.sink, d.sink);
  EXPECT_EQ(c.clock, d.clock);
  EXPECT_EQ(c.drain_interval_ms, d.drain_interval_ms);
  EXPECT_EQ(c.flush_at_exit, d.flush_at_exit);
  EXPECT_EQ(c.ring_bytes, d.ring_bytes);
  EXPECT_EQ(c.io_retry_ms, d.io_retry_ms);
}
