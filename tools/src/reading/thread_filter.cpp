#include "ringprof/tools/thread_filter.h"

#include <algorithm>
#include <charconv>

namespace ringprof {

ThreadFilter::ThreadFilter(std::string spec) : spec_(std::move(spec)) {
  if (spec_.empty() || !std::all_of(spec_.begin(), spec_.end(), [](char c) { return c >= '0' && c <= '9'; })) return;
  uint32_t tid = 0;
  const auto r = std::from_chars(spec_.data(), spec_.data() + spec_.size(), tid);
  if (r.ec == std::errc() && r.ptr == spec_.data() + spec_.size()) tid_ = tid;
}

bool ThreadFilter::matches(const ProcessState& process, uint32_t thread_index) const {
  if (spec_.empty()) return true;
  const ThreadState* t = process.thread(thread_index);
  if (t == nullptr) return false;
  return t->name == spec_ || (tid_ && t->tid == *tid_);
}

}  // namespace ringprof
