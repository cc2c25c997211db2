// ringprof/tools/collectives.h — which GPU kernels and zones are collective
// operations, and the key that names one across the ranks of a job.
//
// Three sources, as a job records them:
//   - NCCL kernels (`ncclKernel_AllReduce_…`, `ncclDevKernel_AllGather_…`,
//     mangled or not): their GPU end is where the ranks of a communicator meet.
//     Point-to-point kernels (SendRecv, Send, Recv) are communication but meet
//     one peer only, so they name no collective.
//   - zones named as PyTorch's process groups name their operations:
//     `nccl:all_reduce`, `gloo:broadcast`, or the bare operation
//     (`all_reduce`, `barrier`, …). A zone of an NCCL process group only
//     launches the kernel and returns before the GPU has met the other ranks,
//     so those zones are used only by ranks that recorded no NCCL kernel. The
//     dispatcher's `c10d::allreduce_` only enqueues the work: not one.
//   - zones marked through the API (ringprof::mark_collective(group), a zone
//     argument "collective"): the user states their end is a meeting point.
//
// Keys keep sources apart ("nccl AllReduce", "zone all_reduce",
// "mark world step_sync") so that a kernel is never matched with a zone.
#pragma once

#include <string>
#include <string_view>

namespace ringprof {

// The zone argument that marks a zone as a collective; its value names the
// group (communicator) of ranks that take part.
inline constexpr std::string_view kCollectiveArgKey = "collective";

// A kernel of the NCCL library (communication), by its name as recorded.
bool is_nccl_kernel(std::string_view kernel_name);

// The collective an NCCL kernel runs ("AllReduce", "AllGather", …); "" for a
// point-to-point kernel, a name it cannot parse, or a kernel that is not NCCL.
std::string nccl_kernel_collective(std::string_view kernel_name);

// The collective a zone's name states, normalised ("allreduce", "all_reduce_"
// and "gloo:allreduce" are all "all_reduce"); "" when the name is not one.
// *nccl is set when the name says it ran on an NCCL process group.
std::string zone_collective(std::string_view zone_name, bool* nccl = nullptr);

}  // namespace ringprof
