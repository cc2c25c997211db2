// Which zone and CUDA call names the findings treat specially: data loading,
// host reads of tensor values, synchronising calls. Names only: a rule that
// needs more (times, threads) looks at the records themselves.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>

#include "report/findings_facts.h"

namespace ringprof::internal {

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

}  // namespace

bool is_data_loading_zone(const std::string& name) {
  const std::string n = lower(name);
  for (std::string_view word : {"data", "loader", "fetch", "collate"})
    if (n.find(word) != std::string::npos) return true;
  // "batch", but batch norm and batched matrix products are computation.
  for (size_t at = n.find("batch"); at != std::string::npos; at = n.find("batch", at + 1)) {
    const std::string_view after = std::string_view(n).substr(at + 5);
    const bool compute = after.starts_with("norm") || after.starts_with("_norm") || after.starts_with(" norm") ||
                         after.starts_with("ed");
    if (!compute) return true;
  }
  return false;
}

bool is_host_read_zone(const std::string& name) {
  if (name == "aten::item" || name == "aten::_local_scalar_dense") return true;
  for (std::string_view tail : {".item()", ".cpu()", ".tolist()", ".numpy()", ".item", ".cpu", ".tolist", ".numpy"})
    if (ends_with(name, tail)) return true;
  return false;
}

bool is_sync_call(const std::string& api_name) {
  // CUPTI's names may carry a version or per-thread-stream suffix.
  std::string_view name = api_name;
  for (std::string_view suffix : {"_ptsz", "_ptds"})
    if (ends_with(name, suffix)) name.remove_suffix(suffix.size());
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    name = name.substr(0, v);
  static constexpr std::array<std::string_view, 7> kSyncCalls = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaThreadSynchronize",
      "cuCtxSynchronize",      "cuStreamSynchronize",   "cuEventSynchronize"};
  if (std::find(kSyncCalls.begin(), kSyncCalls.end(), name) != kSyncCalls.end()) return true;
  // cudaMemcpy, cudaMemcpy2D, cuMemcpyDtoH, …: the host waits for the copy
  // (and for the work queued before it); the Async forms do not block.
  const bool copy = name.starts_with("cudaMemcpy") || name.starts_with("cuMemcpy");
  return copy && name.find("Async") == std::string_view::npos;
}

}  // namespace ringprof::internal
