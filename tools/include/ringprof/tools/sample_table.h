// ringprof/tools/sample_table.h — `ringprof table --samples`: functions by their
// share of CPU samples, as perf report and pprof -top show them.
//
// Self: samples whose innermost frame is the function. Total: samples with the
// function anywhere on the stack, counted once per sample even when it recurses.
// Shares are of every sample kept, so self shares add up to 100.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/tools/op_table.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof {

enum class SampleColumn { Name, Self, Total };
// "name", "self", "total".
std::optional<SampleColumn> parse_sample_column(const std::string& text);

struct SampleRow {
  std::string function;
  std::string location;  // "file:line" of the function's first sampled line, or the module
  uint64_t self = 0;
  uint64_t total = 0;
};

struct SampleTable {
  std::vector<SampleRow> rows;  // sorted, cut to `top`
  uint64_t samples = 0;         // the share denominator
  uint64_t samples_lost = 0;
  uint64_t period_ns = 0;
};

// With `python_only`, the rows are the Python functions (interpreter frames)
// alone, one per function and file: self counts the samples whose innermost
// Python frame it is (whatever native code ran below it), total those it is
// in; shares stay of every sample.
SampleTable compute_sample_table(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                                 SampleColumn sort = SampleColumn::Self, size_t top = 0, bool python_only = false);

std::string format_sample_table(const SampleTable& table, TableFormat format);

}  // namespace ringprof
