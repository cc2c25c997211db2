#include "ringprof/tools/trace_reader.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <system_error>
#include <thread>
#include <tuple>

#include "reading/frame_scanner.h"
#include "ringprof/tools/progress.h"

namespace fs = std::filesystem;

namespace ringprof {

std::string format_problem(const Problem& p) {
  return "ringprof: " + p.file + ": offset " + std::to_string(p.offset) + ": " + p.reason;
}

// ---- opening ----

namespace {

bool is_ringprof_name(const std::string& name) {
  auto ends_with = [&](const std::string& s) {
    return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  return ends_with(format::kFileSuffix) || ends_with(format::kPartSuffix);
}

// Decodes a frame with a fresh string table; used to read a file start.
bool decode_alone(internal::FrameScanner& scanner, const internal::Frame& frame, DecodedSegment& out) {
  std::vector<uint8_t> payload;
  std::string error;
  if (!scanner.read_payload(frame, payload, &error)) return false;
  std::vector<std::string> strings;
  return decode_segment(frame.header, payload, strings, out, &error);
}

// Opens a file for scanning. A `.part` file that is gone was most likely
// sealed (renamed to its final name) since it was listed: follow it there.
bool open_following_seal(internal::FrameScanner& scanner, FileSummary& file, std::string* error) {
  if (scanner.open(file.path, file.is_part, error)) return true;
  if (!file.is_part || scanner.open_errno() != ENOENT) return false;
  const std::string sealed = file.path.substr(0, file.path.size() - std::strlen(".part"));
  std::string sealed_error;
  if (!scanner.open(sealed, false, &sealed_error)) return false;
  file.path = sealed;
  file.is_part = false;
  return true;
}

// Puts a segment's times on the job's axis (ProcessState::clock_offset_ns).
// A 0 that means "none" (an empty frame's range, a record with no time) stays 0.
void shift_times(DecodedSegment& seg, int64_t off) {
  auto shift = [off](uint64_t& t) {
    if (t != 0) t = static_cast<uint64_t>(static_cast<int64_t>(t) + off);
  };
  for (DecodedEvent& e : seg.events) shift(e.ts_ns);
  for (GpuActivity& a : seg.gpu) {
    shift(a.start_ns);
    shift(a.end_ns);
  }
  shift(seg.header.first_ns);
  shift(seg.header.last_ns);
  if (seg.clock) shift(seg.clock->monotonic_base_ns);
  if (seg.process) shift(seg.process->start_monotonic_ns);
  if (seg.crash) shift(seg.crash->ts_ns);
}

}  // namespace

TraceReader::TraceReader(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (!fs::exists(st) && internal::is_part_path(path)) {
      probe(path);  // sealed since it was named? probe follows the rename
      continue;
    }
    if (ec || !fs::exists(st)) {
      open_problems_.push_back({ProblemKind::Unreadable, path, 0,
                                "cannot open: " + (ec ? ec.message() : std::string("No such file or directory"))});
      continue;
    }
    if (!fs::is_directory(st)) {
      probe(path);
      continue;
    }
    std::vector<std::string> inside, subdirs;
    for (auto it = fs::directory_iterator(path, ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
      const std::string name = it->path().filename().string();
      std::error_code fec;
      if (is_ringprof_name(name) && it->is_regular_file(fec)) inside.push_back(it->path().string());
      else if (it->is_directory(fec)) subdirs.push_back(it->path().string());
    }
    if (ec) {
      open_problems_.push_back({ProblemKind::Unreadable, path, 0, "cannot list directory: " + ec.message()});
      continue;
    }
    // A job's directory of per-rank directories (rank0/, rank1/, ...): with
    // no files of its own, the files of its subdirectories, one level down.
    if (inside.empty()) {
      for (const std::string& sub : subdirs) {
        std::error_code sec;
        for (auto it = fs::directory_iterator(sub, sec); !sec && it != fs::directory_iterator(); it.increment(sec)) {
          std::error_code fec;
          if (is_ringprof_name(it->path().filename().string()) && it->is_regular_file(fec))
            inside.push_back(it->path().string());
        }
        if (sec) open_problems_.push_back({ProblemKind::Unreadable, sub, 0, "cannot list directory: " + sec.message()});
      }
    }
    if (inside.empty()) {
      open_problems_.push_back({ProblemKind::Unreadable, path, 0,
                                "no *.rpf or *.rpf.part files in directory (nor in its subdirectories)"});
      continue;
    }
    std::sort(inside.begin(), inside.end());
    for (const std::string& f : inside) probe(f);
  }
  group_into_processes();
}

void TraceReader::probe(const std::string& path) {
  // The same file named twice (a file and its directory) is read once.
  for (const FileSummary& f : files_)
    if (f.path == path) return;

  FileSummary file;
  file.path = path;
  file.is_part = internal::is_part_path(path);
  Probe probe_result;

  internal::FrameScanner scanner;
  std::string error;
  if (!open_following_seal(scanner, file, &error)) {
    const bool gone = scanner.open_errno() == ENOENT;
    open_problems_.push_back({gone ? ProblemKind::Vanished : ProblemKind::Unreadable, path, 0, error});
    return;
  }
  for (const FileSummary& f : files_)
    if (f.path == file.path) return;  // sealed into a file already listed
  file.size_bytes = scanner.size();
  if (std::optional<internal::Frame> first = scanner.next(nullptr)) {
    file.pid = first->header.pid;
    file.first_sequence = first->header.sequence;
    file.process = 0;  // placeholder: "has a valid frame"; set by grouping
    if (first->header.flags & format::kFrameFileStart) {
      DecodedSegment seg;
      if (decode_alone(scanner, *first, seg) && seg.process) {
        file.has_file_start = true;
        probe_result.process = std::move(seg.process);
        probe_result.rank = std::move(seg.rank);
      }
    }
  }
  files_.push_back(std::move(file));
  probes_.push_back(std::move(probe_result));
}

void TraceReader::group_into_processes() {
  // Files with a file start define processes: (pid, start time).
  std::map<std::pair<uint32_t, uint64_t>, size_t> by_identity;
  for (size_t i = 0; i < files_.size(); ++i) {
    FileSummary& f = files_[i];
    if (f.process == SIZE_MAX || !probes_[i].process) continue;
    const DecodedProcess& dp = *probes_[i].process;
    auto key = std::make_pair(f.pid, dp.start_monotonic_ns);
    auto [it, inserted] = by_identity.emplace(key, processes_.size());
    if (inserted) {
      ProcessState p;
      p.index = processes_.size();
      p.pid = f.pid;
      p.start_known = true;
      p.start_monotonic_ns = dp.start_monotonic_ns;
      p.start_realtime_ns = dp.start_realtime_ns;
      p.hostname = dp.hostname;
      p.command_line = dp.command_line;
      p.ringprof_version = dp.ringprof_version;
      processes_.push_back(std::move(p));
    }
    f.process = it->second;
    processes_[it->second].files.push_back(i);
    if (probes_[i].rank) processes_[it->second].rank = probes_[i].rank;  // files come in sequence: the last wins
  }
  // Files whose start is lost join the process of the same pid whose files
  // come just before them in sequence; failing that, a process of their own.
  for (size_t i = 0; i < files_.size(); ++i) {
    FileSummary& f = files_[i];
    if (f.process == SIZE_MAX || probes_[i].process) continue;
    size_t best = SIZE_MAX;
    bool best_before = false;
    uint64_t best_seq = 0;
    for (const ProcessState& p : processes_) {
      if (p.pid != f.pid) continue;
      uint64_t min_seq = UINT64_MAX;
      for (size_t fi : p.files) min_seq = std::min(min_seq, files_[fi].first_sequence);
      const bool before = min_seq <= f.first_sequence;
      if (best == SIZE_MAX || (before && (!best_before || min_seq > best_seq))) {
        best = p.index;
        best_before = before;
        best_seq = min_seq;
      }
    }
    if (best == SIZE_MAX) {
      ProcessState p;
      p.index = processes_.size();
      p.pid = f.pid;
      best = p.index;
      processes_.push_back(std::move(p));
    }
    f.process = best;
    processes_[best].files.push_back(i);
  }
  for (ProcessState& p : processes_) {
    std::sort(p.files.begin(), p.files.end(), [&](size_t a, size_t b) {
      return std::tie(files_[a].first_sequence, files_[a].path) < std::tie(files_[b].first_sequence, files_[b].path);
    });
  }
  // A distributed job's processes in rank order, then those without a rank
  // (a process the launcher did not start, a file whose start is lost) by
  // pid and start.
  std::sort(processes_.begin(), processes_.end(), [](const ProcessState& a, const ProcessState& b) {
    const int64_t ra = a.rank && a.rank->rank >= 0 ? a.rank->rank : INT64_MAX;
    const int64_t rb = b.rank && b.rank->rank >= 0 ? b.rank->rank : INT64_MAX;
    return std::tie(ra, a.pid, a.start_monotonic_ns) < std::tie(rb, b.pid, b.start_monotonic_ns);
  });
  std::set<uint32_t> pids;
  for (size_t i = 0; i < processes_.size(); ++i) {
    ProcessState& p = processes_[i];
    p.index = i;
    for (size_t fi : p.files) files_[fi].process = i;
    p.trace_pid = pids.insert(p.pid).second ? p.pid : (1u << 22) + static_cast<uint32_t>(i);
  }
  probes_.clear();
  align_clocks();
}

void TraceReader::align_clocks() {
  std::set<std::string> hosts;
  const ProcessState* ref = nullptr;
  for (const ProcessState& p : processes_) {
    if (!p.start_known || p.start_realtime_ns == 0) continue;
    hosts.insert(p.hostname);
    if (!ref) ref = &p;
  }
  if (hosts.size() < 2) return;
  // CLOCK_REALTIME - CLOCK_MONOTONIC at each process's start: a process's
  // monotonic time plus its offset is the reference's monotonic time of the
  // same wall-clock moment.
  auto wall_offset = [](const ProcessState& p) {
    return static_cast<int64_t>(p.start_realtime_ns) - static_cast<int64_t>(p.start_monotonic_ns);
  };
  const int64_t ref_offset = wall_offset(*ref);
  // One offset per host, from its first process: processes of one host share
  // CLOCK_MONOTONIC, and must keep lining up exactly whatever the jitter of
  // their own wall-clock readings.
  std::map<std::string, int64_t> host_offset;
  size_t unaligned = 0;
  for (ProcessState& p : processes_) {
    if (!p.start_known || p.start_realtime_ns == 0) {
      ++unaligned;
      continue;
    }
    p.clock_offset_ns = host_offset.try_emplace(p.hostname, wall_offset(p) - ref_offset).first->second;
    p.start_monotonic_ns = static_cast<uint64_t>(static_cast<int64_t>(p.start_monotonic_ns) + p.clock_offset_ns);
  }
  clock_note_ = "ringprof: warning: the processes ran on " + std::to_string(hosts.size()) +
                " hosts: their times are aligned by wall clock, which is only as good as the hosts' clock "
                "synchronisation (NTP: often hundreds of microseconds)";
  if (unaligned)
    clock_note_ += "; " + std::to_string(unaligned) + " process(es) whose start is lost could not be aligned";
}

// ---- reading ----

std::vector<Problem> TraceReader::problems() const {
  std::vector<Problem> all = open_problems_;
  all.insert(all.end(), read_problems_.begin(), read_problems_.end());
  return all;
}

std::optional<std::pair<uint64_t, uint64_t>> TraceReader::time_range() const {
  uint64_t first = UINT64_MAX, last = 0;
  for (const FileSummary& f : files_) {
    if (f.process == SIZE_MAX) continue;
    internal::FrameScanner scanner;
    std::string error;
    FileSummary moved = f;
    if (!open_following_seal(scanner, moved, &error)) continue;
    while (std::optional<internal::Frame> frame = scanner.next(nullptr)) {
      const format::FrameHeader& h = frame->header;
      if (h.first_ns == 0) continue;  // nothing timed in it (GPU-only frames have no events but a range)
      const int64_t off = processes_[f.process].clock_offset_ns;
      first = std::min(first, static_cast<uint64_t>(static_cast<int64_t>(h.first_ns) + off));
      last = std::max(last, static_cast<uint64_t>(static_cast<int64_t>(std::max(h.first_ns, h.last_ns)) + off));
    }
  }
  if (first == UINT64_MAX) return std::nullopt;
  return std::make_pair(first, last);
}

namespace {
class CallbackVisitor final : public SegmentVisitor {
 public:
  explicit CallbackVisitor(const std::function<void(const SegmentView&)>& fn) : fn_(fn) {}
  void segment(const SegmentView& view) override { fn_(view); }

 private:
  const std::function<void(const SegmentView&)>& fn_;
};
}  // namespace

void TraceReader::read(const std::function<void(const SegmentView&)>& on_segment) {
  CallbackVisitor v(on_segment);
  read(v);
}

void TraceReader::start_read() {
  read_problems_.clear();
  for (FileSummary& f : files_) {
    f.segments = f.bad_segments = f.events = f.stored_bytes = f.raw_bytes = f.first_ns = f.last_ns = 0;
    f.gpu_records = 0;
    f.torn_tail = f.truncated = false;
  }
  bytes_done_ = files_done_ = 0;
  if (progress_) {
    uint64_t total = 0;
    for (const FileSummary& f : files_) total += f.size_bytes;
    progress_->start(total, files_.size());
  }
}

void TraceReader::read_process(ProcessState& p, SegmentVisitor& visitor, std::vector<Problem>& problems) {
  p.locations.clear();
  p.threads.clear();
  p.stacks.clear();
  p.modules.clear();
  p.sampler.reset();
  p.gpu_devices.clear();
  p.gpu_stats = GpuStats{};
  visitor.begin_process(p);
  for (size_t fi : p.files) {
    uint64_t credited = 0;
    read_file(p, files_[fi], visitor, problems, credited);
    add_progress(files_[fi].size_bytes - std::min(credited, files_[fi].size_bytes), 1);
  }
  visitor.end_process(p);
}

void TraceReader::finish_read() {
  // Files without a single valid frame: scanned only to say what is wrong.
  for (FileSummary& f : files_) {
    if (f.process != SIZE_MAX) continue;
    internal::FrameScanner scanner;
    std::string error;
    if (!scanner.open(f.path, f.is_part, &error)) {
      read_problems_.push_back({ProblemKind::Unreadable, f.path, 0, error});
      continue;
    }
    while (scanner.next(&read_problems_)) {
    }
    f.bad_segments = scanner.bad_stretches();
    f.torn_tail = scanner.torn_tail();
    f.truncated = scanner.truncated();
    add_progress(f.size_bytes, 1);
  }
  if (progress_) progress_->finish();
}

void TraceReader::read(SegmentVisitor& visitor) {
  start_read();
  for (ProcessState& p : processes_) read_process(p, visitor, read_problems_);
  finish_read();
}

void TraceReader::read_parallel(const std::function<SegmentVisitor&(size_t process)>& visitor_for, unsigned threads) {
  start_read();
  const size_t n = processes_.size();
  threads = static_cast<unsigned>(std::clamp<size_t>(threads, 1, std::max<size_t>(n, 1)));
  // Each process's problems apart, then in process order: the report is the
  // same whatever the interleaving.
  std::vector<std::vector<Problem>> problems(n);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) read_process(processes_[i], visitor_for(i), problems[i]);
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  for (std::vector<Problem>& ps : problems) read_problems_.insert(read_problems_.end(), ps.begin(), ps.end());
  finish_read();
}

void TraceReader::add_progress(uint64_t bytes, uint64_t files) {
  if (!progress_) return;
  std::lock_guard<std::mutex> lock(progress_mutex_);
  bytes_done_ += bytes;
  files_done_ += files;
  progress_->update(bytes_done_, files_done_);
}

void TraceReader::adjust_clocks(const std::vector<int64_t>& delta, std::string note) {
  for (size_t i = 0; i < processes_.size() && i < delta.size(); ++i) {
    ProcessState& p = processes_[i];
    p.clock_offset_ns += delta[i];
    if (p.start_known)
      p.start_monotonic_ns = static_cast<uint64_t>(static_cast<int64_t>(p.start_monotonic_ns) + delta[i]);
  }
  clock_note_ = std::move(note);
}

void TraceReader::read_file(ProcessState& process, FileSummary& file, SegmentVisitor& visitor,
                           std::vector<Problem>& problems, uint64_t& credited) {
  internal::FrameScanner scanner;
  std::string error;
  if (!open_following_seal(scanner, file, &error)) {
    const bool gone = scanner.open_errno() == ENOENT;
    problems.push_back({gone ? ProblemKind::Vanished : ProblemKind::Unreadable, file.path, 0, error});
    return;
  }
  std::vector<std::string> strings;  // this file's string table, grown by each segment
  std::vector<uint8_t> payload;      // reused: one segment's bytes at a time
  DecodedSegment seg;
  bool have_start = false;
  bool reported_missing_start = false;
  uint64_t rejected = 0;

  while (std::optional<internal::Frame> frame = scanner.next(&problems)) {
    if (!scanner.read_payload(*frame, payload, &error)) {
      problems.push_back({ProblemKind::Unreadable, file.path, frame->offset, error});
      break;
    }
    const size_t strings_before = strings.size();
    seg = DecodedSegment{};
    if (!decode_segment(frame->header, payload, strings, seg, &error)) {
      strings.resize(strings_before);  // a rejected segment adds nothing
      ++rejected;
      if (have_start || (frame->header.flags & format::kFrameFileStart)) {
        problems.push_back({ProblemKind::CorruptSegment, file.path, frame->offset, error});
      } else if (!reported_missing_start) {
        // Without the file start, every later segment that needs its strings
        // fails the same way: say it once for the file.
        reported_missing_start = true;
        problems.push_back({ProblemKind::CorruptSegment, file.path, frame->offset,
                                  error + " (file start missing; skipping segments that need its strings)"});
      }
      continue;
    }
    if (process.clock_offset_ns != 0) shift_times(seg, process.clock_offset_ns);
    if (frame->header.flags & format::kFrameFileStart) have_start = true;
    if (seg.process && !process.start_known) {
      process.start_known = true;
      process.start_monotonic_ns = seg.process->start_monotonic_ns;
      process.start_realtime_ns = seg.process->start_realtime_ns;
      process.hostname = seg.process->hostname;
      process.command_line = seg.process->command_line;
      process.ringprof_version = seg.process->ringprof_version;
    }
    for (const Location& loc : seg.locations) process.locations[loc.id] = loc;
    for (const DecodedThread& t : seg.threads) {
      ThreadState& st = process.threads[t.index];
      st.index = t.index;
      st.tid = t.tid;
      if (t.has_name || (st.name.empty() && !t.name.empty())) st.name = t.name;  // crash segments offer a fallback
    }
    for (const StackTrace& st : seg.stacks) process.stacks[st.id] = st;
    for (const ModuleInfo& m : seg.modules) process.modules[m.id] = m;
    if (seg.sampler) process.sampler = seg.sampler;
    if (seg.rank) process.rank = seg.rank;
    for (const GpuDevice& d : seg.gpu_devices) process.gpu_devices[d.id] = d;
    if (seg.gpu_stats) {
      GpuStats& st = process.gpu_stats;
      st.records = std::max(st.records, seg.gpu_stats->records);
      st.dropped_records = std::max(st.dropped_records, seg.gpu_stats->dropped_records);
      st.refused_buffers = std::max(st.refused_buffers, seg.gpu_stats->refused_buffers);
      st.clock_violations = std::max(st.clock_violations, seg.gpu_stats->clock_violations);
      st.unknown_records = std::max(st.unknown_records, seg.gpu_stats->unknown_records);
    }

    ++file.segments;
    file.events += seg.events.size();
    file.stored_bytes += frame->header_size + uint64_t{frame->header.stored_size};
    file.raw_bytes += seg.raw_bytes;
    if (!seg.events.empty()) {
      uint64_t lo = UINT64_MAX, hi = 0;
      for (const DecodedEvent& e : seg.events) {
        lo = std::min(lo, e.ts_ns);
        hi = std::max(hi, e.ts_ns);
      }
      file.first_ns = file.first_ns == 0 ? lo : std::min(file.first_ns, lo);
      file.last_ns = std::max(file.last_ns, hi);
    }
    file.gpu_records += seg.gpu.size();
    for (const GpuActivity& a : seg.gpu) {
      if (a.kind == GpuKind::ExternalCorrelation) continue;  // no time of its own
      file.first_ns = file.first_ns == 0 ? a.start_ns : std::min(file.first_ns, a.start_ns);
      file.last_ns = std::max(file.last_ns, a.end_ns);
    }
    visitor.segment(SegmentView{process, file, frame->offset, seg});
    const uint64_t end = std::min(frame->offset + frame->header_size + uint64_t{frame->header.stored_size},
                                  file.size_bytes);
    if (end > credited) {
      add_progress(end - credited, 0);
      credited = end;
    }
  }
  file.bad_segments = scanner.bad_stretches() + rejected;
  file.torn_tail = scanner.torn_tail();
  file.truncated = scanner.truncated();
}

}  // namespace ringprof
