// ringprof/tools/trace_reader.h — reads a set of ringprof files back, one decoded
// segment at a time.
//
// Inputs are files or directories (every `*.rpf` and `*.rpf.part` inside).
// Opening probes only the first valid frame of each file, to learn which
// process wrote it (pid + start time from its file-start segment) and where
// it sits in that process's sequence. read() then walks each process's files
// in sequence order and hands every intact segment to a visitor, so a zone
// that begins in one file and ends in the next is seen in order. Only one
// segment's bytes are held at a time: memory stays flat however large the
// trace.
//
// Strings are per file (decode_segment resolves them through the file's own
// table); location ids and thread indices are process-wide, so the reader
// keeps one location and thread table per process, filled from every file it
// has read. That is also what lets a file whose file-start segment is lost
// still yield its later segments, as far as the decoder can resolve them.
//
// Damage never stops the reader: a bad header, checksum or short frame is
// recorded as one Problem (file + byte offset + reason), then the reader
// scans forward for the next valid frame header and goes on.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringprof/segment_codec.h"
#include "ringprof/sink.h"

namespace ringprof {

class ProgressReporter;

enum class ProblemKind : uint8_t {
  Unreadable,     // cannot open or read the path; a directory without ringprof files
  Foreign,        // no valid segment anywhere: not a ringprof file
  CorruptHeader,  // bad magic / header checksum / unsupported version; bytes skipped
  CorruptSegment, // header fine, payload rejected by the decoder (checksum, zstd, verify)
  Truncated,      // a sealed file ends inside a frame
  TornTail,       // a `.part` file ends inside its last frame (writer killed)
  Vanished,       // listed, then deleted before it could be read (a live writer's byte budget)
};

struct Problem {
  ProblemKind kind = ProblemKind::CorruptHeader;
  std::string file;
  uint64_t offset = 0;
  std::string reason;
};

// "ringprof: <file>: offset <N>: <reason>" — the one line the CLI prints.
std::string format_problem(const Problem& p);

// What the reader learned about one input file.
struct FileSummary {
  std::string path;
  uint64_t size_bytes = 0;
  bool is_part = false;          // still being written (or its writer died)
  uint32_t pid = 0;              // from the first valid frame header
  bool has_file_start = false;   // its first valid frame is a decodable file start
  uint64_t first_sequence = 0;   // of its first valid frame
  size_t process = SIZE_MAX;     // index into TraceReader::processes(); SIZE_MAX: no valid frame

  // Filled by read():
  uint64_t segments = 0;          // decoded intact
  uint64_t bad_segments = 0;      // corrupt stretches and rejected payloads skipped
  bool torn_tail = false;
  bool truncated = false;
  uint64_t events = 0;
  uint64_t stored_bytes = 0;      // frame headers + payloads of intact segments, as on disk
  uint64_t raw_bytes = 0;         // their payloads decompressed
  uint64_t first_ns = 0;          // event time range of intact segments (0: none)
  uint64_t last_ns = 0;
  uint64_t gpu_records = 0;       // GPU activity records (their times count in the range too)
};

// A thread as the process's files describe it; the latest name wins.
struct ThreadState {
  uint32_t index = 0;
  uint32_t tid = 0;
  std::string name;
};

// One recording process: files grouped by pid and start time.
struct ProcessState {
  size_t index = 0;
  uint32_t pid = 0;
  // The pid the Chrome and Perfetto traces give it: its own, unless an
  // earlier process of the same read has that pid too (ranks in containers
  // on different hosts often do; a reused pid), then 4194304 (above any Linux
  // pid) plus its index, so that viewers keep the two apart.
  uint32_t trace_pid = 0;
  bool start_known = false;        // some file of it has a readable file start
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  std::string ringprof_version;
  // The process's place in a distributed job (ringprof/rank.h): known from
  // the files' first segments before any read(), then the latest a read
  // states (set_rank() may change it mid-run).
  std::optional<RankInfo> rank;
  // Added by the reader to every time it hands out for this process (events,
  // GPU records, frame ranges, start_monotonic_ns, the clock calibration), so
  // that a job's processes share one time axis (TraceReader::clock_note()).
  int64_t clock_offset_ns = 0;
  std::vector<size_t> files;       // indices into TraceReader::files(), in read order

  // Filled while reading (reset at the start of each read()).
  std::unordered_map<uint32_t, Location> locations;
  std::unordered_map<uint32_t, ThreadState> threads;
  std::unordered_map<uint32_t, StackTrace> stacks;   // by stack id
  std::map<uint32_t, ModuleInfo> modules;            // by module id
  std::optional<SamplerState> sampler;               // the latest stated
  std::map<uint32_t, GpuDevice> gpu_devices;         // by device id
  GpuStats gpu_stats;                                // each counter's largest stated value (they are cumulative)
  // A device's properties, or null when no file read so far states them.
  const GpuDevice* gpu_device(uint32_t id) const;

  const StackTrace* stack(uint32_t id) const;
  // The module whose executable range holds `address`, or null.
  const ModuleInfo* module_for(uint64_t address) const;

  const Location* location(uint32_t id) const;
  // The location's name, or "<location N>" when no file read so far names it.
  std::string location_name(uint32_t id) const;
  const ThreadState* thread(uint32_t thread_index) const;
  // Kernel tid for a thread index (the index itself if the thread is unknown).
  uint32_t tid_of(uint32_t thread_index) const;
  // argv[0]'s base name, or "pid N" when unknown.
  std::string display_name() const;
  // The name a trace gives the process: "rank N (host, pid)" when the files
  // state its rank (a distributed job), display_name() otherwise.
  std::string trace_name() const;
};

// One intact segment, with the tables needed to resolve it. The segment's own
// locations and threads have already been merged into `process`.
struct SegmentView {
  const ProcessState& process;
  const FileSummary& file;
  uint64_t offset;                 // of its frame header in the file
  const DecodedSegment& segment;
};

class SegmentVisitor {
 public:
  virtual ~SegmentVisitor() = default;
  virtual void begin_process(const ProcessState&) {}
  virtual void segment(const SegmentView& view) = 0;
  // After the process's last file: the place to close what is still open.
  virtual void end_process(const ProcessState&) {}
};

class TraceReader {
 public:
  // Expands directories and probes every file. Problems found here (missing
  // paths, empty directories) are kept and reported by problems().
  explicit TraceReader(const std::vector<std::string>& paths);

  const std::vector<FileSummary>& files() const { return files_; }
  const std::vector<ProcessState>& processes() const { return processes_; }
  // Everything found so far: at open, and by the last read().
  std::vector<Problem> problems() const;
  bool has_problems() const { return !open_problems_.empty() || !read_problems_.empty(); }

  // Earliest and latest event time over every valid frame header, without
  // decompressing anything. nullopt when no frame holds an event.
  std::optional<std::pair<uint64_t, uint64_t>> time_range() const;

  // Decodes every intact segment, process by process, files in order. Each
  // call starts afresh (per-file statistics and read problems are reset).
  void read(SegmentVisitor& visitor);
  // The same with a plain callback, for visitors that need no process hooks.
  void read(const std::function<void(const SegmentView&)>& on_segment);
  // Reads up to `threads` processes at once, each with its own visitor
  // (visitor_for(process index), called on the worker that reads it, once
  // per process). A process is read by one worker from start to end, so a
  // visitor sees exactly what read() would show it. Problems are kept in
  // process order, as read() keeps them.
  void read_parallel(const std::function<SegmentVisitor&(size_t process)>& visitor_for, unsigned threads);

  // Moves each process's times by delta[i] more (a finer alignment than the
  // wall clock's, ringprof/tools/clock_alignment.h) and replaces clock_note().
  void adjust_clocks(const std::vector<int64_t>& delta, std::string note);

  // How the processes' clocks were put on one axis, in a line for stderr;
  // "" when nothing needed doing (every process on one host, which shares
  // CLOCK_MONOTONIC). Processes on several hosts: by each one's wall-clock
  // offset at its start, relative to the first process (rank 0 in a job).
  const std::string& clock_note() const { return clock_note_; }

  // Told how far each read() has got, in bytes and files (null: nobody).
  // Not owned; must outlive the reads.
  void set_progress(ProgressReporter* progress) { progress_ = progress; }

 private:
  void probe(const std::string& path);
  void group_into_processes();
  void align_clocks();
  void start_read();
  void read_process(ProcessState& p, SegmentVisitor& visitor, std::vector<Problem>& problems);
  void finish_read();
  // `credited`: how many of the file's bytes progress has been told of.
  void read_file(ProcessState& process, FileSummary& file, SegmentVisitor& visitor, std::vector<Problem>& problems,
                 uint64_t& credited);
  void add_progress(uint64_t bytes, uint64_t files);

  std::vector<FileSummary> files_;
  std::vector<ProcessState> processes_;
  std::vector<Problem> open_problems_;
  std::vector<Problem> read_problems_;
  ProgressReporter* progress_ = nullptr;
  std::mutex progress_mutex_;  // workers of read_parallel() report progress at once
  uint64_t bytes_done_ = 0;
  uint64_t files_done_ = 0;
  std::string clock_note_;

  // Probe results kept until grouping.
  struct Probe {
    std::optional<DecodedProcess> process;
    std::optional<RankInfo> rank;  // as the file's first segment states it
  };
  std::vector<Probe> probes_;
};

}  // namespace ringprof
