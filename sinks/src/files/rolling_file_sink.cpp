// rolling_file_sink.cpp — the default sink: a size-capped rolling set of files.
//
// Files: `<dir>/ringprof-<pid>-<start UTC YYYYmmddTHHMMSS>-<seq>.rpf`. A file
// is written as `<name>.rpf.part` and renamed to `<name>.rpf` once sealed (on
// rotation and at end_session), so a log shipper only ever sees complete
// files. Each file starts with a file-start segment and restates every
// string, location and thread name it uses, so it decodes alone and the
// oldest can be deleted at any moment.
//
// Budget: all ringprof files in the directory (ours, leftovers of earlier
// runs, other processes') plus the file being written stay within max_bytes.
// Before a frame is written the oldest files are deleted until it fits.
//
// Disk trouble (full, quota, unwritable, directory removed, RLIMIT_FSIZE)
// must never crash or stall the application: the sink prints one warning per
// episode, cuts the file back to its last whole frame, refuses batches (the
// drainer counts their events as dropped) and tries again after a second.
//
// All calls except stats() come from the drainer thread, one at a time.
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <new>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "codec/crash_segment.h"
#include "files/directory_budget.h"
#include "control/trigger_inbox.h"
#include "files/posix_file.h"
#include "ringprof/segment_codec.h"
#include "ringprof/ringprof.h"
#include "ringprof/sinks.h"
#include "files/utc_stamp.h"

namespace ringprof {
namespace {

// Names skipped (planted files, leftovers) before giving up on opening one.
constexpr int kMaxNameAttempts = 1000;


class RollingFileSink final : public Sink {
 public:
  explicit RollingFileSink(const Config& config)
      : dir_(config.dir.empty() ? std::string(".") : config.dir),
        max_bytes_(config.max_bytes),
        file_bytes_(std::min(config.file_bytes, config.max_bytes)),
        retry_after_ns_(uint64_t{config.io_retry_ms} * 1000000ull),
        watch_triggers_(config.ops.trigger_poll_ms != 0),
        encoder_(config.zstd_level),
        crash_scratch_(new (std::nothrow) crash_segment::Scratch) {}

  ~RollingFileSink() override {
    if (active_) end_session();
  }

  void begin_session(const SessionInfo& session) override {
    if (active_) end_session();
    session_ = session;
    prefix_ = dir_ + "/ringprof-" + std::to_string(session.pid) + "-" + utc_stamp(session.start_realtime_ns) + "-";
    next_seq_ = 0;
    active_ = true;
    troubled_ = false;
    retry_at_ns_ = 0;
    if (const int err = prepare_directory(); err != 0) enter_trouble(dir_, err);
    inbox_.open(dir_, session.pid, watch_triggers_);
    prepare_crash_file();
  }

  bool write(const Batch& batch) override {
    if (!active_ || (retry_at_ns_ != 0 && internal::monotonic_ns() < retry_at_ns_)) return refuse();
    retry_at_ns_ = 0;

    if (fd_ < 0) {
      if (needs_scan_) {
        if (const int err = prepare_directory(); err != 0) return fail(dir_, err);
      }
      if (const int err = open_next_file(); err != 0) return fail(last_path_, err);
    }
    // A removed directory (rm -rf) leaves our open file with no name: writes
    // would still succeed, into nothing. Check before trusting the file.
    struct stat st;
    if (fstat(fd_, &st) != 0 || st.st_nlink == 0) return fail(part_path_, ENOENT);

    if (!encode(batch)) return refuse();
    if (frame_.size() > max_bytes_) {
      // No amount of deleting makes room for it. Not disk trouble, so no
      // back-off, but say so once: the budget is set too small.
      encoder_.rollback_last();
      if (!warned_oversize_) {
        std::fprintf(stderr,
                     "ringprof: warning: a %zu-byte segment exceeds RINGPROF_MAX_BYTES=%llu in %s; such segments are "
                     "dropped and counted (raise the budget or lower RINGPROF_BATCH_EVENTS)\n",
                     frame_.size(), static_cast<unsigned long long>(max_bytes_), dir_.c_str());
        warned_oversize_ = true;
      }
      return refuse();
    }

    // Rotate when this frame would overflow the file (or RLIMIT_FSIZE, so
    // the limit ends files early instead of failing them).
    const uint64_t fsize_limit = posix::file_size_limit();
    const uint64_t file_limit = std::min(file_bytes_, fsize_limit);
    if (frames_ > 0 && size_ + frame_.size() > file_limit) {
      if (!rotate_and_reencode(batch)) return false;
    }

    // Budget: delete the oldest files; if ours is still too large, seal it
    // so it becomes deletable too, and try once more in a fresh file.
    if (!make_room()) {
      if (frames_ > 0) {
        if (!rotate_and_reencode(batch)) return false;
        if (!make_room()) {
          encoder_.rollback_last();
          return refuse_over_budget();
        }
      } else {
        encoder_.rollback_last();
        return refuse_over_budget();
      }
    }

    // Never write past RLIMIT_FSIZE: the kernel would raise SIGXFSZ.
    if (size_ + frame_.size() > fsize_limit) {
      encoder_.rollback_last();
      return fail(part_path_, EFBIG);
    }

    if (const int err = posix::write_all(fd_, frame_.data(), frame_.size()); err != 0) {
      // Leave no torn frame behind: cut back to the last whole one, and put
      // the offset back there in case the file is written again.
      if (ftruncate(fd_, static_cast<off_t>(size_)) == 0) lseek(fd_, static_cast<off_t>(size_), SEEK_SET);
      encoder_.rollback_last();
      return fail(part_path_, err);
    }
    size_ += frame_.size();
    ++frames_;
    next_sequence_ = batch.sequence + 1;
    troubled_ = false;  // the episode is over; the next trouble warns again
    batches_written_.fetch_add(1, std::memory_order_relaxed);
    bytes_written_.fetch_add(frame_.size(), std::memory_order_relaxed);
    return true;
  }

  // write() hands every frame to the kernel straight away, so there is
  // nothing buffered here. No fsync: it could stall the drainer for seconds
  // on a busy disk; the page cache survives the process crashing.
  void flush() override {}

  void end_session() override {
    close_current();
    inbox_.close();
    active_ = false;
  }

  bool poll_trigger(TriggerRequest* out) override { return active_ && inbox_.poll(out); }
  void acknowledge_trigger(uint64_t window_id) override { inbox_.answer(window_id); }
  int trigger_wait_fd() override { return active_ ? inbox_.wait_fd() : -1; }

  // Fatal-signal path (async-signal-safe): the crash segment goes into the
  // file being written; with none open, into a file of its own that starts
  // with the file-start frame prepared at begin_session. It stays `.part`
  // (like any file whose writer died) and decodes alone.
  bool write_crash(const CrashInfo& info, const CrashEventSource& source) noexcept override {
    if (!active_ || !crash_scratch_) return false;
    int fd = fd_;
    if (fd < 0) {
      if (crash_start_frame_.empty()) return false;
      fd = ::open(crash_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) return false;
      // The prepared frame's sequence is restamped to follow what was written.
      crash_start_header_.sequence = next_sequence_;
      format::write_frame_header(crash_start_header_, crash_start_frame_.data());
      if (posix::write_all(fd, crash_start_frame_.data(), crash_start_frame_.size()) != 0) return false;
    }
    return crash_segment::write(fd, info, source, session_.pid, next_sequence_, *crash_scratch_);
  }

  SinkStats stats() const override {
    SinkStats s;
    s.batches_written = batches_written_.load(std::memory_order_relaxed);
    s.batches_failed = batches_failed_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    s.files_sealed = files_sealed_.load(std::memory_order_relaxed);
    s.files_deleted = files_deleted_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  // Everything write_crash() needs but cannot make inside a signal handler.
  void prepare_crash_file() {
    crash_path_ = prefix_ + "crash" + format::kPartSuffix;
    crash_start_frame_.clear();
    SegmentEncoder start(SegmentEncoder::kStored);  // no zstd at every start for a file rarely written
    start.start_file(session_);
    Batch empty;
    empty.sequence = 0;
    if (start.encode(empty, crash_start_frame_) == 0) crash_start_frame_.clear();
    if (auto h = format::parse_frame_header(crash_start_frame_, nullptr)) crash_start_header_ = *h;
    else crash_start_frame_.clear();
  }

  bool encode(const Batch& batch) {
    frame_.clear();
    return encoder_.encode(batch, frame_) != 0;
  }

  // Creates the directory when missing and learns what it holds.
  int prepare_directory() {
    if (const int err = posix::make_dirs(dir_); err != 0) return err;
    if (const int err = budget_.scan(dir_); err != 0) return err;
    needs_scan_ = false;
    return 0;
  }

  // Opens the next free name. O_EXCL|O_NOFOLLOW: never reuse, never follow a
  // planted symlink; 0644: nobody else may write into our trace.
  int open_next_file() {
    for (int attempt = 0; attempt < kMaxNameAttempts; ++attempt) {
      char seq[16];
      std::snprintf(seq, sizeof seq, "%06u", next_seq_++);
      const std::string base = prefix_ + seq;
      last_path_ = base + format::kPartSuffix;
      struct stat st;
      if (lstat((base + format::kFileSuffix).c_str(), &st) == 0) continue;  // sealed name taken
      const int fd = ::open(last_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
      if (fd < 0) {
        if (errno == EEXIST) continue;
        return errno;
      }
      fd_ = fd;
      part_path_ = last_path_;
      final_path_ = base + format::kFileSuffix;
      size_ = 0;
      frames_ = 0;
      encoder_.start_file(session_);
      return 0;
    }
    return EEXIST;
  }

  // Seals the current file: renamed to its final name when it holds frames,
  // removed when empty. Either way it leaves the "being written" role and,
  // when kept, joins the budget as the newest file.
  void close_current() {
    if (fd_ < 0) return;
    struct stat st;
    const bool have_stat = fstat(fd_, &st) == 0;
    const bool unlinked = have_stat && st.st_nlink == 0;
    const uint64_t bytes = have_stat ? static_cast<uint64_t>(st.st_size) : size_;
    ::close(fd_);
    fd_ = -1;
    if (!unlinked) {
      if (frames_ == 0) {
        unlink(part_path_.c_str());
      } else if (posix::rename_no_replace(part_path_, final_path_) == 0) {
        files_sealed_.fetch_add(1, std::memory_order_relaxed);
        budget_.add(final_path_, bytes);
      } else {
        budget_.add(part_path_, bytes);  // still counted, still deletable
      }
    }
    size_ = 0;
    frames_ = 0;
    // Look at the directory again before the next file: other processes
    // (DDP ranks sharing one directory, say) add files, and the budget is
    // for all of them together.
    needs_scan_ = true;
  }

  // Seals the current file, opens the next and encodes `batch` again as its
  // file start (the last encode was for the old file and is undone first).
  bool rotate_and_reencode(const Batch& batch) {
    encoder_.rollback_last();
    close_current();
    if (needs_scan_) {
      if (const int err = prepare_directory(); err != 0) return fail(dir_, err);
    }
    if (const int err = open_next_file(); err != 0) return fail(last_path_, err);
    if (!encode(batch)) return refuse();
    return true;
  }

  // Deletes oldest files until the current frame fits the budget.
  bool make_room() {
    while (budget_.total() + size_ + frame_.size() > max_bytes_) {
      if (!budget_.delete_oldest()) return false;
      files_deleted_.fetch_add(1, std::memory_order_relaxed);
    }
    return true;
  }

  // Files we cannot delete (another owner, read-only) fill the budget.
  bool refuse_over_budget() {
    if (!warned_budget_) {
      std::fprintf(stderr,
                   "ringprof: warning: %s holds more than RINGPROF_MAX_BYTES=%llu in files ringprof cannot delete; "
                   "events are dropped and counted until there is room\n",
                   dir_.c_str(), static_cast<unsigned long long>(max_bytes_));
      warned_budget_ = true;
    }
    return refuse();
  }

  bool refuse() {
    batches_failed_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }

  // Disk trouble: the caller has already undone the encoder. Close the file
  // (a retry starts a new one), warn once per episode, back off.
  bool fail(const std::string& path, int err) {
    close_current();
    enter_trouble(path, err);
    return refuse();
  }

  void enter_trouble(const std::string& path, int err) {
    if (!troubled_) {
      std::fprintf(stderr,
                   "ringprof: warning: cannot write %s: %s; events are dropped and counted until writing works "
                   "again\n",
                   path.c_str(), std::strerror(err));
      troubled_ = true;
    }
    needs_scan_ = true;  // the directory may have changed (removed, cleaned up)
    retry_at_ns_ = internal::monotonic_ns() + retry_after_ns_;
  }

  const std::string dir_;
  const uint64_t max_bytes_;
  const uint64_t file_bytes_;
  // How long to refuse batches after disk trouble before trying again
  // (Config::io_retry_ms): long enough not to hammer a full disk, short
  // enough to lose little once it clears.
  const uint64_t retry_after_ns_;
  // Triggers are looked for (RINGPROF_TRIGGER_POLL_MS != 0): the inbox keeps
  // an inotify instance, one of the user's fs.inotify.max_user_instances.
  const bool watch_triggers_;
  SegmentEncoder encoder_;
  std::vector<uint8_t> frame_;
  DirectoryBudget budget_;

  SessionInfo session_;
  std::string prefix_;
  uint32_t next_seq_ = 0;
  bool active_ = false;

  int fd_ = -1;
  std::string part_path_, final_path_, last_path_;
  uint64_t size_ = 0;    // bytes of whole frames in the current file
  uint64_t frames_ = 0;  // frames in the current file

  bool troubled_ = false;     // inside a trouble episode (warned already)
  bool warned_oversize_ = false;
  bool warned_budget_ = false;
  bool needs_scan_ = true;    // rescan the directory before the next file
  uint64_t retry_at_ns_ = 0;  // refuse batches until then (0: not backing off)

  // stats() may be called from another thread than the drainer's.
  // Crash path and trigger requests.
  std::unique_ptr<crash_segment::Scratch> crash_scratch_;
  std::string crash_path_;                   // a file of its own for a crash before any file was opened
  std::vector<uint8_t> crash_start_frame_;   // its file-start frame, encoded in advance
  format::FrameHeader crash_start_header_;   // that frame's header, restamped at the crash
  uint64_t next_sequence_ = 0;               // of the next segment (crash segments take it)
  TriggerInbox inbox_;

  std::atomic<uint64_t> batches_written_{0}, batches_failed_{0}, bytes_written_{0}, files_sealed_{0},
      files_deleted_{0};
};

}  // namespace

std::shared_ptr<Sink> make_rolling_file_sink(const Config& config) {
  return std::make_shared<RollingFileSink>(config);
}

}  // namespace ringprof
