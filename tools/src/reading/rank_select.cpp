#include "ringprof/tools/rank_select.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <unordered_set>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {
namespace {

std::optional<int32_t> parse_rank(const std::string& text) {
  int32_t v = 0;
  const char* end = text.data() + text.size();
  const auto r = std::from_chars(text.data(), end, v);
  if (text.empty() || r.ec != std::errc() || r.ptr != end || v < 0) return std::nullopt;
  return v;
}

// Ranges wider than this are refused: a typo ("0-2000000000") must not
// make a list of two billion ranks.
constexpr int64_t kMaxRanks = 1 << 20;

}  // namespace

std::optional<std::vector<int32_t>> parse_rank_list(const std::string& text, std::string* error) {
  std::set<int32_t> ranks;
  size_t start = 0;
  for (;;) {
    const size_t comma = text.find(',', start);
    const std::string part = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    const size_t dash = part.find('-');
    const std::optional<int32_t> low = parse_rank(part.substr(0, dash));
    const std::optional<int32_t> high = dash == std::string::npos ? low : parse_rank(part.substr(dash + 1));
    if (!low || !high || *high < *low || int64_t{*high} - *low >= kMaxRanks ||
        int64_t(ranks.size()) + (*high - *low) >= kMaxRanks) {
      *error = "bad rank list '" + text + "' at '" + part + "' (try 0,2,5-7)";
      return std::nullopt;
    }
    for (int64_t r = *low; r <= *high; ++r) ranks.insert(static_cast<int32_t>(r));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return std::vector<int32_t>(ranks.begin(), ranks.end());
}

RankSelection select_ranks(const std::vector<std::string>& paths, const std::vector<int32_t>& ranks) {
  RankSelection out;
  const TraceReader reader(paths);  // probes the first frames only
  const std::set<int32_t> wanted(ranks.begin(), ranks.end());
  std::set<int32_t> present;
  for (const ProcessState& p : reader.processes())
    if (p.rank && p.rank->rank >= 0) present.insert(p.rank->rank);
  std::vector<bool> file_kept(reader.files().size(), false);
  for (size_t i = 0; i < reader.files().size(); ++i) {
    const FileSummary& f = reader.files()[i];
    if (f.process == SIZE_MAX) {
      file_kept[i] = true;  // no readable frame: the reader says so
    } else {
      const ProcessState& p = reader.processes()[f.process];
      file_kept[i] = p.rank && wanted.count(p.rank->rank) != 0;
    }
  }
  // A path that yielded no file at all (missing, or a directory without
  // ringprof files) stays, so the reader reports it as it would have. A
  // path yielded a file when the file is the path itself, the path sealed
  // (a .part file renamed since it was named: the reader followed it), or
  // under it (a directory, or its per-rank directories).
  std::unordered_set<std::string> file_paths;
  for (const FileSummary& f : reader.files()) file_paths.insert(f.path);
  for (const std::string& path : paths) {
    bool yielded = file_paths.count(path) != 0 ||
                   (path.ends_with(".part") && file_paths.count(path.substr(0, path.size() - 5)) != 0);
    const std::string prefix = path.ends_with('/') ? path : path + '/';
    for (size_t i = 0; !yielded && i < reader.files().size(); ++i) yielded = reader.files()[i].path.starts_with(prefix);
    if (!yielded) out.paths.push_back(path);
  }
  for (size_t i = 0; i < reader.files().size(); ++i)
    if (file_kept[i]) out.paths.push_back(reader.files()[i].path);
  out.present.assign(present.begin(), present.end());
  for (int32_t r : ranks)
    if (!present.count(r)) out.missing.push_back(r);
  return out;
}

std::string format_rank_list(const std::vector<int32_t>& ranks) {
  std::string out;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(ranks[i]);
    if (j > i) out += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace ringprof
