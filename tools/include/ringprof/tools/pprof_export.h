// ringprof/tools/pprof_export.h — samples in the pprof profile.proto format, which
// go tool pprof, Pyroscope, Parca and Perfetto read.
//
// Two sample values: samples/count and cpu/nanoseconds (count × the period the
// sampler's rate gives). Each sample carries labels thread (name), tid and
// pid. A mapping per recorded module per process (with its build ID), a
// location per distinct address with its inline chain as lines, a function
// per distinct (name, file). time_nanos is the wall-clock time of the first
// sample kept, from the clock calibration every file holds.
#pragma once

#include <string>

#include "ringprof/tools/heap_profile.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof {

// The serialized (uncompressed) Profile message.
std::string build_pprof(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver);

// Writes it to `path`, gzip-compressed when the name ends in ".gz" (the usual
// "profile.pb.gz"). False with *error set.
bool write_pprof_file(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                      const std::string& path, std::string* error);

// The heap profile as go's heap profiles lay it out: alloc_objects,
// alloc_space, inuse_objects, inuse_space (the default), period space/bytes =
// the sampling interval; one sample per picked block, with labels bytes (its
// size), pool, thread, tid and pid.
std::string build_heap_pprof(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver);
bool write_heap_pprof_file(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver,
                           const std::string& path, std::string* error);

}  // namespace ringprof
