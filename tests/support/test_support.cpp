#include "support/test_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

namespace fs = std::filesystem;

namespace ringprof::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ringprof-test-XXXXXX";
  if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Tests may leave read-only directories behind; make them removable first.
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

std::string shell_quote(const std::string& arg) {
  std::string q = "'";
  for (char c : arg) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

CommandResult run_command(const std::string& command) {
  TempDir tmp;
  const std::string out_path = tmp.file("out"), err_path = tmp.file("err");
  const std::string full = "( " + command + " ) >" + shell_quote(out_path) + " 2>" + shell_quote(err_path);
  const int status = std::system(full.c_str());
  CommandResult r;
  if (status != -1 && WIFEXITED(status))
    r.exit_code = WEXITSTATUS(status);
  else if (status != -1 && WIFSIGNALED(status))
    r.exit_code = 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}

std::vector<std::string> list_files(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      names.push_back(e.path().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace ringprof::test

#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof::test {

void tally_file(const std::string& path, FileTally& tally) {
  const std::vector<uint8_t> bytes = read_file(path);
  ++tally.files;
  std::vector<std::string> strings;
  std::map<uint32_t, std::string> thread_names;
  size_t off = 0;
  bool bad = false;
  while (off < bytes.size()) {
    std::string error;
    if (bytes.size() - off < format::kHeaderSize) {
      error = "torn frame header";
    } else if (auto h = format::parse_frame_header({bytes.data() + off, bytes.size() - off}, &error)) {
      if (bytes.size() - off - h->header_size < h->stored_size) {
        error = "torn frame payload";
      } else {
        DecodedSegment seg;
        if (decode_segment(*h, {bytes.data() + off + h->header_size, h->stored_size}, strings, seg, &error)) {
          ++tally.frames;
          for (const DecodedThread& t : seg.threads) {
            if (t.has_name) thread_names[t.index] = t.name;
            tally.dropped_ring += t.dropped_ring;
            tally.dropped_io += t.dropped_io;
            tally.samples_lost += t.samples_lost;
          }
          for (const DecodedEvent& e : seg.events) {
            ++tally.events;
            ++tally.by_kind[static_cast<int>(e.kind)];
            // Stack samples are tallied apart: the per-thread counts are the
            // events the threads recorded.
            if (e.kind == EventKind::Sample)
              ++tally.samples;
            else
              ++tally.by_thread_name[thread_names[e.thread_index]];
          }
          off += h->header_size + h->stored_size;
          continue;
        }
      }
    }
    tally.problems.push_back(path + ": offset " + std::to_string(off) + ": " + error);
    bad = true;
    break;  // the tools resynchronise; the tests only need to know where it broke
  }
  if (bad) tally.files_with_problems.push_back(path);
}

FileTally tally_dir(const std::string& dir, bool include_part) {
  FileTally tally;
  for (const std::string& f : list_files(dir, ".rpf")) tally_file(f, tally);
  if (include_part)
    for (const std::string& f : list_files(dir, ".rpf.part")) tally_file(f, tally);
  return tally;
}

}  // namespace ringprof::test
