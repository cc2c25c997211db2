// Which zone and CUDA call names the findings treat specially: data loading,
// host reads of tensor values, synchronising calls. Names only: a rule that
// needs more (times, threads) looks at the records themselves.
#include <algorithm>
#include <array>
#include <cctype>
#include <string_view>
#include <vector>

#include "findings/facts.h"

namespace ringprof::internal {

namespace {

bool ends_with(std::string_view s, std::string_view tail) {
  return s.size() >= tail.size() && s.substr(s.size() - tail.size()) == tail;
}

// The name's words, lower case: split at every character other than an ASCII
// letter or digit, at a lower-case letter followed by an upper-case one, at an
// upper-case run followed by a capitalised word (HTTPServer: http, server),
// and between letters and digits.
std::vector<std::string> words(std::string_view name) {
  std::vector<std::string> out;
  std::string word;
  auto flush = [&] {
    if (!word.empty()) out.push_back(std::move(word));
    word.clear();
  };
  auto alpha = [](unsigned char c) { return std::isalpha(c) != 0; };
  for (size_t i = 0; i < name.size(); ++i) {
    const auto c = static_cast<unsigned char>(name[i]);
    if (c >= 0x80 || !std::isalnum(c)) {
      flush();
      continue;
    }
    if (!word.empty()) {
      const auto prev = static_cast<unsigned char>(name[i - 1]);
      const bool next_lower = i + 1 < name.size() && std::islower(static_cast<unsigned char>(name[i + 1]));
      if ((std::islower(prev) && std::isupper(c)) || (std::isupper(prev) && std::isupper(c) && next_lower) ||
          alpha(prev) != alpha(c))
        flush();
    }
    word.push_back(static_cast<char>(std::tolower(c)));
  }
  flush();
  return out;
}

template <size_t N>
bool one_of(const std::string& word, const std::array<std::string_view, N>& list) {
  return std::find(list.begin(), list.end(), word) != list.end();
}

}  // namespace

bool is_data_loading_zone(const std::string& name) {
  static constexpr std::array<std::string_view, 7> kAfterData = {"loader", "loaders", "loading", "load",
                                                                 "fetch",  "fetcher", "pipeline"};
  static constexpr std::array<std::string_view, 5> kBeforeData = {"next", "get", "fetch", "read", "load"};
  static constexpr std::array<std::string_view, 4> kBeforeBatch = {"load", "next", "get", "fetch"};
  static constexpr std::array<std::string_view, 5> kAlone = {"dataloader", "dataloaders", "dataset", "datasets",
                                                             "collate"};
  const std::vector<std::string> w = words(name);
  for (size_t i = 0; i < w.size(); ++i) {
    const std::string* prev = i > 0 ? &w[i - 1] : nullptr;
    const std::string* next = i + 1 < w.size() ? &w[i + 1] : nullptr;
    if (one_of(w[i], kAlone)) return true;
    // fetch, _MapDatasetFetcher; not prefetch (one word) nor pre_fetch.
    if ((w[i] == "fetch" || w[i] == "fetcher") && !(prev && *prev == "pre")) return true;
    if (w[i] == "data") {
      if (next && *next == "parallel") continue;  // DataParallel, DistributedDataParallel: computation
      if ((next && (one_of(*next, kAfterData) || *next == "iter")) || (prev && one_of(*prev, kBeforeData))) return true;
    }
    if ((w[i] == "batch" || w[i] == "batches") && prev && one_of(*prev, kBeforeBatch)) return true;
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
