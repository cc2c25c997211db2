// torch_collectives.cpp — the notes of torch.distributed calls
// (torch_collectives.h). Collectives are rare (a few per training step), so
// a mutex and a short deque are enough; the operator callbacks never come
// here.
#include "torch_collectives.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>

namespace ringprof::torch_operators {
namespace {

constexpr size_t kMaxNotes = 256;

struct Pending {
  CollectiveNote note;
  std::vector<uintptr_t> tensors;
  std::chrono::steady_clock::time_point at;
};

std::mutex g_mu;
std::deque<Pending> g_notes;  // oldest first, under g_mu
std::string g_untold;         // under g_mu

}  // namespace

void note_collective(std::string group, int64_t seq, std::vector<uintptr_t> tensors) {
  Pending p{{std::move(group), seq, 0}, std::move(tensors), std::chrono::steady_clock::now()};
  std::lock_guard<std::mutex> lock(g_mu);
  g_notes.push_back(std::move(p));
  if (g_notes.size() > kMaxNotes) g_notes.pop_front();
}

std::optional<CollectiveNote> take_collective(uintptr_t first_tensor) {
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_notes.begin(); it != g_notes.end(); ++it) {
    const bool match = first_tensor == 0
                           ? it->tensors.empty()
                           : std::find(it->tensors.begin(), it->tensors.end(), first_tensor) != it->tensors.end();
    if (!match) continue;
    CollectiveNote n = std::move(it->note);
    n.queued_ns = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::nanoseconds>(now - it->at).count());
    g_notes.erase(it);
    return n;
  }
  return std::nullopt;
}

void set_untold_group(std::string group) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_untold = std::move(group);
}

std::string untold_group() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_untold;
}

void forget_collective(const std::string& group, int64_t seq, uintptr_t first_tensor) {
  std::lock_guard<std::mutex> lock(g_mu);
  for (auto it = g_notes.begin(); it != g_notes.end(); ++it) {
    const bool same_tensor =
        first_tensor == 0 ? it->tensors.empty() : !it->tensors.empty() && it->tensors.front() == first_tensor;
    if (same_tensor && it->note.group == group && it->note.seq == seq) {
      g_notes.erase(it);
      return;
    }
  }
}

size_t collective_notes() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_notes.size();
}

}  // namespace ringprof::torch_operators
