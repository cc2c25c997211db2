// torch_capture.h — PyTorch operators as ringprof zones, through
// RecordFunction's global callbacks (the capture behind ringprof.torch and
// bench/torch_operators_bench.cpp).
//
// Each operator (aten::linear, aten::addmm, autograd's AddmmBackward0, a
// record_function() label) is a zone on the thread that ran it: the start
// callback records a ZoneBegin named by the interned operator name
// (torch_names.h), the end callback its ZoneEnd. Forward and backward
// operators are linked as torch.profiler links them, by the forward
// operator's sequence number: the first operator of a forward sequence number
// begins a flow named "fwdbwd", the backward operator with that number ends
// it, on the autograd thread's track.
#pragma once

namespace ringprof::torch_operators {

// Which operators are recorded while ringprof records:
//   kAlwaysOn  every operator;
//   kSampled   a sample of them (probability sampling(), RecordFunction's own
//              sampling, so an operator left out costs next to nothing), and
//              every operator while the effective level is detailed;
//   kDetailed  every operator while the level is detailed, none otherwise;
//   kOff       none.
// The callback is registered with the probability the level calls for and
// registered again when the effective level changes (on the drainer thread,
// within a drain interval; sync() does it at once). With no callback
// registered PyTorch pays nothing: a registered one, even one that does
// nothing, costs every operator RecordFunction's floor.
enum Level : int { kOff = 0, kAlwaysOn = 1, kDetailed = 2, kSampled = 3 };

void set_level(int level);
int level();
void set_sampling(double probability);  // (0, 1]
double sampling();
// While ringprof records: follow the level (register what it calls for).
void enable();
// Remove the callback and stop following the level.
void disable();
// Whether a callback is registered now.
bool enabled();
// Register what the current effective level calls for, now.
void sync();
// The probability the registered callback samples with; 0 when none is.
double registered_probability();
// Input shapes and dtypes (zone arguments "Input Dims" and "Input type", as
// torch.profiler's record_shapes names them): recorded for every operator
// while the effective level is detailed and this is on (the default), never
// outside detailed. Off: detailed windows record operators without them.
void set_record_shapes(bool on);
bool record_shapes();
// Whether the registered callback records input shapes now.
bool recording_inputs();
// Python stacks (ringprof.torch.profile(with_stack=True)): each operator
// recorded while the effective level is detailed and this is on gets the
// Python frames that called it (a ZoneStack record after its ZoneBegin),
// never outside detailed. Off by default: a frame walk per operator.
void set_record_stacks(bool on);
bool record_stacks();
// Whether the registered callback records stacks now.
bool recording_stacks();

// FLOPs (ringprof.torch.profile(with_flops=True)): each operator that
// torch.profiler counts FLOPs for (torch_flops.h), recorded while the
// effective level is detailed and this is on, gets a zone argument "flops"
// computed from its inputs' shapes, as torch computes it. Off by default.
void set_record_flops(bool on);
bool record_flops();

// Benchmarks: a global callback that does nothing, registered as the
// capture's is (same scopes): the floor of any capture through RecordFunction.
void set_noop_callback(bool on, double probability = 1.0);

// Benchmarks only: whether enable() registers the callback for async
// records (c10d's work) beside the operators' (default true), so that its
// cost on operators can be measured in the same run.
void set_async_capture(bool on);

}  // namespace ringprof::torch_operators
