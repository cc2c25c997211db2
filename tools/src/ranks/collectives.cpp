#include "ringprof/tools/collectives.h"

#include <array>
#include <tuple>
#include <utility>

namespace ringprof {

namespace {

constexpr std::array<std::string_view, 2> kNcclKernelPrefixes = {"ncclDevKernel_", "ncclKernel_"};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

}  // namespace

bool is_nccl_kernel(std::string_view name) {
  for (std::string_view p : kNcclKernelPrefixes)
    if (name.find(p) != std::string_view::npos) return true;
  return false;
}

std::string nccl_kernel_collective(std::string_view name) {
  for (std::string_view p : kNcclKernelPrefixes) {
    const size_t at = name.find(p);
    if (at == std::string_view::npos) continue;
    // The operation is the word after the prefix: up to the next '_', '(' or
    // the end (a mangled name goes on with its parameter types).
    std::string_view rest = name.substr(at + p.size());
    size_t end = 0;
    while (end < rest.size() && rest[end] != '_' && rest[end] != '(' && rest[end] != '<') ++end;
    const std::string_view op = rest.substr(0, end);
    static constexpr std::array<std::string_view, 5> kCollectives = {"AllReduce", "AllGather", "ReduceScatter",
                                                                     "Broadcast", "Reduce"};
    for (std::string_view c : kCollectives)
      if (op == c) return std::string(op);
    return "";  // SendRecv, Send, Recv (one peer), Generic (any operation): no key
  }
  return "";
}

std::string zone_collective(std::string_view name, bool* nccl) {
  if (nccl) *nccl = false;
  // Process groups prefix their operations with the backend's name. The
  // dispatcher's "c10d::allreduce_" is not one: it only enqueues the work.
  static constexpr std::array<std::pair<std::string_view, bool>, 5> kPrefixes = {
      {{"nccl:", true}, {"gloo:", false}, {"mpi:", false}, {"ucc:", false}, {"xccl:", false}}};
  bool prefixed = false;
  for (auto [p, is_nccl] : kPrefixes) {
    if (!starts_with(name, p)) continue;
    name.remove_prefix(p.size());
    prefixed = true;
    if (nccl) *nccl = is_nccl;
    break;
  }
  while (!name.empty() && name.front() == '_') name.remove_prefix(1);
  while (!name.empty() && name.back() == '_') name.remove_suffix(1);
  // Variants of one operation: "_allgather_base", "all_gather_into_tensor",
  // "reduce_scatter_tensor_coalesced", "allreduce_coalesced".
  for (bool trimmed = true; trimmed;) {
    trimmed = false;
    for (std::string_view s : {"_coalesced", "_base", "_into_tensor", "_tensor"}) {
      if (ends_with(name, s) && name.size() > s.size()) {
        name.remove_suffix(s.size());
        trimmed = true;
      }
    }
  }
  std::string plain;
  for (char c : name)
    if (c != '_') plain += c;
  // The generic words (reduce, gather, scatter) are collectives only with a
  // backend prefix: a zone of that name in a program is more likely its own.
  static constexpr std::array<std::tuple<std::string_view, std::string_view, bool>, 9> kOps = {{
      {"allreduce", "all_reduce", false},
      {"allgather", "all_gather", false},
      {"reducescatter", "reduce_scatter", false},
      {"alltoall", "all_to_all", false},
      {"broadcast", "broadcast", false},
      {"barrier", "barrier", false},
      {"reduce", "reduce", true},
      {"gather", "gather", true},
      {"scatter", "scatter", true},
  }};
  for (auto [word, canonical, needs_prefix] : kOps) {
    if (plain != word) continue;
    if (needs_prefix && !prefixed) break;
    return std::string(canonical);
  }
  if (nccl) *nccl = false;
  return "";
}

}  // namespace ringprof
