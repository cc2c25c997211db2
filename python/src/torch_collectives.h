// torch_collectives.h — what PyTorch's work records leave out of a
// collective: the process group it belongs to, PyTorch's sequence number in
// that group and when it was enqueued.
//
// c10d records each process group's work as an async RecordFunction that has
// only a title and tensors, begun on the backend's thread (gloo's worker) or
// the caller's (NCCL). ringprof.torch wraps torch.distributed's collective
// functions: before PyTorch enqueues a call, the wrapper notes it here with
// the addresses of its tensors; the async-span callback takes the oldest note
// that names the work's first tensor (a tensorless note for tensorless work,
// such as gloo's barrier) and writes it as the span's arguments. Calls made
// from C++ (DDP's bucket all-reduces) have no note, and their spans none of
// these arguments.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringprof::torch_operators {

struct CollectiveNote {
  std::string group;
  int64_t seq = -1;       // PyTorch's sequence number in the group; -1: the backend keeps none
  int64_t queued_ns = 0;  // from the note to the work's begin
};

// Notes a call about to be enqueued. `tensors`: the data addresses of the
// call's tensors (empty for a barrier). The most recent 256 notes are kept:
// one that no work takes (a backend that records none) ages out.
void note_collective(std::string group, int64_t seq, std::vector<uintptr_t> tensors);

// The oldest note naming `first_tensor` (0: the oldest tensorless note),
// removed; nothing when there is none.
std::optional<CollectiveNote> take_collective(uintptr_t first_tensor);

// The group of work made from C++ without a note: DDP's bucket all-reduces
// and its start-up broadcasts, in the group the latest DistributedDataParallel
// was built with ("": none named, the tools count them in the world's).
void set_untold_group(std::string group);
std::string untold_group();

// Removes the untaken note of (group, seq, first tensor) when there is one:
// the call raised before PyTorch enqueued any work, and a later call on the
// same tensor must not take it.
void forget_collective(const std::string& group, int64_t seq, uintptr_t first_tensor);

// How many notes are kept now (tests).
size_t collective_notes();

}  // namespace ringprof::torch_operators
