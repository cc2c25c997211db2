// rank.cpp — the process's place in a distributed job (ringprof/rank.h).
//
// One process-wide RankInfo under a mutex: written by set_rank() and by
// start() from the environment, read by the drainer once per batch. Never on
// the recording path.
#include "ringprof/rank.h"

#include <pthread.h>

#include <cerrno>
#include <climits>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <string>

namespace ringprof {
namespace {

std::mutex g_mu;
RankInfo g_rank;            // under g_mu
bool g_set_by_api = false;  // set_rank() was called: the environment no longer speaks

std::atomic<uint32_t> g_version{0};  // g_rank.version, readable without the lock

// fork() may happen while the drainer holds g_mu (reading the identity for a
// batch); the child, which has only the forking thread, takes it over: the
// lock is held across fork and released on both sides. Registered from
// start() before the recorder's own child handler (which may start recording
// again and read the identity): child handlers run in registration order.
void install_fork_handlers() {
  static std::once_flag once;
  std::call_once(once, [] { pthread_atfork([] { g_mu.lock(); }, [] { g_mu.unlock(); }, [] { g_mu.unlock(); }); });
}

// A non-negative decimal int32, or nothing (with a warning for a malformed one).
std::optional<int32_t> parse_count(const char* name, const char* text) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno != 0 || v < 0 || v > INT32_MAX) {
    std::fprintf(stderr, "ringprof: warning: ignoring %s=%s (expected a non-negative number)\n", name, text);
    return std::nullopt;
  }
  return static_cast<int32_t>(v);
}

// The first of `names` that is set and well formed; *from names it.
int32_t first_count(internal::EnvLookup lookup, std::initializer_list<const char*> names, std::string* from) {
  for (const char* name : names) {
    const char* text = lookup(name);
    if (!text || !*text) continue;
    if (auto v = parse_count(name, text)) {
      if (from) *from = name;
      return *v;
    }
  }
  return -1;
}

}  // namespace

void set_rank(int32_t rank, int32_t world_size, int32_t local_rank, std::string_view job_id) {
  std::lock_guard<std::mutex> lock(g_mu);
  const uint32_t version = g_rank.version + 1;
  g_rank = RankInfo{};
  g_rank.rank = rank < 0 ? -1 : rank;
  g_rank.world_size = world_size < 0 ? -1 : world_size;
  g_rank.local_rank = local_rank < 0 ? -1 : local_rank;
  g_rank.job_id = std::string(job_id);
  g_rank.source = "set_rank";
  g_rank.version = version;
  g_version.store(version, std::memory_order_release);
  g_set_by_api = true;
}

RankInfo rank_info() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_rank;
}

namespace internal {

RankInfo rank_from_environment(EnvLookup lookup) {
  RankInfo r;
  r.rank = first_count(lookup, {"RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"}, &r.source);
  r.local_rank = first_count(lookup, {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"},
                             nullptr);
  r.world_size = first_count(lookup, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS"}, nullptr);
  if (const char* run = lookup("TORCHELASTIC_RUN_ID"); run && *run) {
    r.job_id = run;
  } else if (const char* job = lookup("SLURM_JOB_ID"); job && *job) {
    r.job_id = job;
    if (const char* step = lookup("SLURM_STEP_ID"); step && *step) r.job_id += std::string(".") + step;
  } else if (const char* ompi = lookup("OMPI_MCA_ess_base_jobid"); ompi && *ompi) {
    r.job_id = ompi;
  } else if (const char* ns = lookup("PMIX_NAMESPACE"); ns && *ns) {
    r.job_id = ns;
  }
  if (r.source.empty() && r.known()) r.source = "environment";
  return r;
}

uint32_t rank_version() noexcept { return g_version.load(std::memory_order_acquire); }

void load_rank_from_environment() {
  install_fork_handlers();
  RankInfo r = rank_from_environment([](const char* name) -> const char* { return std::getenv(name); });
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_set_by_api || !r.known()) return;
  // Same identity as before (a restart after stop()): keep the version, so
  // nothing is restated for nothing.
  if (r.rank == g_rank.rank && r.local_rank == g_rank.local_rank && r.world_size == g_rank.world_size &&
      r.job_id == g_rank.job_id && r.source == g_rank.source)
    return;
  r.version = g_rank.version + 1;
  g_version.store(r.version, std::memory_order_release);
  g_rank = std::move(r);
}

}  // namespace internal
}  // namespace ringprof
