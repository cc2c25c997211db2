// ringprof/rank.h — the process's place in a distributed job (rank, local
// rank, world size, job id), recorded in its files so the tools can group a
// job's processes by rank (`ringprof info`, and the commands that read a job).
//
// At start(), unless set_rank() was called, it comes from the variables
// launchers set (the first one present wins):
//   rank        RANK (torchrun, torch.distributed), OMPI_COMM_WORLD_RANK (Open MPI),
//               PMI_RANK (MPICH, Intel MPI), PMIX_RANK, SLURM_PROCID (srun)
//   local rank  LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK, MPI_LOCALRANKID, SLURM_LOCALID
//   world size  WORLD_SIZE, OMPI_COMM_WORLD_SIZE, PMI_SIZE, SLURM_NTASKS
//   job id      TORCHELASTIC_RUN_ID (torchrun), SLURM_JOB_ID (with ".SLURM_STEP_ID"
//               when set), OMPI_MCA_ess_base_jobid, PMIX_NAMESPACE
// A value that is not a non-negative decimal number is ignored with one warning.
// set_rank() may be called at any time (after torch.distributed's init, say):
// the files state the new identity from their next segment on, and every file
// states it at its start.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ringprof {

// The process's place in a distributed job.
struct RankInfo {
  int32_t rank = -1;  // -1: unknown
  int32_t local_rank = -1;
  int32_t world_size = -1;
  std::string job_id;    // "" when unknown
  std::string source;    // where the rank came from: "RANK", "SLURM_PROCID", "set_rank", ...
  uint32_t version = 0;  // bumped on every change, so a sink can restate it; 0: never known
  bool known() const { return rank >= 0 || world_size >= 0 || local_rank >= 0 || !job_id.empty(); }
};

// -1 (or an empty job id) leaves a field unknown. Thread-safe.
void set_rank(int32_t rank, int32_t world_size = -1, int32_t local_rank = -1, std::string_view job_id = {});

// The identity recorded now (version 0 and rank -1 when none is known).
RankInfo rank_info();

namespace internal {
// What the variables give, through `lookup` (getenv in use); warnings go to stderr.
using EnvLookup = const char* (*)(const char* name);
RankInfo rank_from_environment(EnvLookup lookup);
// start(): reads the environment unless set_rank() has spoken (and installs
// the fork handlers of the identity's lock, before the recorder's own).
void load_rank_from_environment();
// rank_info().version, without the lock: the drainer copies the identity only when it moves.
uint32_t rank_version() noexcept;
}  // namespace internal

}  // namespace ringprof
