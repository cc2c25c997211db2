// extract: decode → keep the range → re-encode with a fresh file start.
#include "ringprof/tools/extract.h"
#include "ringprof/tools/zone_tracker.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <unordered_map>

#include "ringprof/segment_codec.h"
#include "ringprof/tools/trace_range.h"

namespace ringprof {
namespace {

std::string utc_stamp(uint64_t realtime_ns) {
  const time_t secs = static_cast<time_t>(realtime_ns / 1000000000ull);
  struct tm tm {};
  gmtime_r(&secs, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y%m%dT%H%M%S", &tm);
  return buf;
}

class Extractor final : public SegmentVisitor {
 public:
  Extractor(const ExtractOptions& options, TimeRange range, ExtractResult& result)
      : options_(options), range_(range), result_(result), encoder_(options.zstd_level) {}

  bool failed() const { return failed_; }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    fd_ = -1;
    have_clock_ = false;
    clock_ = ClockCalibration{};
    sequence_ = 0;
    loc_map_.clear();
    locations_.clear();
    stack_map_.clear();
    stacks_.clear();
    threads_.clear();
    zones_.clear();
    async_.clear();
    sampler_version_ = 0;
    last_sampler_.reset();
    last_rank_.reset();
  }

  void segment(const SegmentView& view) override {
    if (failed_) return;
    const DecodedSegment& seg = view.segment;
    if (seg.clock && !have_clock_) {
      clock_ = *seg.clock;
      have_clock_ = true;
    }
    events_.clear();
    runs_.clear();
    for (const DecodedEvent& e : seg.events) {
      ZoneState& z = zones_[e.thread_index];
      if (follow_async(z, e)) continue;
      if (e.ts_ns > range_.end_ns) {
        // Past the range: it says only that this thread's data runs on, so
        // its zones still open at the end are clipped there (end_process).
        // It closes nothing now: the drainer writes its own marks under the
        // application's thread, and those can reach the files before that
        // thread's earlier ring events, which still belong to the range.
        z.past_end = true;
        continue;
      }
      if (e.ts_ns < range_.begin_ns) {
        if (!z.entered) track(z, e);  // a late mark from before the range changes no zone
        continue;
      }
      if (!z.entered) enter(z, e.thread_index);
      add(e.thread_index, e.ts_ns, e.kind, e.loc, e.value, e.address);
      track(z, e);
    }
    // Drops reported by a segment that overlaps the range belong to it.
    drops_.clear();
    if (seg.header.last_ns >= range_.begin_ns && seg.header.first_ns <= range_.end_ns) {
      for (const DecodedThread& t : seg.threads)
        if (t.dropped_ring || t.dropped_io || t.samples_lost) drops_.push_back(t);
    }
    if (events_.empty() && drops_.empty()) return;
    write_batch();
  }

  void end_process(const ProcessState&) override {
    clip_at_end();
    if (fd_ >= 0) finish_file();
    process_ = nullptr;
  }

 private:
  struct OpenZone {
    uint32_t loc;                   // input location id
    std::vector<ZoneArgIds> args{};  // its arguments so far (input ids), restated after a clipped begin
    uint32_t stack = 0;              // its stack (ZoneStack, input id), restated likewise
  };
  struct ZoneState {
    std::vector<OpenZone> open;  // outermost first
    bool entered = false;        // the range has begun for this thread
    bool past_end = false;       // the thread has events after the range
    uint64_t args_to_async = 0;  // the async span whose begin was the thread's last event
  };
  // An async span begun and not yet ended, by id.
  struct OpenAsync {
    uint32_t loc = 0;     // input location id
    uint32_t thread = 0;  // its begin's
    std::vector<ZoneArgIds> args{};
    bool written = false;  // its begin is in the output (in the range, or restated at its start)
  };

  // Async spans (their begins, arguments and ends; true when `e` was one of
  // those): a span that crosses the range's start gets its begin restated
  // there on its thread, one that crosses its end gets its end there.
  bool follow_async(ZoneState& z, const DecodedEvent& e) {
    const uint64_t to_async = z.args_to_async;
    z.args_to_async = 0;
    if (e.kind == EventKind::ZoneArg && to_async != 0) {
      z.args_to_async = to_async;
      auto it = async_.find(to_async);
      if (it == async_.end()) return true;
      add_zone_arg(it->second.args, e.loc, static_cast<uint32_t>(e.value));
      if (it->second.written && range_.contains(e.ts_ns)) add(e.thread_index, e.ts_ns, e.kind, e.loc, e.value);
      return true;
    }
    if (e.kind == EventKind::AsyncBegin) {
      if (e.ts_ns > range_.end_ns) return true;
      OpenAsync& a = async_[e.value];
      a = OpenAsync{e.loc, e.thread_index};
      z.args_to_async = e.value;
      if (e.ts_ns >= range_.begin_ns) {
        a.written = true;
        add(e.thread_index, e.ts_ns, e.kind, e.loc, e.value);
      }
      return true;
    }
    if (e.kind != EventKind::AsyncEnd) return false;
    auto it = async_.find(e.value);
    if (it == async_.end()) {  // begun before the files: an end in the range is kept as it is
      if (range_.contains(e.ts_ns)) add(e.thread_index, e.ts_ns, e.kind, 0, e.value);
      return true;
    }
    OpenAsync& a = it->second;
    if (e.ts_ns >= range_.begin_ns) {
      if (!a.written) {
        add(a.thread, range_.begin_ns, EventKind::AsyncBegin, a.loc, e.value);
        for (const ZoneArgIds& arg : a.args) add(a.thread, range_.begin_ns, EventKind::ZoneArg, arg.key, arg.value);
        ++result_.clipped_zones;
      }
      if (e.ts_ns > range_.end_ns) ++result_.clipped_zones;
      add(e.thread_index, std::min(e.ts_ns, range_.end_ns), e.kind, 0, e.value);
    }
    async_.erase(it);
    return true;
  }

  void track(ZoneState& z, const DecodedEvent& e) {
    if (e.kind == EventKind::ZoneBegin) z.open.push_back(OpenZone{e.loc});
    else if (e.kind == EventKind::ZoneEnd && !z.open.empty()) z.open.pop_back();
    else if (e.kind == EventKind::ZoneArg && !z.open.empty())
      add_zone_arg(z.open.back().args, e.loc, static_cast<uint32_t>(e.value));
    else if (e.kind == EventKind::ZoneStack && !z.open.empty())
      z.open.back().stack = e.loc;
  }
  void enter(ZoneState& z, uint32_t thread) {
    z.entered = true;
    for (const OpenZone& o : z.open) {
      add(thread, range_.begin_ns, EventKind::ZoneBegin, o.loc, 0);
      if (o.stack) add(thread, range_.begin_ns, EventKind::ZoneStack, o.stack, 0);
      for (const ZoneArgIds& a : o.args) add(thread, range_.begin_ns, EventKind::ZoneArg, a.key, a.value);
      ++result_.clipped_zones;
    }
  }
  // The zones each thread still has open at the range's end get their
  // ZoneEnd there, when the thread's data runs on past it (a thread whose data
  // ends inside the range is still inside them: they stay open). A thread
  // inside a zone for the whole range enters it here.
  void clip_at_end() {
    if (failed_ || !process_) return;
    std::vector<uint32_t> threads;
    for (const auto& [thread, z] : zones_)
      if (z.past_end && !z.open.empty()) threads.push_back(thread);
    std::sort(threads.begin(), threads.end());
    events_.clear();
    runs_.clear();
    drops_.clear();
    for (uint32_t thread : threads) {
      ZoneState& z = zones_[thread];
      if (!z.entered) enter(z, thread);
      for (size_t i = 0; i < z.open.size(); ++i) {
        add(thread, range_.end_ns, EventKind::ZoneEnd, 0, 0);
        ++result_.clipped_zones;
      }
    }
    if (!events_.empty()) write_batch();
  }

  uint32_t map_location(uint32_t id) {
    if (id == 0) return 0;
    auto [it, inserted] = loc_map_.try_emplace(id, 0);
    if (inserted) {
      Location l;
      if (const Location* src = process_->location(id)) l = *src;
      else l.name = process_->location_name(id);
      l.id = static_cast<uint32_t>(locations_.size() + 1);
      locations_.push_back(std::move(l));
      it->second = locations_.back().id;
    }
    return it->second;
  }
  uint32_t map_stack(uint32_t id) {
    if (id == 0) return 0;
    const StackTrace* src = process_->stack(id);
    if (!src) return 0;
    auto [it, inserted] = stack_map_.try_emplace(id, 0);
    if (inserted) {
      StackTrace s = *src;
      // A Python frame names a location of the input: the output's own id.
      for (uint64_t& f : s.frames)
        if (f & kInterpreterFrameTag)
          f = kInterpreterFrameTag | map_location(static_cast<uint32_t>(f & ~kInterpreterFrameTag));
      s.id = static_cast<uint32_t>(stacks_.size() + 1);
      stacks_.push_back(std::move(s));
      it->second = stacks_.back().id;
    }
    return it->second;
  }

  void add(uint32_t thread, uint64_t ts, EventKind kind, uint32_t loc, uint64_t value, uint64_t address = 0) {
    Event out{};
    out.ts = ts;
    out.kind = kind;
    if (kind_has_location(kind)) out.loc = map_location(loc);
    else if (kind_has_stack(kind)) out.loc = map_stack(loc);
    out.p1 = kind_value_is_location(kind) ? map_location(static_cast<uint32_t>(value)) : value;
    out.p0 = address;  // memory events' address (sinks read p0 of no other kind)
    if (runs_.empty() || runs_.back().thread_index != thread)
      runs_.push_back(EventRun{thread, static_cast<uint32_t>(events_.size()), 0});
    ++runs_.back().count;
    events_.push_back(out);
  }

  ThreadInfo& thread_info(uint32_t index) {
    ThreadInfo& t = threads_[index];
    t.index = index;
    const ThreadState* src = process_->thread(index);
    const std::string name = src ? src->name : std::string();
    t.tid = src ? src->tid : index;
    if (t.name_version == 0 || t.name != name) {
      t.name = name;
      ++t.name_version;  // the encoder restates a thread's name when this changes
    }
    return t;
  }

  bool open_file() {
    const ProcessState& p = *process_;
    SessionInfo s;
    s.pid = p.pid;
    s.hostname = p.hostname;
    s.command_line = p.command_line;
    s.start_monotonic_ns = p.start_monotonic_ns;
    s.start_realtime_ns = p.start_realtime_ns;
    s.clock = clock_;
    s.ringprof_version = p.ringprof_version;
    // trace_pid: two ranks of a job with the same pid (containers on two
    // hosts) started in the same second must not ask for the same name.
    const std::string base = options_.output_dir + "/ringprof-" + std::to_string(p.trace_pid) + "-" +
                             utc_stamp(p.start_realtime_ns) + "-extract";
    part_path_ = base + ".rpf.part";
    final_path_ = base + ".rpf";
    struct stat st;
    if (lstat(final_path_.c_str(), &st) == 0) return fail(final_path_ + ": exists; extract into an empty directory");
    fd_ = ::open(part_path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd_ < 0) return fail(part_path_ + ": " + std::strerror(errno));
    encoder_.start_file(s);
    return true;
  }

  void write_batch() {
    if (fd_ < 0 && !open_file()) return;
    batch_threads_.clear();
    std::map<uint32_t, ThreadInfo> named;
    for (const EventRun& r : runs_) named[r.thread_index] = thread_info(r.thread_index);
    for (const DecodedThread& d : drops_) {
      ThreadInfo t = named.count(d.index) ? named[d.index] : thread_info(d.index);
      t.dropped_ring = d.dropped_ring;
      t.dropped_io = d.dropped_io;
      t.samples_lost = d.samples_lost;
      named[d.index] = t;
    }
    for (auto& [index, t] : named) batch_threads_.push_back(t);
    modules_.clear();
    for (const auto& [id, m] : process_->modules) {
      ModuleInfo copy = m;
      copy.id = static_cast<uint32_t>(modules_.size() + 1);
      modules_.push_back(std::move(copy));
    }
    if (process_->sampler && (!last_sampler_ || last_sampler_->mechanism != process_->sampler->mechanism ||
                              last_sampler_->detail != process_->sampler->detail ||
                              last_sampler_->hz != process_->sampler->hz)) {
      last_sampler_ = process_->sampler;
      last_sampler_->version = ++sampler_version_;
    }
    // The process's rank travels with its events (decoded ranks carry no version: number them here).
    if (process_->rank && (!last_rank_ || last_rank_->rank != process_->rank->rank ||
                           last_rank_->local_rank != process_->rank->local_rank ||
                           last_rank_->world_size != process_->rank->world_size ||
                           last_rank_->job_id != process_->rank->job_id || last_rank_->source != process_->rank->source)) {
      const uint32_t version = last_rank_ ? last_rank_->version + 1 : 1;
      last_rank_ = process_->rank;
      last_rank_->version = version;
    }
    Batch b;
    b.sequence = sequence_++;
    b.events = events_;
    b.runs = runs_;
    b.threads = batch_threads_;
    b.locations = locations_;
    b.stacks = stacks_;
    b.modules = modules_;
    b.sampler = last_sampler_ ? &*last_sampler_ : nullptr;
    b.rank = last_rank_ ? &*last_rank_ : nullptr;
    set_time_range(b);
    frame_.clear();
    if (encoder_.encode(b, frame_) == 0) {
      fail("cannot encode a segment (out of memory?)");
      return;
    }
    const uint8_t* p = frame_.data();
    size_t left = frame_.size();
    while (left > 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fail(part_path_ + ": " + std::strerror(n < 0 ? errno : EIO));
        return;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    result_.events += events_.size();
    ++result_.segments;
  }

  void finish_file() {
    ::close(fd_);
    fd_ = -1;
    if (failed_) {
      unlink(part_path_.c_str());
      return;
    }
    if (::rename(part_path_.c_str(), final_path_.c_str()) != 0) {
      fail(final_path_ + ": " + std::strerror(errno));
      return;
    }
    result_.files.push_back(final_path_);
  }

  bool fail(const std::string& why) {
    if (!failed_) result_.error = why;
    failed_ = true;
    return false;
  }

  const ExtractOptions& options_;
  const TimeRange range_;
  ExtractResult& result_;
  SegmentEncoder encoder_;
  bool failed_ = false;

  const ProcessState* process_ = nullptr;
  int fd_ = -1;
  std::string part_path_, final_path_;
  bool have_clock_ = false;
  ClockCalibration clock_;
  uint64_t sequence_ = 0;
  std::unordered_map<uint32_t, uint32_t> loc_map_, stack_map_;
  std::vector<Location> locations_;
  std::vector<StackTrace> stacks_;
  std::vector<ModuleInfo> modules_;
  std::unordered_map<uint32_t, ThreadInfo> threads_;
  std::unordered_map<uint32_t, ZoneState> zones_;
  std::unordered_map<uint64_t, OpenAsync> async_;
  std::optional<SamplerState> last_sampler_;
  std::optional<RankInfo> last_rank_;
  uint32_t sampler_version_ = 0;

  std::vector<Event> events_;
  std::vector<EventRun> runs_;
  std::vector<ThreadInfo> batch_threads_;
  std::vector<DecodedThread> drops_;
  std::vector<uint8_t> frame_;
};

}  // namespace

ExtractResult extract_range(const std::vector<std::string>& inputs, const ExtractOptions& options) {
  ExtractResult result;
  if (options.output_dir.empty()) {
    result.error = "no output directory";
    return result;
  }
  std::error_code ec;
  std::filesystem::create_directories(options.output_dir, ec);
  if (ec) {
    result.error = options.output_dir + ": " + ec.message();
    return result;
  }
  TraceReader reader(inputs);
  std::string error;
  const std::optional<TimeRange> range = resolve_trace_range(reader, options.range, &error);
  if (!range) {
    result.error = error;
    return result;
  }
  result.range = *range;
  Extractor extractor(options, *range, result);
  reader.set_progress(options.progress);
  reader.read(extractor);
  // What a live writer does to its directory is expected, not damage.
  for (const Problem& p : reader.problems()) {
    const bool live_part = p.kind == ProblemKind::TornTail;
    if (p.kind == ProblemKind::Vanished) ++result.vanished_files;
    else if (live_part) ++result.torn_tails;
    else result.problems.push_back(p);
  }
  result.ok = !extractor.failed();
  return result;
}

}  // namespace ringprof
