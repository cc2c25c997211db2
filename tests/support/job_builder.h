// tests/support/job_builder.h — synthetic distributed jobs for the ranks
// tests: ranks on hosts whose clocks disagree by chosen amounts, each rank a
// TraceBuilder writing into its own directory. Times are given on one true
// axis (ns from the job's start); each host turns them into its own
// CLOCK_MONOTONIC (its boot time differs) and states a wall clock that is off
// by the host's skew, as a host whose NTP is off would. Header-only.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof::test {

struct SimHost {
  std::string name;
  uint64_t monotonic_at_zero;  // this host's CLOCK_MONOTONIC at true time 0
  int64_t wall_skew_ns;        // how far its wall clock is off
};

class SimRank {
 public:
  static constexpr uint64_t kWallAtZero = 1'700'000'000'000'000'000ull;

  SimRank(const SimHost& host, uint32_t pid, int32_t rank, int32_t world, const std::string& job)
      : host_(host), b_(pid, host.monotonic_at_zero) {
    b_.host(host.name);
    b_.wall_start(static_cast<uint64_t>(static_cast<int64_t>(kWallAtZero) + host.wall_skew_ns));
    b_.rank(rank, world, job);
    thread_ = b_.thread(pid, "trainer");
  }
  TraceBuilder& builder() { return b_; }
  uint32_t thread() const { return thread_; }
  // A true time on this host's clock.
  uint64_t at(uint64_t true_ns) const { return host_.monotonic_at_zero + true_ns; }
  uint32_t loc(const std::string& name) {
    for (const auto& [n, id] : locs_)
      if (n == name) return id;
    locs_.emplace_back(name, b_.location(name));
    return locs_.back().second;
  }
  void zone(const std::string& name, uint64_t begin, uint64_t end) {
    b_.begin(thread_, at(begin), loc(name));
    b_.end(thread_, at(end));
  }
  void step(uint64_t true_ns, uint64_t n) { b_.step(thread_, at(true_ns), n); }
  void gpu(GpuKind kind, const std::string& name, uint64_t begin, uint64_t end) {
    GpuActivity a;
    a.kind = kind;
    a.name = name.empty() ? 0 : gpu_name(name);
    a.start_ns = at(begin);
    a.end_ns = at(end);
    b_.gpu(a);
  }
  // Writes everything added so far as one more segment.
  void flush() { b_.flush(); }
  // The rank's file, in dir/<sub>/.
  std::string write(const std::string& dir, const std::string& sub) {
    b_.flush();
    const std::string d = dir + "/" + sub;
    std::filesystem::create_directories(d);
    const std::string path = d + "/ringprof-" + std::to_string(b_.session().pid) + "-1-000000.rpf";
    test::write_file(path, b_.bytes());
    return path;
  }

 private:
  uint32_t gpu_name(const std::string& name) {
    for (const auto& [n, id] : gpu_names_)
      if (n == name) return id;
    gpu_names_.emplace_back(name, b_.gpu_name(name));
    return gpu_names_.back().second;
  }
  SimHost host_;
  TraceBuilder b_;
  uint32_t thread_ = 0;
  std::vector<std::pair<std::string, uint32_t>> locs_;
  std::vector<std::pair<std::string, uint32_t>> gpu_names_;
};

}  // namespace ringprof::test
