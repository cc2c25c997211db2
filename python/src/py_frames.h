// py_frames.h — Python frames in CPU samples: CPython's side of the seam in
// ringprof/internal/interpreter_frames.h.
//
// The sample signal handler reads the sampled thread's interpreter frames
// (code object, fingerprint, instruction offset) without the GIL and through
// guarded reads only; the drainer later turns each into a qualified name, a
// file and a line from the code object, if it is still the one sampled.
// Compiled against CPython 3.11 and 3.12's internal frame layout, chosen by
// the headers the extension is built with; other versions register nothing.
#pragma once

#include <string>
#include <vector>

#include "ringprof/internal/interpreter_frames.h"

namespace ringprof::python {

// Registers the hooks with libringprof (once; later calls answer the same).
// False, with the reason in *why, where this interpreter is not one whose
// frames we can read: samples then keep native frames only.
bool register_python_frame_hooks(std::string* why);

// Test helpers: the very capture and describe the sampler uses, on the
// calling thread and outside any signal handler (a unit test of the frame
// walk apart from the signal machinery), reading memory as the drainer does.
// The frames innermost first; none where this interpreter is unsupported.
// in_place: capture_self's read instead (what record_zone_stack() uses).
std::vector<internal::CapturedFrame> capture_frames_for_test(bool in_place = false);
// False where describe refuses: not a code object, or not the one captured.
// `fault` makes one read return what a dead object's reused memory could
// (for a frame whose code object is alive with an ASCII name; any other
// address is refused as without one): kNameChanges, a byte of its name past
// ASCII; kCodeDies, the code object read again after its names is another.
enum class FrameFault { kNone, kNameChanges, kCodeDies };
bool describe_frame_for_test(const internal::CapturedFrame& frame, internal::FrameName* out,
                             FrameFault fault = FrameFault::kNone);

}  // namespace ringprof::python
