// ringprof/tools/rank_select.h — the `--rank LIST` selection every command that
// reads PATH... shares: keep the files of the processes whose rank is in the
// list, as their files first state it (ringprof/rank.h), and nothing else of
// a distributed job. Ranks are numbers: with files of two jobs, both jobs'
// processes of those ranks are kept. It works on paths, before any command reads: each
// command, and each library function that takes paths, sees only those
// ranks' files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ringprof {

// "0,2,5-7" → {0, 2, 5, 6, 7}: comma-separated ranks and inclusive ranges,
// sorted, each once. nullopt, with `error` saying which part is wrong, when
// the text is empty, a part is not a number below 2^31 or a range runs
// backwards.
std::optional<std::vector<int32_t>> parse_rank_list(const std::string& text, std::string* error);

struct RankSelection {
  // The files of the selected ranks' processes; also the paths the reader
  // must still see to report them: a file with no readable frame, a path that
  // does not exist, a directory that holds no ringprof file.
  std::vector<std::string> paths;
  std::vector<int32_t> missing;  // asked for, but stated by no process
  std::vector<int32_t> present;  // every rank some process states, sorted, each once
};
RankSelection select_ranks(const std::vector<std::string>& paths, const std::vector<int32_t>& ranks);

// "0-3,5" for {0, 1, 2, 3, 5}: runs of ranks as ranges, as --rank takes them.
std::string format_rank_list(const std::vector<int32_t>& ranks);

}  // namespace ringprof
