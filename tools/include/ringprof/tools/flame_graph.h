// ringprof/tools/flame_graph.h — samples as collapsed ("folded") stacks: one line
// per distinct stack, frames from the root to the leaf joined by ';', a space
// and the sample count. flamegraph.pl, speedscope and inferno read it.
//
// Lines are sorted, so the same files always give the same bytes. Frames that
// symbolize the same way merge into one line. A ';' or a line break inside a
// name would break the format, so they are written as ':' and ' '.
#pragma once

#include <string>

#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof {

struct FoldedOptions {
  // Start every stack with "process;thread (tid)" so each thread is its own
  // tower (the default is one merged graph over every thread).
  bool per_thread = false;
};

std::string format_folded(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                          const FoldedOptions& options = {});

}  // namespace ringprof
