// `ringprof ship --follow` (ringprof/tools/ship.h): rounds of ship_files()
// over a live directory, and the files its writer deleted before a round
// could ship them, found by the gaps they leave in the numbering
// (ringprof-PID-STAMP-NNNNNN.rpf, numbered from 0 by each process).
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "fleet/file_names.h"
#include "ringprof/tools/ship.h"

namespace ringprof {
namespace {

namespace fs = std::filesystem;

// A writer numbers its files from 0, one at a time: a larger number is not
// one of its names, and is left alone rather than counted up to.
constexpr uint64_t kMaxNumber = 10'000'000;

using Numbered = internal::NumberedFile;

// One of a writer's names, within kMaxNumber; nullopt for other names.
std::optional<Numbered> numbered(const std::string& path) {
  std::optional<Numbered> n = internal::numbered_file(path);
  if (n && n->number > kMaxNumber) return std::nullopt;
  return n;
}

// What the directories hold now.
std::vector<Numbered> list(const std::vector<std::string>& paths) {
  std::vector<Numbered> out;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {  // with its subdirectories, as the reader reads them (a job's ranks)
      for (fs::recursive_directory_iterator it(p, fs::directory_options::skip_permission_denied, ec), end;
           !ec && it != end; it.increment(ec)) {
        if (it.depth() >= 1) it.disable_recursion_pending();  // one level down, as the reader goes
        if (auto n = numbered(it->path().string())) out.push_back(*n);
      }
    } else if (auto n = numbered(p)) {
      out.push_back(*n);
    }
  }
  return out;
}

class GapCounter {
 public:
  // After a round: the files that were settled (shipped, now or before),
  // and what the directories hold now.
  // A process first seen after the first round began after the follow did:
  // every file it numbered, from 0, is the follow's to ship. One seen in the
  // first round may have had files deleted (or shipped) before: those below
  // its lowest file then are not counted.
  void round(const std::vector<std::string>& settled, const std::vector<Numbered>& now) {
    auto series = [this](const std::string& name) -> Series& {
      auto [it, added] = series_.try_emplace(name);
      if (added && !first_) it->second.low = 0;
      return it->second;
    };
    for (const std::string& p : settled)
      if (auto n = numbered(p)) {
        Series& s = series(n->series);
        s.settled.insert(n->number);
        s.low = std::min(s.low, n->number);
      }
    std::map<std::string, std::set<uint64_t>> present;
    for (const Numbered& n : now) {
      Series& s = series(n.series);
      s.low = std::min(s.low, n.number);
      s.high = std::max(s.high, n.number);
      present[n.series].insert(n.number);
    }
    first_ = false;
    for (auto& [name, s] : series_) {
      if (s.low == UINT64_MAX) continue;
      const std::set<uint64_t>& here = present[name];
      for (uint64_t n = std::max(s.low, s.checked_below); n < s.high; ++n) {
        if (s.settled.count(n) || here.count(n) || s.lost.count(n)) continue;
        s.lost.insert(n);
        ++deleted_;
      }
      // Below the lowest file still there, nothing changes any more.
      const uint64_t lowest = here.empty() ? s.high : *here.begin();
      s.checked_below = std::max(s.checked_below, lowest);
      s.settled.erase(s.settled.begin(), s.settled.lower_bound(s.checked_below));
      s.lost.erase(s.lost.begin(), s.lost.lower_bound(s.checked_below));
    }
  }
  uint64_t deleted() const { return deleted_; }

 private:
  struct Series {
    uint64_t low = UINT64_MAX, high = 0, checked_below = 0;
    std::set<uint64_t> settled, lost;
  };
  std::map<std::string, Series> series_;
  uint64_t deleted_ = 0;
  bool first_ = true;
};

}  // namespace

void follow_ship(const std::vector<std::string>& paths, const ShipOptions& options, uint64_t interval_ns,
                 const std::atomic<bool>& stop, const std::function<void(const FollowRound&)>& on_round) {
  GapCounter gaps;
  ShipOptions o = options;
  for (bool last = false; !last;) {
    last = stop.load();
    FollowRound round;
    round.result = ship_files(paths, o);
    if (round.result.ok) {
      gaps.round(round.result.settled_paths, list(paths));
      o.create_schema = false;  // made (or checked) once
    }
    round.deleted_unshipped = gaps.deleted();
    round.last = last;
    on_round(round);
    // Sleep in short steps so that a stop is seen within 50 ms.
    const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(interval_ns);
    while (!last && !stop.load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace ringprof
