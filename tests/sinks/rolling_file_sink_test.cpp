// Rolling-file sink: rotation and sealing, the byte budget, safe file
// creation, and disk trouble (uncreatable or removed directory,
// RLIMIT_FSIZE) with one warning, dropped batches and recovery.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/owned_batch.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"
#include "support/test_support.h"

namespace fs = std::filesystem;

namespace ringprof {
namespace {

using test::TempDir;

constexpr uint32_t kPid = 31337;
constexpr uint64_t kStartRealtime = 1700000000ull * 1000000000ull;  // 2023-11-14T22:13:20Z
const std::string kNamePrefix = "ringprof-31337-20231114T221320-";

SessionInfo session() {
  SessionInfo s;
  s.pid = kPid;
  s.hostname = "h";
  s.command_line = {"prog"};
  s.start_realtime_ns = kStartRealtime;
  s.ringprof_version = "test";
  return s;
}

// Owns what a Batch points to. Every batch uses a new location (new strings)
// and noisy values, so frames are a few hundred bytes and do not shrink to
// nothing under zstd.
using BatchData = ringprof::test::OwnedBatch;

class BatchMaker {
 public:
  // `events` per batch; the batch's sequence is its index.
  BatchData next(uint32_t events = 40) {
    BatchData d;
    d.sequence = seq_++;
    const uint32_t loc_id = static_cast<uint32_t>(locations_.size() + 1);
    locations_.push_back(Location{loc_id, "zone_" + std::to_string(loc_id) + "_" + std::string(20, 'a' + loc_id % 26),
                                  "fn_" + std::to_string(loc_id), "file_" + std::to_string(loc_id % 3) + ".cpp",
                                  loc_id});
    d.locations = locations_;
    d.threads.push_back(ThreadInfo{1, 1001, "main", 1, 0, 0});
    d.runs.push_back(EventRun{1, 0, events});
    for (uint32_t i = 0; i < events; ++i) {
      rng_ = rng_ * 6364136223846793005ull + 1442695040888963407ull;
      ts_ += 1 + (rng_ >> 50);
      Event e{};
      e.ts = ts_;
      e.kind = i % 2 ? EventKind::Counter : EventKind::ZoneBegin;
      e.loc = i % 4 == 0 ? loc_id : 1 + static_cast<uint32_t>((rng_ >> 20) % loc_id);
      e.p1 = rng_;
      d.events.push_back(e);
    }
    return d;
  }
  uint64_t sequence() const { return seq_; }

 private:
  std::vector<Location> locations_;
  uint64_t seq_ = 0;
  uint64_t ts_ = 1'000'000'000;
  uint64_t rng_ = 12345;
};

Config config_for(const std::string& dir, uint64_t max_bytes, uint64_t file_bytes) {
  Config c;
  c.dir = dir;
  c.max_bytes = max_bytes;
  c.file_bytes = file_bytes;
  c.zstd_level = 1;
  // Retry at the next write after disk trouble, so the tests need not wait
  // out a back-off; RecoversAfterTheDirectoryIsRemoved checks the back-off.
  c.io_retry_ms = 0;
  return c;
}

bool has_suffix(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// All ringprof files (sealed and part) in `dir`, name -> size.
std::map<std::string, uint64_t> ringprof_files(const std::string& dir) {
  std::map<std::string, uint64_t> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (has_suffix(n, format::kFileSuffix) || has_suffix(n, format::kPartSuffix))
      out[n] = fs::is_regular_file(e.symlink_status()) ? fs::file_size(e.path()) : 0;
  }
  return out;
}

uint64_t total_bytes(const std::string& dir) {
  uint64_t t = 0;
  for (const auto& [name, size] : ringprof_files(dir)) t += size;
  return t;
}

// Sequence number of one of our files ("...-000012.rpf" -> 12), or -1.
int seq_of(const std::string& name) {
  if (name.rfind(kNamePrefix, 0) != 0) return -1;
  return std::stoi(name.substr(kNamePrefix.size(), 6));
}

struct FileContents {
  std::vector<DecodedSegment> segments;
  uint64_t events = 0;
};

// Decodes a file alone, with a fresh string table, and checks that it is
// self-contained: it opens with a file start, and every location and thread
// its events use is described in the file itself.
::testing::AssertionResult decode_file_alone(const std::string& path, FileContents* out) {
  const std::vector<uint8_t> bytes = test::read_file(path);
  std::vector<std::string> strings;
  std::set<uint32_t> locations, named_threads;
  size_t off = 0;
  while (off < bytes.size()) {
    std::string err;
    auto h = format::parse_frame_header(std::span<const uint8_t>(bytes).subspan(off), &err);
    if (!h) return ::testing::AssertionFailure() << path << " at " << off << ": " << err;
    if (bytes.size() - off - h->header_size < h->stored_size)
      return ::testing::AssertionFailure() << path << " at " << off << ": torn frame";
    DecodedSegment seg;
    if (!decode_segment(*h, std::span<const uint8_t>(bytes).subspan(off + h->header_size, h->stored_size), strings,
                        seg, &err))
      return ::testing::AssertionFailure() << path << " at " << off << ": " << err;
    const bool first = off == 0;
    if (first != ((h->flags & format::kFrameFileStart) != 0) || first != seg.process.has_value())
      return ::testing::AssertionFailure() << path << " at " << off << ": file start flag/process misplaced";
    if (h->pid != kPid) return ::testing::AssertionFailure() << path << ": pid " << h->pid;
    for (const Location& l : seg.locations) locations.insert(l.id);
    for (const DecodedThread& t : seg.threads)
      if (t.has_name) named_threads.insert(t.index);
    for (const DecodedEvent& e : seg.events) {
      if (e.loc != 0 && !locations.count(e.loc))
        return ::testing::AssertionFailure() << path << ": location " << e.loc << " not described in the file";
      if (!named_threads.count(e.thread_index))
        return ::testing::AssertionFailure() << path << ": thread " << e.thread_index << " not named in the file";
    }
    out->events += seg.events.size();
    out->segments.push_back(std::move(seg));
    off += h->header_size + h->stored_size;
  }
  if (out->segments.empty()) return ::testing::AssertionFailure() << path << ": empty";
  return ::testing::AssertionSuccess();
}

size_t count_warnings(const std::string& err) {
  size_t n = 0;
  for (size_t pos = err.find("ringprof: warning: cannot write"); pos != std::string::npos;
       pos = err.find("ringprof: warning: cannot write", pos + 1))
    ++n;
  return n;
}

// Captures what is written to stderr (fd 2) through a pipe, not a file, so
// that RLIMIT_FSIZE tests cannot trip over the capture itself.
class StderrCapture {
 public:
  StderrCapture() {
    std::fflush(stderr);
    if (pipe(fds_) != 0) return;
    saved_ = dup(2);
    dup2(fds_[1], 2);
  }
  ~StderrCapture() { finish(); }
  std::string finish() {
    if (saved_ < 0) return text_;
    std::fflush(stderr);
    dup2(saved_, 2);
    close(saved_);
    saved_ = -1;
    close(fds_[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds_[0], buf, sizeof buf)) > 0) text_.append(buf, static_cast<size_t>(n));
    close(fds_[0]);
    return text_;
  }

 private:
  int fds_[2] = {-1, -1};
  int saved_ = -1;
  std::string text_;
};

// Waits until a back-off of `ms` that began before the call has surely
// passed: time passing is the condition.
void sleep_past_backoff(uint32_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms + ms / 10 + 1)); }

TEST(RollingFileSink, RotatesAndRenamesPartFilesWhenSealed) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 4096));
  sink->begin_session(session());
  BatchMaker maker;
  uint64_t events = 0;
  for (int i = 0; i < 30; ++i) {
    BatchData d = maker.next();
    ASSERT_TRUE(sink->write(d.batch())) << "batch " << i;
    events += d.events.size();
    // Exactly one file is being written; every other one is sealed.
    size_t parts = 0;
    for (const auto& [name, size] : ringprof_files(dir)) parts += has_suffix(name, format::kPartSuffix);
    ASSERT_EQ(parts, 1u);
  }
  sink->flush();
  sink->end_session();

  const auto files = ringprof_files(dir);
  ASSERT_GE(files.size(), 3u);
  uint64_t decoded_events = 0;
  std::vector<uint64_t> sequences;
  int expect_seq = 0;
  for (const auto& [name, size] : files) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(has_suffix(name, format::kFileSuffix));
    EXPECT_FALSE(has_suffix(name, format::kPartSuffix));
    EXPECT_EQ(seq_of(name), expect_seq++);
    FileContents fc;
    ASSERT_TRUE(decode_file_alone(dir + "/" + name, &fc));
    // A file never exceeds file_bytes unless its only frame does.
    if (fc.segments.size() > 1) {
      EXPECT_LE(size, 4096u);
    }
    decoded_events += fc.events;
    for (const auto& s : fc.segments) sequences.push_back(s.header.sequence);
  }
  EXPECT_EQ(decoded_events, events);
  ASSERT_EQ(sequences.size(), 30u);
  for (size_t i = 0; i < sequences.size(); ++i) EXPECT_EQ(sequences[i], i);

  const SinkStats st = sink->stats();
  EXPECT_EQ(st.batches_written, 30u);
  EXPECT_EQ(st.batches_failed, 0u);
  EXPECT_EQ(st.files_sealed, files.size());
  EXPECT_EQ(st.files_deleted, 0u);
  EXPECT_EQ(st.bytes_written, total_bytes(dir));
}

TEST(RollingFileSink, ByteBudgetIsNeverExceededAndOldestGoFirst) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  // Leftovers of earlier processes count against the budget and, being the
  // oldest, are deleted first. Unrelated files are neither counted nor touched.
  const std::vector<uint8_t> junk(3000, 0x5a);
  test::write_file(dir + "/ringprof-7-20200101T000000-000000.rpf", junk);
  test::write_file(dir + "/ringprof-8-20200101T000000-000003.rpf.part", junk);
  test::write_file(dir + "/notes.txt", junk);
  const struct timespec old_times[2] = {{1000000000, 0}, {1000000000, 0}};
  const struct timespec older_times[2] = {{900000000, 0}, {900000000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, (dir + "/ringprof-7-20200101T000000-000000.rpf").c_str(), older_times, 0), 0);
  ASSERT_EQ(utimensat(AT_FDCWD, (dir + "/ringprof-8-20200101T000000-000003.rpf.part").c_str(), old_times, 0), 0);

  const uint64_t max_bytes = 16 * 1024;
  auto sink = make_rolling_file_sink(config_for(dir, max_bytes, 4096));
  sink->begin_session(session());
  BatchMaker maker;
  bool leftover7_gone_first = false, leftover8_gone_before_ours = false;
  int lowest_seq = 0;
  for (int i = 0; i < 80; ++i) {
    BatchData d = maker.next();
    ASSERT_TRUE(sink->write(d.batch())) << "batch " << i;
    ASSERT_LE(total_bytes(dir), max_bytes) << "after batch " << i;
    const auto files = ringprof_files(dir);
    const bool has7 = files.count("ringprof-7-20200101T000000-000000.rpf") != 0;
    const bool has8 = files.count("ringprof-8-20200101T000000-000003.rpf.part") != 0;
    if (!has7 && has8) leftover7_gone_first = true;
    // Our files always form a contiguous run of sequence numbers ending at
    // the newest: whatever was deleted was the oldest.
    std::vector<int> ours;
    for (const auto& [name, size] : files)
      if (seq_of(name) >= 0) ours.push_back(seq_of(name));
    ASSERT_FALSE(ours.empty());
    for (size_t k = 1; k < ours.size(); ++k) ASSERT_EQ(ours[k], ours[k - 1] + 1) << "after batch " << i;
    ASSERT_GE(ours.front(), lowest_seq);
    if (ours.front() > 0 && !has8 && !has7) leftover8_gone_before_ours = true;
    if (ours.front() > 0) {
      ASSERT_FALSE(has7 || has8) << "ours deleted while an older leftover remained";
    }
    lowest_seq = ours.front();
  }
  sink->end_session();
  EXPECT_TRUE(leftover7_gone_first);
  EXPECT_TRUE(leftover8_gone_before_ours);
  EXPECT_GT(lowest_seq, 0);
  EXPECT_TRUE(fs::exists(dir + "/notes.txt"));
  EXPECT_LE(total_bytes(dir), max_bytes);

  // Every remaining file decodes alone, with its own string table.
  const auto files = ringprof_files(dir);
  ASSERT_GE(files.size(), 2u);
  uint64_t last_sequence = 0;
  for (const auto& [name, size] : files) {
    SCOPED_TRACE(name);
    EXPECT_TRUE(has_suffix(name, format::kFileSuffix));
    FileContents fc;
    ASSERT_TRUE(decode_file_alone(dir + "/" + name, &fc));
    EXPECT_EQ(fc.segments.front().strings.front().first, 1u);  // a fresh table, from id 1
    last_sequence = fc.segments.back().header.sequence;
  }
  EXPECT_EQ(last_sequence, 79u);  // the newest data is what survives
  const SinkStats st = sink->stats();
  EXPECT_EQ(st.batches_written, 80u);
  EXPECT_EQ(st.files_deleted, static_cast<uint64_t>(lowest_seq) + 2);  // ours below lowest_seq, plus 2 leftovers
}

TEST(RollingFileSink, FrameLargerThanTheWholeBudgetIsRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  auto sink = make_rolling_file_sink(config_for(dir, 1000, 1000));
  sink->begin_session(session());
  BatchMaker maker;
  StderrCapture capture;
  EXPECT_FALSE(sink->write(maker.next(400).batch()));
  const std::string err = capture.finish();
  EXPECT_EQ(count_warnings(err), 0u) << "not disk trouble";
  EXPECT_EQ(total_bytes(dir), 0u);
  // Small batches still fit.
  EXPECT_TRUE(sink->write(maker.next(1).batch()));
  sink->end_session();
  EXPECT_EQ(sink->stats().batches_failed, 1u);
  EXPECT_EQ(sink->stats().batches_written, 1u);
  EXPECT_LE(total_bytes(dir), 1000u);
}

TEST(RollingFileSink, FilesHaveNoGroupOrOtherWrite) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  const mode_t old_umask = umask(0);  // the sink itself must ask for 0644
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 1 << 20));
  sink->begin_session(session());
  BatchMaker maker;
  const bool ok = sink->write(maker.next().batch());
  umask(old_umask);
  ASSERT_TRUE(ok);
  struct stat st;
  const std::string part = dir + "/" + kNamePrefix + "000000" + format::kPartSuffix;
  ASSERT_EQ(stat(part.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  sink->end_session();
  const std::string sealed = dir + "/" + kNamePrefix + "000000" + format::kFileSuffix;
  ASSERT_EQ(stat(sealed.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0644u);
  EXPECT_EQ(st.st_mode & (S_IWGRP | S_IWOTH), 0u);
}

TEST(RollingFileSink, SymlinksPlantedAtItsFileNamesAreNotFollowed) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  fs::create_directories(dir);
  const std::string victim = tmp.file("victim");
  test::write_file(victim, {'k', 'e', 'e', 'p'});
  // At the first part name, and at the sealed name of the second.
  const std::string planted_part = dir + "/" + kNamePrefix + "000000" + format::kPartSuffix;
  const std::string planted_final = dir + "/" + kNamePrefix + "000001" + format::kFileSuffix;
  ASSERT_EQ(symlink(victim.c_str(), planted_part.c_str()), 0);
  ASSERT_EQ(symlink(victim.c_str(), planted_final.c_str()), 0);

  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 1 << 20));
  sink->begin_session(session());
  BatchMaker maker;
  ASSERT_TRUE(sink->write(maker.next().batch()));
  sink->end_session();

  EXPECT_EQ(test::read_text(victim), "keep");
  EXPECT_TRUE(fs::is_symlink(planted_part));
  EXPECT_TRUE(fs::is_symlink(planted_final));
  const std::string used = dir + "/" + kNamePrefix + "000002" + format::kFileSuffix;
  ASSERT_TRUE(fs::is_regular_file(fs::symlink_status(used)));
  FileContents fc;
  EXPECT_TRUE(decode_file_alone(used, &fc));
}

TEST(RollingFileSink, UncreatableDirectoryRefusesWritesWithOneWarning) {
  TempDir tmp;
  test::write_file(tmp.file("file"), {'x'});
  const std::string dir = tmp.file("file") + "/sub";  // a directory under a regular file
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 1 << 20));
  BatchMaker maker;
  StderrCapture capture;
  sink->begin_session(session());
  EXPECT_FALSE(sink->write(maker.next().batch()));
  EXPECT_FALSE(sink->write(maker.next().batch()));  // retried (no back-off), still failing: no new warning
  EXPECT_FALSE(sink->write(maker.next().batch()));
  EXPECT_FALSE(sink->write(maker.next().batch()));
  sink->end_session();
  const std::string err = capture.finish();
  EXPECT_EQ(count_warnings(err), 1u) << err;
  EXPECT_NE(err.find("cannot write " + dir + ": Not a directory; events are dropped and counted until writing "
                     "works again\n"),
            std::string::npos)
      << err;
  EXPECT_EQ(sink->stats().batches_failed, 4u);
  EXPECT_EQ(sink->stats().batches_written, 0u);
}

TEST(RollingFileSink, RecoversAfterTheDirectoryIsRemoved) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  // The default back-off: batches are refused, without touching the disk,
  // for a second after the trouble is noticed (two writes in a row are far
  // less than a second apart, even on a loaded machine).
  Config config = config_for(dir, 1 << 20, 1 << 20);
  config.io_retry_ms = Config{}.io_retry_ms;
  auto sink = make_rolling_file_sink(config);
  sink->begin_session(session());
  BatchMaker maker;
  ASSERT_TRUE(sink->write(maker.next().batch()));
  ASSERT_TRUE(sink->write(maker.next().batch()));
  fs::remove_all(dir);

  StderrCapture capture;
  EXPECT_FALSE(sink->write(maker.next().batch()));  // notices, warns
  EXPECT_FALSE(sink->write(maker.next().batch()));  // backing off
  EXPECT_FALSE(fs::exists(dir)) << "a batch refused while backing off must not touch the disk";
  sleep_past_backoff(config.io_retry_ms);
  BatchData after = maker.next();
  EXPECT_TRUE(sink->write(after.batch()));  // directory re-created, new file
  EXPECT_TRUE(sink->write(maker.next().batch()));
  const std::string err = capture.finish();
  EXPECT_EQ(count_warnings(err), 1u) << err;
  sink->end_session();

  const auto files = ringprof_files(dir);
  ASSERT_EQ(files.size(), 1u);
  FileContents fc;
  ASSERT_TRUE(decode_file_alone(dir + "/" + files.begin()->first, &fc));
  ASSERT_EQ(fc.segments.size(), 2u);
  EXPECT_EQ(fc.segments[0].header.sequence, after.sequence);
  EXPECT_EQ(sink->stats().batches_failed, 2u);
  EXPECT_EQ(sink->stats().batches_written, 4u);
}

// A real full disk: a 64 KiB tmpfs (needs CAP_SYS_ADMIN; skipped without it).
class TinyTmpfs {
 public:
  explicit TinyTmpfs(const std::string& path) : path_(path) {
    fs::create_directories(path_);
    mounted_ = mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=64k,mode=0755") == 0;
  }
  ~TinyTmpfs() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  bool mounted() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

TEST(RollingFileSink, FullDiskLeavesNoTornFrameAndRecoversWhenSpaceIsFreed) {
  TempDir tmp;
  TinyTmpfs disk(tmp.file("disk"));
  if (!disk.mounted()) GTEST_SKIP() << "cannot mount a tmpfs here";
  const std::string dir = tmp.file("disk") + "/out";
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 24 * 1024));
  sink->begin_session(session());
  BatchMaker maker;
  StderrCapture capture;
  int written = 0;
  bool failed = false;
  for (int i = 0; i < 200 && !failed; ++i) {
    if (sink->write(maker.next(300).batch()))
      ++written;
    else
      failed = true;
  }
  ASSERT_TRUE(failed) << "the disk never filled";
  ASSERT_GT(written, 0);
  EXPECT_FALSE(sink->write(maker.next(300).batch()));  // retried at once (no back-off here): still full

  // Whatever is on the disk is whole frames only, and every file decodes.
  uint64_t events = 0;
  for (const auto& [name, size] : ringprof_files(dir)) {
    FileContents fc;
    EXPECT_TRUE(decode_file_alone(dir + "/" + name, &fc));
    events += fc.events;
  }
  EXPECT_EQ(events, static_cast<uint64_t>(written) * 300);

  // Space is freed (someone cleans up); the next retry writes again.
  for (const auto& [name, size] : ringprof_files(dir)) fs::remove(dir + "/" + name);
  EXPECT_TRUE(sink->write(maker.next(300).batch()));
  const std::string err = capture.finish();
  EXPECT_EQ(count_warnings(err), 1u) << err;
  EXPECT_NE(err.find("No space left on device"), std::string::npos) << err;
  sink->end_session();
  const auto files = ringprof_files(dir);
  ASSERT_EQ(files.size(), 1u);
  FileContents fc;
  EXPECT_TRUE(decode_file_alone(dir + "/" + files.begin()->first, &fc));
}

// Restores RLIMIT_FSIZE (and SIGXFSZ's disposition) whatever the test does.
class FileSizeLimit {
 public:
  FileSizeLimit() {
    getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = signal(SIGXFSZ, SIG_DFL);  // default: the signal would kill the test
  }
  ~FileSizeLimit() {
    setrlimit(RLIMIT_FSIZE, &saved_);
    signal(SIGXFSZ, old_handler_);
  }
  bool set(rlim_t soft) {
    struct rlimit rl = saved_;
    rl.rlim_cur = soft;
    return setrlimit(RLIMIT_FSIZE, &rl) == 0;
  }
  void restore() { setrlimit(RLIMIT_FSIZE, &saved_); }

 private:
  struct rlimit saved_ {};
  sighandler_t old_handler_;
};

TEST(RollingFileSink, FileSizeLimitRefusesWritesWithoutSigxfszThenResumes) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 1 << 20));
  sink->begin_session(session());
  BatchMaker maker;
  FileSizeLimit limit;
  ASSERT_TRUE(limit.set(100));  // smaller than any frame
  StderrCapture capture;
  EXPECT_FALSE(sink->write(maker.next().batch()));
  EXPECT_FALSE(sink->write(maker.next().batch()));  // retried (no back-off), still too large
  EXPECT_FALSE(sink->write(maker.next().batch()));
  EXPECT_EQ(total_bytes(dir), 0u);  // no partial frame anywhere

  limit.restore();  // the "disk" frees up
  BatchData resumed = maker.next();
  EXPECT_TRUE(sink->write(resumed.batch()));
  const std::string err = capture.finish();
  EXPECT_EQ(count_warnings(err), 1u) << err;
  EXPECT_NE(err.find("File too large"), std::string::npos) << err;
  sink->end_session();

  const auto files = ringprof_files(dir);
  ASSERT_EQ(files.size(), 1u);
  FileContents fc;
  ASSERT_TRUE(decode_file_alone(dir + "/" + files.begin()->first, &fc));
  ASSERT_EQ(fc.segments.size(), 1u);
  EXPECT_EQ(fc.segments[0].header.sequence, resumed.sequence);
  EXPECT_EQ(sink->stats().batches_failed, 3u);
}

TEST(RollingFileSink, FileSizeLimitEndsFilesEarlyInsteadOfFailing) {
  TempDir tmp;
  const std::string dir = tmp.file("out");
  auto sink = make_rolling_file_sink(config_for(dir, 1 << 20, 1 << 20));
  sink->begin_session(session());
  BatchMaker maker;
  FileSizeLimit limit;
  ASSERT_TRUE(limit.set(3000));
  for (int i = 0; i < 12; ++i) ASSERT_TRUE(sink->write(maker.next().batch())) << i;
  limit.restore();
  sink->end_session();
  const auto files = ringprof_files(dir);
  EXPECT_GE(files.size(), 3u);
  for (const auto& [name, size] : files) {
    EXPECT_LE(size, 3000u) << name;
    FileContents fc;
    EXPECT_TRUE(decode_file_alone(dir + "/" + name, &fc));
  }
}

}  // namespace
}  // namespace ringprof
