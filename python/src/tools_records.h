// tools_records.h — a recording's events as columns for ringprof.open().
#pragma once

#include <pybind11/pybind11.h>

#include <optional>
#include <string>
#include <vector>

namespace ringprof::python {

// Reads `paths` once and returns {"zones": {column: list}, "samples": ...,
// "gpu": ..., "memory": ..., "steps": ..., "counters": ..., "problems": [...]}
// (docs/python.md lists the columns). With `window_id`, only what falls in
// that window (zones overlapping it, whole). Samples are symbolized.
pybind11::dict read_records(const std::vector<std::string>& paths, std::optional<uint64_t> window_id);

}  // namespace ringprof::python
