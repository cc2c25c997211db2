// tools_records.cpp — a recording's events as columns (tools_records.h).
//
// Columns rather than records: a recording holds millions of events, and
// lists of plain numbers and strings are what pandas builds a DataFrame from
// fastest; the package makes named tuples from them only when iterated.
// Everything is decoded without the GIL and converted once at the end.
#include "tools_records.h"

#include <pybind11/stl.h>

#include <cstring>
#include <map>

#include "ringprof/gpu.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"
#include "symbols/demangle.h"

namespace py = pybind11;

namespace ringprof::python {
namespace {

struct Zones {
  std::vector<uint32_t> pid, tid, depth, line;
  std::vector<std::string> thread, name, file;
  std::vector<uint64_t> start_ns, end_ns, dur_ns, self_ns;
  std::vector<std::map<std::string, std::string>> args;  // zone_arg() key -> value text
  std::vector<std::vector<std::string>> stack;           // with_stack: "file(line): function", innermost first
};
// Async spans: begun on one thread (tid), ended on any (end_tid).
struct Spans {
  std::vector<uint32_t> pid, tid, end_tid;
  std::vector<std::string> thread, name;
  std::vector<uint64_t> id, start_ns, end_ns, dur_ns;
  std::vector<uint8_t> unterminated;
  std::vector<std::map<std::string, std::string>> args;
};
struct Samples {
  std::vector<uint32_t> pid, tid;
  std::vector<std::string> thread, function;
  std::vector<uint64_t> ts_ns;
  std::vector<std::vector<std::string>> stack;  // leaf first
};
struct Gpu {
  std::vector<uint32_t> pid, device, stream, correlation;
  std::vector<std::string> kind, name;
  std::vector<uint64_t> start_ns, end_ns, dur_ns, bytes;
};
struct Memory {
  std::vector<uint32_t> pid, tid;
  std::vector<std::string> kind, pool;
  std::vector<uint64_t> ts_ns, address, bytes;
};
struct Steps {
  std::vector<uint32_t> pid, tid;
  std::vector<uint64_t> ts_ns, step;
};
struct Counters {
  std::vector<uint32_t> pid, tid;
  std::vector<std::string> name;
  std::vector<uint64_t> ts_ns;
  std::vector<double> value;
};

struct Collected {
  Zones zones;
  Spans spans;
  Samples samples;
  Gpu gpu;
  Memory memory;
  Steps steps;
  Counters counters;
  std::vector<std::string> problems;
};

std::string thread_name(const ProcessState& p, uint32_t index) {
  const ThreadState* t = p.thread(index);
  return t ? t->name : std::string();
}

void collect(TraceReader& reader, const TimeRange& range, Collected& out) {
  StackResolver resolver;
  const ProcessState* current = nullptr;
  ZoneTracker tracker([&](const ClosedZone& z) {
    if (!range.overlaps(z.begin_ns, z.end_ns)) return;
    const ProcessState& p = *current;
    Zones& c = out.zones;
    c.pid.push_back(p.pid);
    c.tid.push_back(p.tid_of(z.thread_index));
    c.thread.push_back(thread_name(p, z.thread_index));
    const Location* loc = p.location(z.loc);
    c.name.push_back(loc ? loc->name : p.location_name(z.loc));
    c.file.push_back(loc ? loc->file : std::string());
    c.line.push_back(loc ? loc->line : 0);
    c.start_ns.push_back(z.begin_ns);
    c.end_ns.push_back(z.end_ns);
    c.dur_ns.push_back(z.duration_ns());
    c.self_ns.push_back(z.self_ns());
    c.depth.push_back(z.depth);
    std::map<std::string, std::string>& args = c.args.emplace_back();
    for (const ZoneArgIds& a : z.args) args[p.location_name(a.key)] = zone_arg_value(p, a.value);
    std::vector<std::string>& stack = c.stack.emplace_back();
    if (z.stack)
      for (const ResolvedFrame& f : resolver.stack(p, z.stack)) stack.push_back(source_frame_text(f));
  });
  tracker.set_on_async([&](const ClosedZone& z) {
    if (!range.overlaps(z.begin_ns, z.end_ns)) return;
    const ProcessState& p = *current;
    Spans& c = out.spans;
    c.pid.push_back(p.pid);
    c.tid.push_back(p.tid_of(z.thread_index));
    c.end_tid.push_back(p.tid_of(z.end_thread_index));
    c.thread.push_back(thread_name(p, z.thread_index));
    c.name.push_back(p.location_name(z.loc));
    c.id.push_back(z.async_id);
    c.start_ns.push_back(z.begin_ns);
    c.end_ns.push_back(z.end_ns);
    c.dur_ns.push_back(z.duration_ns());
    c.unterminated.push_back(z.unterminated ? 1 : 0);
    std::map<std::string, std::string>& args = c.args.emplace_back();
    for (const ZoneArgIds& a : z.args) args[p.location_name(a.key)] = zone_arg_value(p, a.value);
  });
  reader.read([&](const SegmentView& v) {
    if (current != &v.process) {
      if (current) tracker.finish();
      tracker.clear();
      current = &v.process;
    }
    const ProcessState& p = v.process;
    for (const DecodedEvent& e : v.segment.events) {
      tracker.add(e);
      if (!range.contains(e.ts_ns)) continue;
      switch (e.kind) {
        case EventKind::Sample: {
          Samples& s = out.samples;
          s.pid.push_back(p.pid);
          s.tid.push_back(p.tid_of(e.thread_index));
          s.thread.push_back(thread_name(p, e.thread_index));
          s.ts_ns.push_back(e.ts_ns);
          std::vector<std::string> frames;
          for (const ResolvedFrame& f : resolver.stack(p, e.loc)) frames.push_back(f.function);
          s.function.push_back(frames.empty() ? std::string() : frames.front());
          s.stack.push_back(std::move(frames));
          break;
        }
        case EventKind::Alloc:
        case EventKind::Free: {
          Memory& m = out.memory;
          m.pid.push_back(p.pid);
          m.tid.push_back(p.tid_of(e.thread_index));
          m.kind.push_back(e.kind == EventKind::Alloc ? "alloc" : "free");
          m.pool.push_back(p.location_name(e.loc));
          m.ts_ns.push_back(e.ts_ns);
          m.address.push_back(e.address);
          m.bytes.push_back(e.value);
          break;
        }
        case EventKind::Step:
          out.steps.pid.push_back(p.pid);
          out.steps.tid.push_back(p.tid_of(e.thread_index));
          out.steps.ts_ns.push_back(e.ts_ns);
          out.steps.step.push_back(e.value);
          break;
        case EventKind::Counter: {
          Counters& c = out.counters;
          c.pid.push_back(p.pid);
          c.tid.push_back(p.tid_of(e.thread_index));
          c.name.push_back(p.location_name(e.loc));
          c.ts_ns.push_back(e.ts_ns);
          c.value.push_back(bits_double(e.value));
          break;
        }
        case EventKind::ZoneBegin:
        case EventKind::ZoneEnd:
        case EventKind::ZoneArg:  // zones come whole from the tracker above
        case EventKind::ZoneStack:
        case EventKind::AsyncBegin:  // spans come whole from the tracker too
        case EventKind::AsyncEnd:
        case EventKind::Instant:
        case EventKind::FlowBegin:
        case EventKind::FlowStep:
        case EventKind::FlowEnd:
        case EventKind::Mark:
        case EventKind::HeapAlloc:  // the heap profile reads them (heap_profile.h)
        case EventKind::HeapStack:
        case EventKind::HeapFree:
        case EventKind::None:
        case EventKind::ThreadName:
        case EventKind::Continuation:
          break;
      }
    }
    for (const GpuActivity& a : v.segment.gpu) {
      if (a.kind == GpuKind::None || !range.overlaps(a.start_ns, a.end_ns)) continue;
      Gpu& g = out.gpu;
      g.pid.push_back(p.pid);
      g.kind.push_back(gpu_kind_name(a.kind));
      const bool named = a.name > 0 && a.name <= v.segment.gpu_names.size();
      g.name.push_back(named ? internal::demangle(v.segment.gpu_names[a.name - 1]) : std::string());
      g.start_ns.push_back(a.start_ns);
      g.end_ns.push_back(a.end_ns);
      g.dur_ns.push_back(a.end_ns - a.start_ns);
      g.device.push_back(a.device);
      g.stream.push_back(a.stream);
      g.correlation.push_back(a.correlation);
      g.bytes.push_back(a.bytes);
    }
  });
  if (current) tracker.finish();
  out.problems = problem_lines(reader);
  for (const std::string& w : resolver.take_warnings()) out.problems.push_back(w);
}

}  // namespace

std::optional<TimeRange> find_window(TraceReader& reader, std::optional<uint64_t> window_id, std::string* error) {
  if (!window_id) return TimeRange{};
  RangeSpec spec;
  spec.window_id = window_id;
  return resolve_trace_range(reader, spec, error);
}

std::vector<std::string> problem_lines(const TraceReader& reader) {
  std::vector<std::string> out;
  for (const Problem& p : reader.problems()) out.push_back(format_problem(p));
  return out;
}

py::dict read_records(const std::vector<std::string>& paths, std::optional<uint64_t> window_id) {
  Collected c;
  std::string error;
  bool window_ok;
  {
    py::gil_scoped_release release;
    TraceReader reader(paths);
    const std::optional<TimeRange> range = find_window(reader, window_id, &error);
    window_ok = range.has_value();
    if (window_ok) collect(reader, *range, c);
  }
  if (!window_ok) throw py::value_error(error);
  py::dict d;
  d["zones"] =
      py::dict(py::arg("pid") = c.zones.pid, py::arg("tid") = c.zones.tid, py::arg("thread") = c.zones.thread,
               py::arg("name") = c.zones.name, py::arg("start_ns") = c.zones.start_ns,
               py::arg("end_ns") = c.zones.end_ns, py::arg("dur_ns") = c.zones.dur_ns,
               py::arg("self_ns") = c.zones.self_ns, py::arg("depth") = c.zones.depth, py::arg("file") = c.zones.file,
               py::arg("line") = c.zones.line, py::arg("args") = c.zones.args, py::arg("stack") = c.zones.stack);
  std::vector<bool> unterminated(c.spans.unterminated.begin(), c.spans.unterminated.end());
  d["spans"] = py::dict(
      py::arg("pid") = c.spans.pid, py::arg("tid") = c.spans.tid, py::arg("end_tid") = c.spans.end_tid,
      py::arg("thread") = c.spans.thread, py::arg("name") = c.spans.name, py::arg("id") = c.spans.id,
      py::arg("start_ns") = c.spans.start_ns, py::arg("end_ns") = c.spans.end_ns, py::arg("dur_ns") = c.spans.dur_ns,
      py::arg("unterminated") = unterminated, py::arg("args") = c.spans.args);
  d["samples"] = py::dict(py::arg("pid") = c.samples.pid, py::arg("tid") = c.samples.tid,
                          py::arg("thread") = c.samples.thread, py::arg("ts_ns") = c.samples.ts_ns,
                          py::arg("function") = c.samples.function, py::arg("stack") = c.samples.stack);
  d["gpu"] = py::dict(py::arg("pid") = c.gpu.pid, py::arg("kind") = c.gpu.kind, py::arg("name") = c.gpu.name,
                      py::arg("start_ns") = c.gpu.start_ns, py::arg("end_ns") = c.gpu.end_ns,
                      py::arg("dur_ns") = c.gpu.dur_ns, py::arg("device") = c.gpu.device,
                      py::arg("stream") = c.gpu.stream, py::arg("correlation") = c.gpu.correlation,
                      py::arg("bytes") = c.gpu.bytes);
  d["memory"] = py::dict(py::arg("pid") = c.memory.pid, py::arg("tid") = c.memory.tid,
                         py::arg("kind") = c.memory.kind, py::arg("pool") = c.memory.pool,
                         py::arg("ts_ns") = c.memory.ts_ns, py::arg("address") = c.memory.address,
                         py::arg("bytes") = c.memory.bytes);
  d["steps"] = py::dict(py::arg("pid") = c.steps.pid, py::arg("tid") = c.steps.tid,
                        py::arg("ts_ns") = c.steps.ts_ns, py::arg("step") = c.steps.step);
  d["counters"] = py::dict(py::arg("pid") = c.counters.pid, py::arg("tid") = c.counters.tid,
                           py::arg("name") = c.counters.name, py::arg("ts_ns") = c.counters.ts_ns,
                           py::arg("value") = c.counters.value);
  d["problems"] = c.problems;
  return d;
}

}  // namespace ringprof::python
