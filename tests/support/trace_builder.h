// tests/support/trace_builder.h — builds ringprof files by hand for the tools
// tests: Batches with chosen events, locations and threads, encoded through
// the real SegmentEncoder (so files are exactly what the sink writes), one
// segment per flush(), one file per new_file(). Header-only, test use only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "support/owned_batch.h"
#include "ringprof/event.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sink.h"

namespace ringprof::test {

class TraceBuilder {
 public:
  explicit TraceBuilder(uint32_t pid = 4242, uint64_t start_ns = 1'000'000'000ull) {
    session_.pid = pid;
    session_.hostname = "node1";
    session_.command_line = {"/usr/bin/trainer", "--epochs", "3"};
    session_.start_monotonic_ns = start_ns;
    session_.start_realtime_ns = 1'700'000'000'000'000'000ull;
    session_.clock.monotonic_base_ns = start_ns;
    session_.clock.realtime_base_ns = session_.start_realtime_ns;
    session_.ringprof_version = "0.1.0";
    encoder_.start_file(session_);
  }

  SessionInfo& session() { return session_; }
  // Before the first flush: the host the files name.
  void host(const std::string& name) {
    session_.hostname = name;
    encoder_.start_file(session_);
  }
  // Before the first flush: CLOCK_REALTIME at the start (the process's and the calibration's).
  void wall_start(uint64_t realtime_ns) {
    session_.start_realtime_ns = realtime_ns;
    session_.clock.realtime_base_ns = realtime_ns;
    encoder_.start_file(session_);
  }
  // The process's rank, stated from the next flush on (and at each file start).
  void rank(int32_t rank, int32_t world_size = -1, const std::string& job_id = "") {
    rank_.rank = rank;
    rank_.world_size = world_size;
    rank_.job_id = job_id;
    rank_.source = "RANK";
    ++rank_.version;
  }

  uint32_t location(const std::string& name, const std::string& file = "", uint32_t line = 0) {
    Location l;
    l.id = static_cast<uint32_t>(locations_.size() + 1);
    l.name = name;
    l.file = file;
    l.line = line;
    locations_.push_back(l);
    return l.id;
  }

  uint32_t thread(uint32_t tid, const std::string& name) {
    ThreadInfo t;
    t.index = static_cast<uint32_t>(threads_.size() + 1);
    t.tid = tid;
    t.name = name;
    t.name_version = 1;
    threads_.push_back(t);
    return t.index;
  }
  void rename(uint32_t thread_index, const std::string& name) {
    ThreadInfo& t = threads_[thread_index - 1];
    t.name = name;
    ++t.name_version;
  }
  void drops(uint32_t thread_index, uint64_t ring, uint64_t io) {
    threads_[thread_index - 1].dropped_ring += ring;
    threads_[thread_index - 1].dropped_io += io;
    with_drops_.push_back(thread_index);
  }

  void begin(uint32_t th, uint64_t ts, uint32_t loc) { add(th, ts, EventKind::ZoneBegin, loc, 0); }
  void end(uint32_t th, uint64_t ts) { add(th, ts, EventKind::ZoneEnd, 0, 0); }
  void instant(uint32_t th, uint64_t ts, uint32_t loc) { add(th, ts, EventKind::Instant, loc, 0); }
  void counter(uint32_t th, uint64_t ts, uint32_t loc, double v) {
    add(th, ts, EventKind::Counter, loc, double_bits(v));
  }
  void flow_begin(uint32_t th, uint64_t ts, uint64_t id, uint32_t loc = 0) {
    add(th, ts, EventKind::FlowBegin, loc, id);
  }
  void flow_step(uint32_t th, uint64_t ts, uint64_t id) { add(th, ts, EventKind::FlowStep, 0, id); }
  void flow_end(uint32_t th, uint64_t ts, uint64_t id) { add(th, ts, EventKind::FlowEnd, 0, id); }
  void async_begin(uint32_t th, uint64_t ts, uint64_t id, uint32_t loc) { add(th, ts, EventKind::AsyncBegin, loc, id); }
  void async_end(uint32_t th, uint64_t ts, uint64_t id) { add(th, ts, EventKind::AsyncEnd, 0, id); }
  void step(uint32_t th, uint64_t ts, uint64_t n) { add(th, ts, EventKind::Step, 0, n); }
  // An argument of the innermost open zone: `key` and `value` are location ids.
  void arg(uint32_t th, uint64_t ts, uint32_t key, uint32_t value) { add(th, ts, EventKind::ZoneArg, key, value); }
  void mark(uint32_t th, uint64_t ts, uint32_t loc, uint64_t value) { add(th, ts, EventKind::Mark, loc, value); }

  // CPU sampling: a stack (leaf first) gets the next id; a sample refers to it.
  uint32_t stack(std::vector<uint64_t> frames) {
    stacks_.push_back(StackTrace{static_cast<uint32_t>(stacks_.size() + 1), std::move(frames)});
    return stacks_.back().id;
  }
  uint32_t module(ModuleInfo m) {
    m.id = static_cast<uint32_t>(modules_.size() + 1);
    modules_.push_back(std::move(m));
    return modules_.back().id;
  }
  void sampler(const std::string& mechanism, uint32_t hz) {
    sampler_ = SamplerState{mechanism, "", hz, sampler_ ? sampler_->version + 1 : 1};
  }
  void sample(uint32_t th, uint64_t ts, uint32_t stack_id) { add(th, ts, EventKind::Sample, stack_id, 0); }
  // The stack of the thread's innermost open zone (with_stack).
  void zone_stack(uint32_t th, uint64_t ts, uint32_t stack_id) { add(th, ts, EventKind::ZoneStack, stack_id, 0); }
  // Memory events: `pool` is a location id (the pool's name), size 0 in a free = not known.
  void alloc(uint32_t th, uint64_t ts, uint32_t pool, uint64_t address, uint64_t size) {
    add(th, ts, EventKind::Alloc, pool, size, address);
  }
  void free(uint32_t th, uint64_t ts, uint32_t pool, uint64_t address, uint64_t size = 0) {
    add(th, ts, EventKind::Free, pool, size, address);
  }
  // A sampled allocation (ringprof/heap.h): its HeapAlloc and, directly
  // after it on the thread, the HeapStack with its stack and interval.
  void heap_alloc(uint32_t th, uint64_t ts, uint32_t pool, uint64_t address, uint64_t size, uint32_t stack_id,
                  uint64_t interval) {
    add(th, ts, EventKind::HeapAlloc, pool, size, address);
    add(th, ts, EventKind::HeapStack, stack_id, interval);
  }
  void heap_free(uint32_t th, uint64_t ts, uint32_t pool, uint64_t address, uint64_t size = 0) {
    add(th, ts, EventKind::HeapFree, pool, size, address);
  }
  void samples_lost(uint32_t thread_index, uint64_t n) {
    threads_[thread_index - 1].samples_lost += n;
    with_drops_.push_back(thread_index);
  }

  // GPU records, names and devices (ringprof/gpu.h), written with the next flush().
  uint32_t gpu_name(const std::string& name) {
    gpu_names_.push_back(name);
    return static_cast<uint32_t>(gpu_names_.size());
  }
  void gpu_device(const GpuDevice& d) { gpu_devices_.push_back(d); }
  void gpu(const GpuActivity& a) { gpu_.push_back(a); }
  GpuStats& gpu_stats() {
    has_gpu_stats_ = true;
    ++gpu_stats_.version;
    return gpu_stats_;
  }

  // Encodes the events added since the last flush as one segment of the
  // current file; returns the frame's offset in that file.
  size_t flush() {
    Batch b;
    b.sequence = sequence_++;
    b.events = events_;
    b.runs = runs_;
    std::vector<ThreadInfo> named;
    for (const ThreadInfo& t : threads_) {
      const bool in_runs = std::any_of(runs_.begin(), runs_.end(), [&](const EventRun& r) { return r.thread_index == t.index; });
      const bool dropped = std::find(with_drops_.begin(), with_drops_.end(), t.index) != with_drops_.end();
      if (in_runs || dropped) named.push_back(t);
    }
    b.threads = named;
    b.locations = locations_;
    b.stacks = stacks_;
    b.modules = modules_;
    b.sampler = sampler_ ? &*sampler_ : nullptr;
    b.rank = rank_.version ? &rank_ : nullptr;
    set_time_range(b);
    b.gpu = gpu_;
    b.gpu_names = gpu_names_;
    b.gpu_devices = gpu_devices_;
    b.gpu_stats = has_gpu_stats_ ? &gpu_stats_ : nullptr;
    for (const GpuActivity& a : gpu_) {
      if (a.kind == GpuKind::ExternalCorrelation) continue;
      b.first_ns = b.first_ns == 0 ? a.start_ns : std::min(b.first_ns, a.start_ns);
      b.last_ns = std::max(b.last_ns, a.end_ns);
    }
    const size_t offset = file_.size();
    frame_offsets_.push_back(offset);
    encoder_.encode(b, file_);
    events_.clear();
    runs_.clear();
    gpu_.clear();
    // Drop counts are "since the last written batch".
    for (ThreadInfo& t : threads_) t.dropped_ring = t.dropped_io = t.samples_lost = 0;
    with_drops_.clear();
    return offset;
  }

  // The current file's bytes and frame offsets so far.
  const std::vector<uint8_t>& bytes() const { return file_; }
  const std::vector<size_t>& frame_offsets() const { return frame_offsets_; }

  // Returns the current file and starts the next one of the same process.
  std::vector<uint8_t> new_file() {
    std::vector<uint8_t> done;
    done.swap(file_);
    frame_offsets_.clear();
    encoder_.start_file(session_);
    return done;
  }

 private:
  void add(uint32_t th, uint64_t ts, EventKind kind, uint32_t loc, uint64_t p1, uint64_t p0 = 0) {
    Event e{};
    e.ts = ts;
    e.kind = kind;
    e.loc = loc;
    e.p0 = p0;
    e.p1 = p1;
    if (runs_.empty() || runs_.back().thread_index != th)
      runs_.push_back(EventRun{th, static_cast<uint32_t>(events_.size()), 0});
    ++runs_.back().count;
    events_.push_back(e);
  }

  SessionInfo session_;
  SegmentEncoder encoder_;
  std::vector<Location> locations_;
  std::vector<StackTrace> stacks_;
  std::vector<ModuleInfo> modules_;
  std::optional<SamplerState> sampler_;
  RankInfo rank_;
  std::vector<ThreadInfo> threads_;
  std::vector<uint32_t> with_drops_;
  std::vector<Event> events_;
  std::vector<EventRun> runs_;
  std::vector<GpuActivity> gpu_;
  std::vector<std::string> gpu_names_;
  std::vector<GpuDevice> gpu_devices_;
  GpuStats gpu_stats_;
  bool has_gpu_stats_ = false;
  uint64_t sequence_ = 0;
  std::vector<uint8_t> file_;
  std::vector<size_t> frame_offsets_;
};

}  // namespace ringprof::test
