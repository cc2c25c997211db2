// torch_capture.h — PyTorch operators as ringprof zones, through
// RecordFunction's global callbacks (the capture behind ringprof.torch and
// bench/torch_ops_bench.cpp).
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

namespace ringprof::torch_ops {

enum Level : int { kOff = 0, kAlwaysOn = 1, kDetailed = 2 };

// kAlwaysOn: every operator while ringprof records; kDetailed: only while the
// effective level is detailed (the callbacks still run); kOff removes them.
void set_level(int level);
int level();
// Registers the callbacks (no-op at kOff or when registered); removes them.
void enable();
void disable();
bool enabled();
// Benchmarks: a global callback that does nothing, the floor of any capture.
void set_noop_callback(bool on);

}  // namespace ringprof::torch_ops
