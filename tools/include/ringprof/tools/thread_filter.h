// ringprof/tools/thread_filter.h — the `--thread NAME_OR_TID` selection every
// command shares: a thread matches by its latest name, or by its kernel tid
// when the text is a decimal number. An empty filter selects every thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {

class ThreadFilter {
 public:
  explicit ThreadFilter(std::string spec = {});
  bool empty() const { return spec_.empty(); }
  bool matches(const ProcessState& process, uint32_t thread_index) const;

 private:
  std::string spec_;
  std::optional<uint32_t> tid_;
};

}  // namespace ringprof
