// ringprof/tools/ab_runs.h — `ringprof ab`: runs a base command and a head
// command several times each, interleaved, each run recording into its own
// directory, for `diff --runs` to compare with the run-to-run noise measured.
//
// A shared machine's load changes from one moment to the next; a base run
// and a head run made at different moments differ by it. The runs therefore
// alternate in a balanced order, base-head then head-base (ABBA…), so that a
// drift hits both sides alike and no side always goes first. With `duet`,
// each round runs the two at once, each pinned to a CPU of its own (the CPUs
// swapped every round), so that what the machine does meanwhile hits both
// (duet benchmarking, Bulej et al., ICPE 2020); it needs two CPUs.
//
// Each command runs under /bin/sh -c with RINGPROF_DIR set to its run's
// directory (OUT/base/run-01, OUT/head/run-01, …) and RINGPROF_MODE=detailed
// unless the environment sets a mode. Warm-up runs (not kept) go first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof {

struct AbOptions {
  std::string out_dir;  // created; its base/ and head/ replaced
  std::string base_command;
  std::string head_command;
  uint32_t runs = 5;    // per side
  uint32_t warmup = 1;  // per side, before the counted runs
  bool duet = false;
  bool show_output = false;  // the commands' stdout/stderr (else /dev/null)
};

struct AbResult {
  std::vector<std::string> base_runs, head_runs;  // the counted runs' directories, in order
  std::vector<std::string> order;                 // "base 1", "head 1", … as run ("base 1 + head 1" in a duet)
  std::string error;                              // non-empty: why it stopped
  int failed_status = 0;                          // the failing command's exit status (or 128 + signal)
};

// Runs them as described above. Progress (one line per run) goes to
// `progress` when it is not null.
AbResult run_ab(const AbOptions& options, void (*progress)(const std::string&) = nullptr);

}  // namespace ringprof
