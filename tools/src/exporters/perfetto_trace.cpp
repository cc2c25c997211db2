#include "ringprof/tools/perfetto_trace.h"

#include <optional>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "exporters/perfetto_packets.h"
#include "exporters/perfetto_samples.h"
#include "exporters/perfetto_trace_gpu.h"
#include "summaries/memory_pairing.h"
#include "ringprof/ops.h"
#include "ringprof/internal/ring.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"
#include "common/json_text.h"

namespace ringprof {

namespace {

using internal::Annotations;
using internal::EventFields;
using internal::Interned;
using internal::PacketWriter;
using internal::Sequence;
namespace pf = ::ringprof::perfetto;

// A thread that only ever opens zones must not grow memory without bound
// (as in ZoneTracker).
constexpr size_t kMaxDepth = ZoneTracker::kMaxDepth;
// Past this many flows begun and never ended, the oldest names are forgotten.
constexpr size_t kMaxOpenFlows = 1 << 20;

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

class PerfettoTraceWriter final : public SegmentVisitor {
 public:
  PerfettoTraceWriter(std::ostream& out, TimeRange range, const PerfettoTraceOptions& options)
      : w_(out), range_(range), threads_(options.thread), resolver_(options.symbol_paths) {
    async_.set_on_async([this](const ClosedZone& z) { on_async(z); });
    async_.set_async_only(true);
  }

  void finish() {
    w_.flush();
    stats_.packets_written = w_.packets();
    stats_.bytes_written = w_.bytes();
  }
  const PerfettoTraceStats& stats() const { return stats_; }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    threads_out_.clear();
    last_out_ = nullptr;
    counter_tracks_.clear();
    memory_tracks_.clear();
    live_bytes_.clear();
    memory_.clear();
    flow_names_.clear();
    tid_tracks_.clear();
    async_.clear();
    async_lanes_.clear();
    marks_track_ = 0;
    process_uuid_ = next_uuid_++;
    proc_seq_ = w_.new_sequence(false, 0);

    // The clock first: CLOCK_MONOTONIC is the trace's clock, and a process's
    // start relates it to wall-clock time. trace_processor refuses a snapshot
    // whose trace clock does not move forward, so a process that started
    // before the last one stated adds none (on one machine they all tell the
    // same relation).
    if (!clock_written_ || (p.start_known && p.start_monotonic_ns > last_clock_ns_)) write_clock(p);

    pf::TracePacket desc;
    pf::TrackDescriptor* d = desc.mutable_track_descriptor();
    d->set_uuid(process_uuid_);
    pf::ProcessDescriptor* pd = d->mutable_process();
    pd->set_pid(static_cast<int32_t>(p.trace_pid));
    pd->set_process_name(internal::valid_utf8(p.trace_name()));
    for (const std::string& arg : p.command_line) pd->add_cmdline(internal::valid_utf8(arg));
    w_.write(proc_seq_, desc);

    samples_.emplace(w_, proc_seq_, resolver_);
    gpu_.emplace(w_, proc_seq_, range_, next_uuid_, process_uuid_,
                 [this](uint32_t tid) { return thread_uuid_for_tid(tid); });
    gpu_->begin_process(p);
  }

  void end_process(const ProcessState&) override {
    async_.finish();
    for (auto& [index, t] : threads_out_) close_open_zones(t);
    stats_.samples_written += samples_->written();
    stats_.gpu_records_written += gpu_->written();
    samples_.reset();
    gpu_.reset();
  }

  void segment(const SegmentView& view) override {
    for (const DecodedThread& t : view.segment.threads) {
      if (!t.has_name || t.name.empty() || !threads_.matches(*process_, t.index)) continue;
      ThreadOut& out = thread_out(t.index);
      if (out.described_name != t.name) describe_thread(t.index, out, t.name);
    }
    for (const DecodedEvent& e : view.segment.events) on_event(e);
    on_memory(view.segment);
    gpu_->segment(view);
  }

 private:
  struct OpenZone {
    uint64_t begin_ns;
    uint32_t loc;
    bool written;  // its slice begin is in the output
    // Its arguments (ZoneArg, as in zone_tracker.h: a key again replaces its
    // value, at most ZoneTracker::kMaxArgs), written with its end: the trace
    // processor merges an end's annotations into the slice's args.
    std::vector<ZoneArgIds> args{};
    uint32_t stack = 0;  // ZoneStack: the Python stack that called it, written with its end too
  };
  struct ThreadOut {
    uint32_t index = 0;
    uint64_t uuid = 0;
    uint64_t drops_uuid = 0;
    Sequence seq;
    std::string described_name;
    std::vector<OpenZone> open;
    uint64_t overflow = 0;
    uint64_t last_ns = 0;
    std::optional<uint64_t> drop_begin;
  };

  void write_clock(const ProcessState& p) {
    pf::TracePacket clock;
    pf::ClockSnapshot* c = clock.mutable_clock_snapshot();
    pf::ClockSnapshot::Clock* mono = c->add_clocks();
    mono->set_clock_id(pf::BUILTIN_CLOCK_MONOTONIC);
    mono->set_timestamp(p.start_known ? p.start_monotonic_ns : 0);
    if (p.start_known) {
      pf::ClockSnapshot::Clock* real = c->add_clocks();
      real->set_clock_id(pf::BUILTIN_CLOCK_REALTIME);
      real->set_timestamp(p.start_realtime_ns);
    }
    c->set_primary_trace_clock(pf::BUILTIN_CLOCK_MONOTONIC);
    w_.write(proc_seq_, clock);
    clock_written_ = true;
    last_clock_ns_ = mono->timestamp();
  }

  ThreadOut& thread_out(uint32_t index) {
    if (last_out_ && last_out_->index == index) return *last_out_;  // runs: one thread's events in a row
    auto [it, inserted] = threads_out_.try_emplace(index);
    ThreadOut& t = it->second;
    if (inserted) {
      t.index = index;
      t.uuid = next_uuid_++;
      t.seq = w_.new_sequence(true, t.uuid);
      const ThreadState* known = process_->thread(index);
      describe_thread(index, t, known ? known->name : std::string());
    }
    last_out_ = &t;  // a map's elements stay where they are
    return t;
  }

  // The track of the host thread with kernel id `tid` for its GPU records:
  // 0 when the files name no such thread, nothing when --thread leaves it out.
  std::optional<uint64_t> thread_uuid_for_tid(uint32_t tid) {
    auto it = tid_tracks_.find(tid);
    if (it != tid_tracks_.end()) return it->second;
    std::optional<uint64_t> uuid = 0;
    for (const auto& [index, th] : process_->threads) {
      if (th.tid != tid) continue;
      uuid = threads_.matches(*process_, index) ? std::optional<uint64_t>(thread_out(index).uuid) : std::nullopt;
      break;
    }
    if (uuid == 0 && !threads_.empty()) uuid = std::nullopt;  // an unknown thread is not the one asked for
    tid_tracks_.emplace(tid, uuid);
    return uuid;
  }

  void describe_thread(uint32_t index, ThreadOut& t, const std::string& name) {
    pf::TracePacket p;
    pf::TrackDescriptor* d = p.mutable_track_descriptor();
    d->set_uuid(t.uuid);
    d->set_parent_uuid(process_uuid_);
    pf::ThreadDescriptor* td = d->mutable_thread();
    td->set_pid(static_cast<int32_t>(process_->trace_pid));
    td->set_tid(static_cast<int32_t>(process_->tid_of(index)));
    if (!name.empty()) td->set_thread_name(internal::valid_utf8(name));
    w_.write(proc_seq_, p);
    t.described_name = name;
  }

  uint64_t child_track(uint64_t parent, const std::string& name,
                       PacketWriter::TrackKind kind = PacketWriter::TrackKind::Slices) {
    const uint64_t uuid = next_uuid_++;
    w_.child_track(proc_seq_, uuid, parent, name, kind);
    return uuid;
  }

  // ---- async spans ----

  // A span on a track of its own under the process, named after it: spans
  // of one name that overlap take further tracks of that name (lanes), since
  // slices on one track must nest. Written on the process's sequence, whose
  // timestamps are absolute (spans close out of time order).
  void on_async(const ClosedZone& z) {
    if (!range_.overlaps(z.begin_ns, z.end_ns) || !threads_.matches(*process_, z.thread_index)) return;
    const std::string name = process_->location_name(z.loc);
    std::vector<std::pair<uint64_t, uint64_t>>& lanes = async_lanes_[name];  // (track, last end)
    size_t lane = 0;
    while (lane < lanes.size() && lanes[lane].second > z.begin_ns) ++lane;
    if (lane == lanes.size()) lanes.emplace_back(child_track(process_uuid_, name), 0);
    lanes[lane].second = z.end_ns;
    Interned interned;
    Annotations a(w_, proc_seq_, interned);
    a.add("begin thread", uint64_t{process_->tid_of(z.thread_index)});
    a.add("end thread", uint64_t{process_->tid_of(z.end_thread_index)});
    if (z.unterminated) a.add_bool("unterminated", true);
    for (const ZoneArgIds& arg : z.args) a.add(process_->location_name(arg.key), zone_arg_value(*process_, arg.value));
    EventFields b;
    b.type = pf::TrackEvent::TYPE_SLICE_BEGIN;
    b.track_uuid = lanes[lane].first;
    w_.set_name(proc_seq_, name, interned, b);
    b.category_iid = w_.category_iid(proc_seq_, "async", interned);
    const std::string annotations(a.bytes());
    b.annotations = annotations;
    w_.event(proc_seq_, z.begin_ns, b, &interned);
    EventFields e;
    e.type = pf::TrackEvent::TYPE_SLICE_END;
    e.track_uuid = lanes[lane].first;
    w_.event(proc_seq_, z.end_ns, e);
    ++stats_.zones_written;
    if (z.unterminated) ++stats_.unterminated_zones;
  }

  // ---- zones ----

  // Writes the begins of the thread's open zones not yet written (outer
  // first): an event inside the range is about to be written, so every
  // zone open around it overlaps the range.
  void write_pending_begins(ThreadOut& t) {
    for (OpenZone& z : t.open) {
      if (z.written || z.begin_ns > range_.end_ns) continue;
      Interned interned;
      EventFields f;
      f.type = pf::TrackEvent::TYPE_SLICE_BEGIN;
      std::tie(f.name_iid, f.source_location_iid) = location_iids(t.seq, z.loc, interned);
      std::string name;  // past the interning cap: the name itself
      if (!f.name_iid) f.name = name = process_->location_name(z.loc);
      if (!t.seq.zone_category) t.seq.zone_category = w_.category_iid(t.seq, "ringprof", interned);
      f.category_iid = t.seq.zone_category;
      w_.event(t.seq, z.begin_ns, f, &interned);
      z.written = true;
    }
  }

  void end_zone(ThreadOut& t, uint64_t ts, bool unterminated, const OpenZone& z) {
    EventFields f;
    f.type = pf::TrackEvent::TYPE_SLICE_END;
    ++stats_.zones_written;
    if (!unterminated && z.args.empty() && !z.stack) return w_.event(t.seq, ts, f);
    Interned interned;
    Annotations a(w_, t.seq, interned);
    if (unterminated) a.add_bool("unterminated", true);
    for (const ZoneArgIds& arg : z.args) a.add(process_->location_name(arg.key), zone_arg_value(*process_, arg.value));
    if (z.stack) {  // as the Chrome trace writes it (Kineto's "Call stack")
      std::string text;
      for (const ResolvedFrame& fr : resolver_.stack(*process_, z.stack))
        text += (text.empty() ? "" : ";") + source_frame_text(fr);
      a.add("Call stack", text);
    }
    const std::string annotations(a.bytes());
    f.annotations = annotations;
    w_.event(t.seq, ts, f, &interned);
  }

  void on_zone_begin(ThreadOut& t, const DecodedEvent& e) {
    if (t.open.size() >= kMaxDepth) {
      ++t.overflow;
      ++stats_.zones_too_deep;
      return;
    }
    t.open.push_back({e.ts_ns, e.loc, false});
    if (range_.contains(e.ts_ns)) write_pending_begins(t);
  }

  void on_zone_end(ThreadOut& t, const DecodedEvent& e) {
    if (t.overflow) {
      --t.overflow;
      return;
    }
    if (t.open.empty()) {
      ++stats_.unmatched_zone_ends;
      return;
    }
    const OpenZone& z = t.open.back();
    if (!z.written && range_.overlaps(z.begin_ns, e.ts_ns)) write_pending_begins(t);
    if (t.open.back().written) end_zone(t, e.ts_ns, false, t.open.back());
    t.open.pop_back();
  }

  void on_zone_arg(ThreadOut& t, const DecodedEvent& e) {
    if (t.overflow || t.open.empty()) return;
    add_zone_arg(t.open.back().args, e.loc, static_cast<uint32_t>(e.value));
  }

  void on_zone_stack(ThreadOut& t, const DecodedEvent& e) {
    if (t.overflow || t.open.empty()) return;
    t.open.back().stack = e.loc;
  }

  // The end of the process's data: zones still open end at their thread's
  // last timestamp, innermost first, flagged unterminated.
  void close_open_zones(ThreadOut& t) {
    if (t.open.empty()) return;
    if (t.last_ns >= range_.begin_ns) write_pending_begins(t);
    while (!t.open.empty()) {
      if (t.open.back().written) {
        end_zone(t, t.last_ns, true, t.open.back());
        ++stats_.unterminated_zones;
      }
      t.open.pop_back();
    }
  }

  // A location's name and source location, interned on the sequence at first use.
  std::pair<uint64_t, uint64_t> location_iids(Sequence& seq, uint32_t loc, Interned& interned) {
    auto it = seq.locations.find(loc);
    if (it != seq.locations.end()) return it->second;
    const uint64_t name = w_.name_iid(seq, process_->location_name(loc), interned);
    uint64_t source = 0;
    const Location* l = process_->location(loc);
    if (l && !l->file.empty()) {
      source = seq.next_iid++;
      pf::SourceLocation* s = interned.get().add_source_locations();
      s->set_iid(source);
      s->set_file_name(internal::valid_utf8(l->file));
      if (l->line) s->set_line_number(l->line);
    }
    return seq.locations.emplace(loc, std::make_pair(name, source)).first->second;
  }

  // ---- other events ----

  void on_event(const DecodedEvent& e) {
    if (e.kind != EventKind::Sample) async_.add(e);  // async spans: on_async
    if (!threads_.matches(*process_, e.thread_index)) return;
    if (e.kind == EventKind::Sample) {
      if (range_.contains(e.ts_ns)) samples_->sample(*process_, e.ts_ns, process_->tid_of(e.thread_index), e.loc);
      return;
    }
    ThreadOut& t = thread_out(e.thread_index);
    if (e.ts_ns > t.last_ns) t.last_ns = e.ts_ns;
    switch (e.kind) {
      case EventKind::ZoneBegin:
        return on_zone_begin(t, e);
      case EventKind::ZoneEnd:
        return on_zone_end(t, e);
      case EventKind::ZoneArg:
        return on_zone_arg(t, e);
      case EventKind::ZoneStack: return on_zone_stack(t, e);
      case EventKind::AsyncBegin:
      case EventKind::AsyncEnd: return;  // async_ pairs them (on_async)
      case EventKind::Alloc:
      case EventKind::Free:
        return;  // the memory counter tracks (on_memory)
      case EventKind::HeapAlloc:
      case EventKind::HeapStack:
      case EventKind::HeapFree: return;  // the heap profile is pprof's (ringprof pprof --heap)
      case EventKind::Instant:
      case EventKind::Counter:
      case EventKind::FlowBegin:
      case EventKind::FlowStep:
      case EventKind::FlowEnd:
      case EventKind::Step:
      case EventKind::Mark:
      case EventKind::Sample:
      case EventKind::None:
      case EventKind::ThreadName:
      case EventKind::Continuation:
        break;
    }
    if (e.kind == EventKind::Mark && classify_mark(process_->location_name(e.loc)) == MarkClass::Drops)
      return on_drops(t, e);
    if (!range_.contains(e.ts_ns)) return;
    write_pending_begins(t);
    Interned interned;
    EventFields f;
    std::string annotations;
    std::string name;
    std::string flow;
    switch (e.kind) {
      case EventKind::Instant:
        f.type = pf::TrackEvent::TYPE_INSTANT;
        std::tie(f.name_iid, f.source_location_iid) = location_iids(t.seq, e.loc, interned);
        if (!f.name_iid) f.name = name = process_->location_name(e.loc);
        f.category_iid = w_.category_iid(t.seq, "ringprof", interned);
        break;
      case EventKind::Counter:
        f.type = pf::TrackEvent::TYPE_COUNTER;
        f.track_uuid = counter_track(e.loc);
        f.has_double = true;
        f.double_value = bits_double(e.value);
        break;
      case EventKind::Step: {
        f.type = pf::TrackEvent::TYPE_INSTANT;
        f.track_uuid = process_uuid_;
        name = "step " + std::to_string(e.value);
        f.name = name;
        f.category_iid = w_.category_iid(t.seq, "ringprof", interned);
        Annotations a(w_, t.seq, interned);
        a.add("step", e.value);
        annotations = a.bytes();
        break;
      }
      case EventKind::FlowBegin:
      case EventKind::FlowStep:
      case EventKind::FlowEnd:
        f.type = pf::TrackEvent::TYPE_INSTANT;
        flow = flow_name(e);
        w_.set_name(t.seq, flow, interned, f);
        f.category_iid = w_.category_iid(t.seq, "flow", interned);
        f.has_flow = true;
        f.flow_id = internal::process_flow_id(process_->trace_pid, e.value);
        f.terminating_flow = e.kind == EventKind::FlowEnd;
        break;
      case EventKind::Mark: {
        const std::string mark = process_->location_name(e.loc);
        f.type = pf::TrackEvent::TYPE_INSTANT;
        f.track_uuid = marks_track();
        name = describe_mark(mark, e.value);
        f.name = name;
        f.category_iid = w_.category_iid(t.seq, "ringprof.mark", interned);
        Annotations a(w_, t.seq, interned);
        a.add("mark", mark);
        a.add("value", e.value);
        switch (classify_mark(mark)) {
          case MarkClass::Window:
          case MarkClass::Trigger:
            a.add("window", e.value);
            break;
          case MarkClass::Crash:
            a.add("signal", signal_name(static_cast<int>(e.value & 0xffffffffu)));
            a.add("thread", e.value >> 32);
            break;
          case MarkClass::Level: a.add("level", e.value <= 2 ? mode_name(static_cast<Level>(e.value)) : "?"); break;
          default:
            break;
        }
        annotations = a.bytes();
        break;
      }
      case EventKind::ZoneBegin:
      case EventKind::ZoneEnd:
      case EventKind::ZoneArg:
      case EventKind::ZoneStack:
      case EventKind::AsyncBegin:
      case EventKind::AsyncEnd:
      case EventKind::Alloc:
      case EventKind::Free:  // handled above
      case EventKind::HeapAlloc:
      case EventKind::HeapStack:
      case EventKind::HeapFree:  // the heap profile is pprof's
      case EventKind::Sample:  // the sample packets (before this function)
      case EventKind::None:
      case EventKind::ThreadName:
      case EventKind::Continuation:  // never reach a file
        return;
    }
    f.annotations = annotations;
    w_.event(t.seq, e.ts_ns, f, &interned);
  }

  // Steps and ends carry no name: they take their begin's.
  std::string flow_name(const DecodedEvent& e) {
    if (e.kind == EventKind::FlowBegin) {
      std::string name = e.loc != 0 ? process_->location_name(e.loc) : "flow";
      if (flow_names_.size() >= kMaxOpenFlows) flow_names_.clear();
      flow_names_[e.value] = name;
      return name;
    }
    auto it = flow_names_.find(e.value);
    if (it == flow_names_.end()) return "flow";
    std::string name = it->second;
    if (e.kind == EventKind::FlowEnd) flow_names_.erase(it);
    return name;
  }

  uint64_t counter_track(uint32_t loc) {
    auto it = counter_tracks_.find(loc);
    if (it != counter_tracks_.end()) return it->second;
    const uint64_t uuid = child_track(process_uuid_, process_->location_name(loc), PacketWriter::TrackKind::Counter);
    counter_tracks_.emplace(loc, uuid);
    return uuid;
  }

  uint64_t marks_track() {
    if (!marks_track_) marks_track_ = child_track(process_uuid_, "ringprof marks");
    return marks_track_;
  }

  // A gap where the thread's ring was full: a slice on the thread's
  // "ringprof drops" track from the first refused event to the next event
  // recorded, named with the count.
  void on_drops(ThreadOut& t, const DecodedEvent& e) {
    if (process_->location_name(e.loc) == kMarkDropsBegin) {
      t.drop_begin = e.ts_ns;
      return;
    }
    const uint64_t begin = t.drop_begin.value_or(e.ts_ns);
    t.drop_begin.reset();
    if (!range_.overlaps(begin, e.ts_ns)) return;
    if (!t.drops_uuid) t.drops_uuid = child_track(t.uuid, "ringprof drops");
    Interned interned;
    EventFields f;
    f.type = pf::TrackEvent::TYPE_SLICE_BEGIN;
    f.track_uuid = t.drops_uuid;
    const std::string name = "ringprof: " + std::to_string(e.value) + " events dropped (ring full)";
    f.name = name;
    f.category_iid = w_.category_iid(t.seq, "ringprof.dropped", interned);
    Annotations a(w_, t.seq, interned);
    a.add("dropped", e.value);
    const std::string annotations(a.bytes());
    f.annotations = annotations;
    w_.event(t.seq, begin, f, &interned);
    EventFields end;
    end.type = pf::TrackEvent::TYPE_SLICE_END;
    end.track_uuid = t.drops_uuid;
    w_.event(t.seq, e.ts_ns, end);
  }

  // One counter track per memory pool ("memory: heap"): bytes live, counted
  // from the range's start, one point per Alloc/Free in time order.
  void on_memory(const DecodedSegment& seg) {
    memory_.resolve(seg, range_, {}, changes_);
    for (const internal::MemoryChange& c : changes_) {
      const DecodedEvent& e = seg.events[c.index];
      if (!threads_.matches(*process_, e.thread_index)) continue;
      auto it = memory_tracks_.find(e.loc);
      if (it == memory_tracks_.end())
        it = memory_tracks_.emplace(e.loc, child_track(process_uuid_, "memory: " + process_->location_name(e.loc),
                                                PacketWriter::TrackKind::BytesCounter))
                 .first;
      int64_t& live = live_bytes_[e.loc];
      live += c.bytes;
      EventFields f;
      f.type = pf::TrackEvent::TYPE_COUNTER;
      f.track_uuid = it->second;
      f.has_int = true;
      f.int_value = live;
      w_.event(proc_seq_, e.ts_ns, f);
    }
  }

  PacketWriter w_;
  TimeRange range_;
  ThreadFilter threads_;
  StackResolver resolver_;
  PerfettoTraceStats stats_;
  uint64_t next_uuid_ = 1;

  // The process being read.
  const ProcessState* process_ = nullptr;
  uint64_t process_uuid_ = 0;
  Sequence proc_seq_;
  std::unordered_map<uint32_t, ThreadOut> threads_out_;
  std::unordered_map<uint32_t, std::optional<uint64_t>> tid_tracks_;  // GPU records' host threads, by tid
  bool clock_written_ = false;
  uint64_t last_clock_ns_ = 0;
  ThreadOut* last_out_ = nullptr;
  std::unordered_map<uint32_t, uint64_t> counter_tracks_;  // by location id
  std::unordered_map<uint32_t, uint64_t> memory_tracks_;   // by pool location id
  std::unordered_map<uint32_t, int64_t> live_bytes_;       // by pool location id
  ZoneTracker async_{[](const ClosedZone&) {}};            // pairs async spans (zones are this writer's own)
  std::unordered_map<std::string, std::vector<std::pair<uint64_t, uint64_t>>> async_lanes_;
  uint64_t marks_track_ = 0;
  std::unordered_map<uint64_t, std::string> flow_names_;
  internal::MemoryPairing memory_;
  std::vector<internal::MemoryChange> changes_;
  std::optional<internal::PerfettoSamples> samples_;
  std::optional<internal::PerfettoGpuWriter> gpu_;
};

}  // namespace

PerfettoTraceStats write_perfetto_trace(TraceReader& reader, const PerfettoTraceOptions& options, std::ostream& out) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // trace_range.h
  }
  PerfettoTraceWriter writer(out, range, options);
  reader.read(writer);
  writer.finish();
  return writer.stats();
}

bool write_perfetto_trace_file(TraceReader& reader, const PerfettoTraceOptions& options, const std::string& path,
                               PerfettoTraceStats* stats, std::string* error) {
  OutputFile file;
  if (!file.open(path, error)) return false;
  PerfettoTraceStats s = write_perfetto_trace(reader, options, file.stream());
  if (stats) *stats = s;
  return file.close(error);
}

bool is_perfetto_trace_path(const std::string& path) {
  for (const char* ext : {".pftrace", ".perfetto-trace", ".pftrace.gz", ".perfetto-trace.gz"})
    if (ends_with(path, ext)) return true;
  return false;
}

}  // namespace ringprof
