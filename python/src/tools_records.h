// tools_records.h — a recording's events as columns for ringprof.open().
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::python {

// The window `window_id` names in the reader's files (unbounded without an
// id); nullopt with *error set when no file marks it. Needs no GIL.
std::optional<TimeRange> find_window(TraceReader& reader, std::optional<uint64_t> window_id, std::string* error);

// Problems the reader met (damaged files), one line each as the CLI prints
// them: handed to Python to print, never thrown.
std::vector<std::string> problem_lines(const TraceReader& reader);

// Reads `paths` once and returns {"zones": {column: list}, "samples": ...,
// "gpu": ..., "memory": ..., "steps": ..., "counters": ..., "problems": [...]}
// (docs/python.md lists the columns). With `window_id`, only what falls in
// that window (zones overlapping it, whole). Samples are symbolized.
pybind11::dict read_records(const std::vector<std::string>& paths, std::optional<uint64_t> window_id);

}  // namespace ringprof::python
