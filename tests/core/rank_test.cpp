// The process's rank: which launcher variables give it (ringprof/rank.h),
// and set_rank() overriding them.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "ringprof/rank.h"

namespace ringprof {
namespace {

std::map<std::string, std::string> g_env;
const char* fake_getenv(const char* name) {
  auto it = g_env.find(name);
  return it == g_env.end() ? nullptr : it->second.c_str();
}
RankInfo from(std::map<std::string, std::string> env) {
  g_env = std::move(env);
  return internal::rank_from_environment(fake_getenv);
}

TEST(Rank, Torchrun) {
  const RankInfo r = from({{"RANK", "3"}, {"LOCAL_RANK", "1"}, {"WORLD_SIZE", "8"}, {"TORCHELASTIC_RUN_ID", "abc"},
                           {"SLURM_PROCID", "9"}, {"SLURM_JOB_ID", "77"}});
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.local_rank, 1);
  EXPECT_EQ(r.world_size, 8);
  EXPECT_EQ(r.job_id, "abc");  // torchrun's run id before Slurm's job
  EXPECT_EQ(r.source, "RANK");
  EXPECT_TRUE(r.known());
}

TEST(Rank, SlurmWithAStep) {
  const RankInfo r =
      from({{"SLURM_PROCID", "5"}, {"SLURM_LOCALID", "2"}, {"SLURM_NTASKS", "16"}, {"SLURM_JOB_ID", "4242"},
            {"SLURM_STEP_ID", "0"}});
  EXPECT_EQ(r.rank, 5);
  EXPECT_EQ(r.local_rank, 2);
  EXPECT_EQ(r.world_size, 16);
  EXPECT_EQ(r.job_id, "4242.0");
  EXPECT_EQ(r.source, "SLURM_PROCID");
}

TEST(Rank, OpenMpiAndPmi) {
  RankInfo r = from({{"OMPI_COMM_WORLD_RANK", "1"}, {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                     {"OMPI_COMM_WORLD_SIZE", "4"}, {"OMPI_MCA_ess_base_jobid", "123"}});
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.job_id, "123");
  EXPECT_EQ(r.source, "OMPI_COMM_WORLD_RANK");
  r = from({{"PMI_RANK", "6"}, {"PMI_SIZE", "7"}, {"MPI_LOCALRANKID", "3"}});
  EXPECT_EQ(r.rank, 6);
  EXPECT_EQ(r.world_size, 7);
  EXPECT_EQ(r.local_rank, 3);
}

TEST(Rank, AMalformedValueIsSkippedForTheNextVariable) {
  testing::internal::CaptureStderr();
  const RankInfo r = from({{"RANK", "two"}, {"SLURM_PROCID", "4"}, {"WORLD_SIZE", "-3"}});
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.rank, 4);
  EXPECT_EQ(r.source, "SLURM_PROCID");
  EXPECT_EQ(r.world_size, -1);
  EXPECT_NE(err.find("ignoring RANK=two"), std::string::npos) << err;
  EXPECT_NE(err.find("ignoring WORLD_SIZE=-3"), std::string::npos) << err;
}

TEST(Rank, NothingSetIsUnknown) {
  const RankInfo r = from({});
  EXPECT_FALSE(r.known());
  EXPECT_EQ(r.rank, -1);
  EXPECT_EQ(r.source, "");
}

TEST(Rank, SetRankBumpsTheVersionAndWinsOverTheEnvironment) {
  const uint32_t before = rank_info().version;
  set_rank(2, 4, 0, "job");
  RankInfo r = rank_info();
  EXPECT_EQ(r.version, before + 1);
  EXPECT_EQ(r.rank, 2);
  EXPECT_EQ(r.world_size, 4);
  EXPECT_EQ(r.local_rank, 0);
  EXPECT_EQ(r.job_id, "job");
  EXPECT_EQ(r.source, "set_rank");
  setenv("RANK", "9", 1);
  internal::load_rank_from_environment();  // what start() does
  unsetenv("RANK");
  EXPECT_EQ(rank_info().rank, 2);
  EXPECT_EQ(rank_info().version, before + 1);
}

}  // namespace
}  // namespace ringprof
