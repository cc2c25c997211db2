#include "ringprof/tools/chrome_trace.h"

#include <charconv>
#include <unordered_map>

#include "exporters/chrome_trace_gpu.h"
#include "common/json_text.h"
#include "summaries/memory_pairing.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/ops.h"
#include "ringprof/internal/ring.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof {

namespace {

// Past this many flows begun and never ended, the oldest names are forgotten
// (later steps fall back to "flow") rather than growing memory forever.
constexpr size_t kMaxOpenFlows = 1 << 20;

void append_uint(std::string& out, uint64_t v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

class ChromeTraceWriter final : public SegmentVisitor {
 public:
  ChromeTraceWriter(std::ostream& out, TimeRange range, const ChromeTraceOptions& options)
      : out_(out),
        range_(range),
        zones_([this](const ClosedZone& z) { on_zone(z); }),
        threads_(options.thread),
        resolver_(options.symbol_paths),
        gpu_(
            [this](const std::string& event) {
              line_ = event;
              emit();
            },
            range) {
    zones_.set_on_async([this](const ClosedZone& z) { on_async(z); });
  }

  void start() { out_ << "{\"traceEvents\":[\n"; }

  void finish() {
    line_.clear();
    line_ += "\n],\"displayTimeUnit\":\"ms\",\"otherData\":{\"unmatched_zone_ends\":";
    append_uint(line_, zones_.unmatched_ends());
    line_ += ",\"unterminated_zones\":";
    append_uint(line_, zones_.unterminated());
    line_ += "}}\n";
    out_ << line_;
    stats_.unmatched_zone_ends = zones_.unmatched_ends();
    stats_.unterminated_zones = zones_.unterminated();
    stats_.zones_too_deep = zones_.too_deep();
  }

  const ChromeTraceStats& stats() const { return stats_; }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    zones_.clear();
    flow_names_.clear();
    drop_gap_begin_.clear();
    thread_names_.clear();
    memory_.clear();
    live_bytes_.clear();
    gpu_.begin_process(p);
    begin_event("process_name", "M");
    append_pid_tid(p.trace_pid);
    line_ += ",\"args\":{\"name\":";
    internal::append_json_string(line_, p.trace_name());
    line_ += "}}";
    emit();
    // Ranks in rank order in the viewer (Chrome's own metadata event).
    if (p.rank && p.rank->rank >= 0) {
      begin_event("process_sort_index", "M");
      append_pid_tid(p.trace_pid);
      line_ += ",\"args\":{\"sort_index\":";
      append_uint(line_, static_cast<uint64_t>(p.rank->rank));
      line_ += "}}";
      emit();
    }
  }

  void end_process(const ProcessState&) override { zones_.finish(); }

  void segment(const SegmentView& view) override {
    // Thread names as soon as a segment states them (again on a rename).
    for (const DecodedThread& t : view.segment.threads) {
      if (!t.has_name || t.name.empty()) continue;
      auto [it, inserted] = thread_names_.try_emplace(t.index, t.name);
      if (!inserted) {
        if (it->second == t.name) continue;
        it->second = t.name;
      }
      begin_event("thread_name", "M");
      append_pid_tid(process_->trace_pid, t.tid);
      line_ += ",\"args\":{\"name\":";
      internal::append_json_string(line_, t.name);
      line_ += "}}";
      emit();
    }
    for (const DecodedEvent& e : view.segment.events) on_event(e);
    on_memory(view.segment);
    gpu_.segment(view);  // GPU tracks, API calls, NVTX ranges and launch flows
  }

 private:
  // One counter track per memory pool ("memory: heap"): bytes live, counted
  // from the range's start (blocks allocated before it are not known), one
  // point per Alloc/Free in time order (memory_pairing.h).
  void on_memory(const DecodedSegment& seg) {
    memory_.resolve(seg, range_, {}, changes_);
    for (const internal::MemoryChange& c : changes_) {
      const DecodedEvent& e = seg.events[c.index];
      if (!threads_.matches(*process_, e.thread_index)) continue;
      int64_t& live = live_bytes_[e.loc];
      live += c.bytes;
      begin_event("memory: " + process_->location_name(e.loc), "C", e.ts_ns);
      append_pid_tid(process_->trace_pid);
      line_ += ",\"args\":{\"bytes\":";
      line_ += std::to_string(live);
      line_ += "}}";
      emit();
    }
  }

  void on_event(const DecodedEvent& e) {
    // Every event goes to the zone tracker (the thread's last timestamp ends
    // its unterminated zones); zones themselves are written by it.
    zones_.add(e);
    if (e.kind == EventKind::ZoneBegin || e.kind == EventKind::ZoneEnd) return;
    if (!range_.contains(e.ts_ns) || !threads_.matches(*process_, e.thread_index)) return;
    const uint32_t tid = process_->tid_of(e.thread_index);
    switch (e.kind) {
      case EventKind::Instant:
        begin_event(process_->location_name(e.loc), "i", e.ts_ns);
        append_pid_tid(process_->trace_pid, tid);
        line_ += ",\"s\":\"t\"}";
        emit();
        break;
      case EventKind::Counter: {
        const std::string name = process_->location_name(e.loc);
        begin_event(name, "C", e.ts_ns);
        append_pid_tid(process_->trace_pid, tid);
        line_ += ",\"args\":{\"value\":";
        internal::append_json_double(line_, bits_double(e.value));
        line_ += "}}";
        emit();
        break;
      }
      case EventKind::Step: {
        std::string name = "step ";
        append_uint(name, e.value);
        begin_event(name, "i", e.ts_ns);
        append_pid_tid(process_->trace_pid, tid);
        line_ += ",\"s\":\"p\",\"args\":{\"step\":";
        append_uint(line_, e.value);
        line_ += "}}";
        emit();
        break;
      }
      case EventKind::FlowBegin:
      case EventKind::FlowStep:
      case EventKind::FlowEnd:
        on_flow(e, tid);
        break;
      case EventKind::Sample:
        on_sample(e, tid);
        break;
      case EventKind::Mark:
        on_mark(e, tid);
        break;
      case EventKind::ZoneBegin:
      case EventKind::ZoneEnd:
      case EventKind::ZoneArg:  // the zone tracker writes zones with their arguments
      case EventKind::ZoneStack:  // ... and their stacks
      case EventKind::AsyncBegin:
      case EventKind::AsyncEnd:  // ... and async spans
      case EventKind::Alloc:
      case EventKind::Free:     // the memory counter tracks
      case EventKind::HeapAlloc:
      case EventKind::HeapStack:
      case EventKind::HeapFree:  // the heap profile is pprof's
      case EventKind::None:
      case EventKind::ThreadName:
      case EventKind::Continuation:  // these three never reach a file
        break;
    }
  }

  // Operational marks: global instants, so a detailed window's edge or a crash is a line
  // across every track; args say what it is.
  void on_mark(const DecodedEvent& e, uint32_t tid) {
    const std::string name = process_->location_name(e.loc);
    if (classify_mark(name) == MarkClass::Drops) return on_drops(e, tid, name);
    begin_event(describe_mark(name, e.value), "i", e.ts_ns, "ringprof.mark");
    append_pid_tid(process_->trace_pid, tid);
    line_ += ",\"s\":\"g\",\"args\":{\"mark\":";
    internal::append_json_string(line_, name);
    line_ += ",\"value\":";
    append_uint(line_, e.value);
    switch (classify_mark(name)) {
      case MarkClass::Window:
      case MarkClass::Trigger:
        line_ += ",\"window\":";
        append_uint(line_, e.value);
        break;
      case MarkClass::Crash:
        line_ += ",\"signal\":";
        internal::append_json_string(line_, signal_name(static_cast<int>(e.value & 0xffffffffu)));
        line_ += ",\"thread\":";
        append_uint(line_, e.value >> 32);
        break;
      case MarkClass::Level:
        line_ += ",\"level\":";
        internal::append_json_string(line_, e.value <= 2 ? mode_name(static_cast<Level>(e.value)) : "?");
        break;
      default:
        break;
    }
    line_ += "}}";
    emit();
  }

  // A gap where the thread's ring was full: a slice on the thread's own track
  // from the first refused event to the next event recorded, named with the
  // count, so the hole in its zones explains itself.
  void on_drops(const DecodedEvent& e, uint32_t tid, const std::string& name) {
    if (name == kMarkDropsBegin) {
      drop_gap_begin_[tid] = e.ts_ns;
      return;
    }
    const auto it = drop_gap_begin_.find(tid);
    const uint64_t begin = it != drop_gap_begin_.end() ? it->second : e.ts_ns;  // begin outside the range
    if (it != drop_gap_begin_.end()) drop_gap_begin_.erase(it);
    std::string label = "ringprof: ";
    append_uint(label, e.value);
    label += " events dropped (ring full)";
    begin_event(label, "X", begin, "ringprof.dropped");
    line_ += ",\"dur\":";
    append_us(line_, e.ts_ns - begin);
    append_pid_tid(process_->trace_pid, tid);
    line_ += ",\"args\":{\"dropped\":";
    append_uint(line_, e.value);
    line_ += "}}";
    emit();
  }

  void on_flow(const DecodedEvent& e, uint32_t tid) {
    // Steps and ends carry no name; Chrome binds a flow by id *and* name, so
    // they reuse the name of their begin.
    std::string name = "flow";
    const char* ph = "t";
    if (e.kind == EventKind::FlowBegin) {
      ph = "s";
      if (e.loc != 0) name = process_->location_name(e.loc);
      if (flow_names_.size() >= kMaxOpenFlows) flow_names_.clear();
      flow_names_[e.value] = name;
    } else {
      auto it = flow_names_.find(e.value);
      if (it != flow_names_.end()) name = it->second;
      if (e.kind == EventKind::FlowEnd) {
        ph = "f";
        if (it != flow_names_.end()) flow_names_.erase(it);
      }
    }
    begin_event(name, ph, e.ts_ns, "flow");
    append_pid_tid(process_->trace_pid, tid);
    line_ += ",\"id\":";
    append_uint(line_, e.value);
    line_ += ",\"bp\":\"e\"}";
    emit();
  }

  // A CPU sample: an instant on its thread's track, named after the leaf
  // function, with the whole stack (root first) in its args.
  void on_sample(const DecodedEvent& e, uint32_t tid) {
    const std::vector<ResolvedFrame>& frames = resolver_.stack(*process_, e.loc);
    begin_event(frames.front().function, "i", e.ts_ns, "cpu_sample");
    append_pid_tid(process_->trace_pid, tid);
    line_ += ",\"s\":\"t\",\"args\":{\"stack\":[";
    for (size_t i = frames.size(); i-- > 0;) {
      const ResolvedFrame& f = frames[i];
      if (i + 1 != frames.size()) line_ += ',';
      std::string text = f.function;
      if (!f.file.empty()) text += " (" + f.file + ":" + std::to_string(f.line) + ")";
      internal::append_json_string(line_, text);
    }
    line_ += "]}}";
    emit();
    ++stats_.samples_written;
  }

  void on_zone(const ClosedZone& z) {
    if (!range_.overlaps(z.begin_ns, z.end_ns) || !threads_.matches(*process_, z.thread_index)) return;
    begin_event(process_->location_name(z.loc), "X", z.begin_ns);
    line_ += ",\"dur\":";
    append_us(line_, z.duration_ns());
    append_pid_tid(process_->trace_pid, process_->tid_of(z.thread_index));
    append_zone_args(z);
    line_ += "}";
    emit();
    ++stats_.zones_written;
  }

  // An async span: a nestable async pair ("b" on the begin's thread, "e" on
  // the end's), its id scoped to the process (each process numbers its own).
  void on_async(const ClosedZone& z) {
    if (!range_.overlaps(z.begin_ns, z.end_ns) || !threads_.matches(*process_, z.thread_index)) return;
    const std::string name = process_->location_name(z.loc);
    std::string id = ",\"id2\":{\"local\":\"0x";
    char hex[17];
    const auto [end, ec] = std::to_chars(hex, hex + sizeof hex - 1, z.async_id, 16);
    (void)ec;
    id.append(hex, end);
    id += "\"}";
    begin_event(name, "b", z.begin_ns, "async");
    line_ += id;
    append_pid_tid(process_->trace_pid, process_->tid_of(z.thread_index));
    append_zone_args(z);
    line_ += "}";
    emit();
    begin_event(name, "e", z.end_ns, "async");
    line_ += id;
    append_pid_tid(process_->trace_pid, process_->tid_of(z.end_thread_index));
    line_ += "}";
    emit();
    ++stats_.zones_written;
  }

  // `,"args":{…}` of a zone or async span, when it has any.
  void append_zone_args(const ClosedZone& z) {
    const Location* loc = process_->location(z.loc);
    const bool has_file = loc && !loc->file.empty();
    if (has_file || z.unterminated || !z.args.empty() || z.stack) {
      line_ += ",\"args\":{";
      bool first = true;
      auto key = [&](std::string_view k) {
        if (!first) line_ += ',';
        first = false;
        internal::append_json_string(line_, k);
        line_ += ':';
      };
      if (has_file) {
        key("file");
        internal::append_json_string(line_, loc->file);
        if (loc->line != 0) {
          key("line");
          append_uint(line_, loc->line);
        }
      }
      if (z.unterminated) {
        key("unterminated");
        line_ += "true";
      }
      // The zone's own arguments (ZoneArg), as strings under their keys.
      for (const ZoneArgIds& a : z.args) {
        key(process_->location_name(a.key));
        internal::append_json_string(line_, zone_arg_value(*process_, a.value));
      }
      // with_stack: the Python stack that called it, innermost first, as
      // Kineto writes "Call stack" (frames joined by ';').
      if (z.stack) {
        key("Call stack");
        std::string text;
        for (const ResolvedFrame& f : resolver_.stack(*process_, z.stack))
          text += (text.empty() ? "" : ";") + source_frame_text(f);
        internal::append_json_string(line_, text);
      }
      line_ += "}";
    }
  }

  // Starts `{"name":…,"cat":…,"ph":…[,"ts":…]` in line_.
  void begin_event(std::string_view name, const char* ph, std::optional<uint64_t> ts = std::nullopt,
                   const char* cat = nullptr) {
    line_.clear();
    line_ += "{\"name\":";
    internal::append_json_string(line_, name);
    if (!cat) cat = ph[0] == 'M' ? "__metadata" : "ringprof";
    line_ += ",\"cat\":\"";
    line_ += cat;
    line_ += "\",\"ph\":\"";
    line_ += ph;
    line_ += '"';
    if (ts) {
      line_ += ",\"ts\":";
      append_us(line_, *ts);
    }
  }

  void append_pid_tid(uint32_t pid, std::optional<uint32_t> tid = std::nullopt) {
    line_ += ",\"pid\":";
    append_uint(line_, pid);
    if (tid) {
      line_ += ",\"tid\":";
      append_uint(line_, *tid);
    }
  }

  void emit() {
    if (stats_.events_written++ > 0) out_ << ",\n";
    out_ << line_;
  }

  std::ostream& out_;
  TimeRange range_;
  internal::MemoryPairing memory_;
  std::vector<internal::MemoryChange> changes_;
  std::unordered_map<uint32_t, int64_t> live_bytes_;  // by pool location id
  ZoneTracker zones_;
  ThreadFilter threads_;
  StackResolver resolver_;
  const ProcessState* process_ = nullptr;
  std::unordered_map<uint64_t, std::string> flow_names_;
  std::unordered_map<uint32_t, uint64_t> drop_gap_begin_;  // tid → where its open gap began
  std::unordered_map<uint32_t, std::string> thread_names_;
  std::string line_;
  ChromeTraceStats stats_;
  internal::GpuTraceWriter gpu_;
};

}  // namespace

ChromeTraceStats write_chrome_trace(TraceReader& reader, const ChromeTraceOptions& options, std::ostream& out) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // trace_range.h
  }
  ChromeTraceWriter writer(out, range, options);
  writer.start();
  reader.read(writer);
  writer.finish();
  return writer.stats();
}

bool write_chrome_trace_file(TraceReader& reader, const ChromeTraceOptions& options, const std::string& path,
                             ChromeTraceStats* stats, std::string* error) {
  OutputFile file;
  if (!file.open(path, error)) return false;
  ChromeTraceStats s = write_chrome_trace(reader, options, file.stream());
  if (stats) *stats = s;
  return file.close(error);
}

}  // namespace ringprof
