// Perfetto trace writer: hand-built files in, the output parsed back with the
// classes protoc generates from schemas/perfetto_trace.proto, and read the way
// trace_processor reads it (sequences, interning, the delta clock, default
// tracks); every event is then checked against what the inputs say it must be.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <sstream>

#include "perfetto_trace.pb.h"
#include "ringprof/ops.h"
#include "ringprof/internal/ring.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/tools/perfetto_trace.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"
#include "support/exporter_workload.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

namespace pf = ::ringprof::perfetto;
using test::TraceBuilder;

constexpr uint64_t T = 1'000'000'000ull;

// ---- a reader of the output, as trace_processor resolves it ----

struct Event {
  uint64_t ts = 0;
  uint64_t track = 0;
  pf::TrackEvent::Type type = pf::TrackEvent::TYPE_UNSPECIFIED;
  std::string name, category, file;
  uint32_t line = 0;
  std::map<std::string, std::string> args;  // every value as text
  std::vector<uint64_t> flows, terminating_flows;
  bool has_value = false;
  double value = 0;
};

struct Frame {
  std::string function, file, mapping, build_id;
  uint32_t line = 0;
  uint64_t rel_pc = 0;
};

struct Sample {
  uint64_t ts = 0;
  uint32_t pid = 0, tid = 0;
  std::vector<Frame> frames;  // root first
};

struct Model {
  std::map<uint64_t, pf::TrackDescriptor> tracks;
  std::vector<Event> events;
  std::vector<Sample> samples;
  std::vector<pf::ClockSnapshot> clocks;  // the builtin-clock snapshots
  size_t packets = 0;
  std::string error;  // the first thing a reader could not resolve

  uint64_t track_named(const std::string& name) const {
    for (const auto& [uuid, t] : tracks)
      if (t.name() == name || (t.has_thread() && t.thread().thread_name() == name)) return uuid;
    return 0;
  }
  std::vector<Event> on(uint64_t track) const {
    std::vector<Event> v;
    for (const Event& e : events)
      if (e.track == track) v.push_back(e);
    std::stable_sort(v.begin(), v.end(), [](const Event& a, const Event& b) { return a.ts < b.ts; });
    return v;
  }
};

struct SequenceState {
  bool cleared = false;
  uint32_t clock = 6;  // BOOTTIME, the reader's default
  uint64_t default_track = 0;
  bool has_delta = false;
  uint64_t delta_value = 0;
  std::map<uint64_t, std::string> names, categories, annotation_names, strings;
  std::map<uint64_t, pf::SourceLocation> locations;
  std::map<uint64_t, pf::Frame> frames;
  std::map<uint64_t, pf::Callstack> callstacks;
  std::map<uint64_t, pf::Mapping> mappings;
};

Model read_model(const std::string& bytes) {
  Model m;
  pf::Trace trace;
  if (!trace.ParseFromString(bytes)) {
    m.error = "not a Trace message";
    return m;
  }
  std::map<uint32_t, SequenceState> seqs;
  for (const pf::TracePacket& p : trace.packet()) {
    ++m.packets;
    if (!p.has_trusted_packet_sequence_id()) {
      m.error = "a packet without a sequence";
      continue;
    }
    SequenceState& s = seqs[p.trusted_packet_sequence_id()];
    if (p.sequence_flags() & pf::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED) {
      s = SequenceState();
      s.cleared = true;
    }
    if (!s.cleared && m.error.empty()) m.error = "a sequence whose state was never cleared";
    if (p.has_trace_packet_defaults()) {
      s.clock = p.trace_packet_defaults().timestamp_clock_id();
      s.default_track = p.trace_packet_defaults().track_event_defaults().track_uuid();
    }
    if (p.has_clock_snapshot()) {
      bool builtin_only = true;
      for (const auto& c : p.clock_snapshot().clocks()) {
        if (c.clock_id() >= 64) {
          builtin_only = false;
          if (c.is_incremental()) {
            s.has_delta = true;
            s.delta_value = c.timestamp();
          }
        }
      }
      if (builtin_only) m.clocks.push_back(p.clock_snapshot());
    }
    const pf::InternedData& in = p.interned_data();
    for (const auto& n : in.event_names()) s.names[n.iid()] = n.name();
    for (const auto& n : in.event_categories()) s.categories[n.iid()] = n.name();
    for (const auto& n : in.debug_annotation_names()) s.annotation_names[n.iid()] = n.name();
    for (const auto& l : in.source_locations()) s.locations[l.iid()] = l;
    for (const auto& list : {&in.function_names(), &in.source_paths(), &in.mapping_paths(), &in.build_ids()})
      for (const auto& str : *list) s.strings[str.iid()] = str.str();
    for (const auto& f : in.frames()) s.frames[f.iid()] = f;
    for (const auto& c : in.callstacks()) s.callstacks[c.iid()] = c;
    for (const auto& mp : in.mappings()) s.mappings[mp.iid()] = mp;

    uint64_t ts = p.timestamp();
    const uint32_t clock = p.has_timestamp_clock_id() ? p.timestamp_clock_id() : s.clock;
    if (p.has_timestamp()) {
      if (clock == 64) {
        if (!s.has_delta && m.error.empty()) m.error = "the delta clock used before it was defined";
        s.delta_value += p.timestamp();
        ts = s.delta_value;
      } else if (clock != pf::BUILTIN_CLOCK_MONOTONIC && m.error.empty()) {
        m.error = "a timestamp on clock " + std::to_string(clock);
      }
    }
    if (p.has_track_descriptor()) m.tracks[p.track_descriptor().uuid()] = p.track_descriptor();
    if (p.has_track_event()) {
      const pf::TrackEvent& te = p.track_event();
      Event e;
      e.ts = ts;
      e.type = te.type();
      e.track = te.has_track_uuid() ? te.track_uuid() : s.default_track;
      if (te.has_name_iid()) {
        if (!s.names.count(te.name_iid()) && m.error.empty()) m.error = "an unknown name iid";
        e.name = s.names[te.name_iid()];
      } else {
        e.name = te.name();
      }
      for (uint64_t c : te.category_iids()) {
        if (!s.categories.count(c) && m.error.empty()) m.error = "an unknown category iid";
        e.category = s.categories[c];
      }
      if (te.has_source_location_iid()) {
        const pf::SourceLocation& l = s.locations.at(te.source_location_iid());
        e.file = l.file_name();
        e.line = l.line_number();
      }
      for (const pf::DebugAnnotation& a : te.debug_annotations()) {
        const std::string key = a.has_name_iid() ? s.annotation_names.at(a.name_iid()) : a.name();
        std::string v;
        if (a.has_uint_value()) v = std::to_string(a.uint_value());
        else if (a.has_int_value()) v = std::to_string(a.int_value());
        else if (a.has_bool_value()) v = a.bool_value() ? "true" : "false";
        else if (a.has_string_value()) v = a.string_value();
        else if (a.has_double_value()) v = std::to_string(a.double_value());
        e.args[key] = v;
      }
      e.flows.assign(te.flow_ids().begin(), te.flow_ids().end());
      e.terminating_flows.assign(te.terminating_flow_ids().begin(), te.terminating_flow_ids().end());
      if (te.has_double_counter_value()) {
        e.has_value = true;
        e.value = te.double_counter_value();
      } else if (te.has_counter_value()) {
        e.has_value = true;
        e.value = static_cast<double>(te.counter_value());
      }
      m.events.push_back(e);
    }
    if (p.has_perf_sample()) {
      Sample smp;
      smp.ts = ts;
      smp.pid = p.perf_sample().pid();
      smp.tid = p.perf_sample().tid();
      for (uint64_t fid : s.callstacks.at(p.perf_sample().callstack_iid()).frame_ids()) {
        const pf::Frame& f = s.frames.at(fid);
        Frame fr;
        fr.function = s.strings.at(f.function_name_id());
        if (f.has_source_path_iid()) fr.file = s.strings.at(f.source_path_iid());
        fr.line = f.line_number();
        fr.rel_pc = f.rel_pc();
        const pf::Mapping& mp = s.mappings.at(f.mapping_id());
        for (uint64_t part : mp.path_string_ids()) fr.mapping += "/" + s.strings.at(part);
        if (mp.has_build_id()) fr.build_id = s.strings.at(mp.build_id());
        smp.frames.push_back(fr);
      }
      m.samples.push_back(smp);
    }
  }
  return m;
}

std::string convert(const std::vector<std::string>& paths, const PerfettoTraceOptions& options = {},
                    PerfettoTraceStats* stats = nullptr) {
  TraceReader reader(paths);
  std::ostringstream out;
  PerfettoTraceStats s = write_perfetto_trace(reader, options, out);
  if (stats) *stats = s;
  return out.str();
}

// The shared workload (support/exporter_workload.h says what it holds).
void write_workload(const std::string& path) { test::write_exporter_workload(path); }

// Slices on a track as "name[begin,end]" from its begin/end events, nested
// by a stack as trace_processor nests them; "!" marks an end with no begin.
std::vector<std::string> slices(const std::vector<Event>& events) {
  std::vector<std::string> out;
  std::vector<std::pair<std::string, uint64_t>> open;
  for (const Event& e : events) {
    if (e.type == pf::TrackEvent::TYPE_SLICE_BEGIN) open.emplace_back(e.name, e.ts);
    if (e.type != pf::TrackEvent::TYPE_SLICE_END) continue;
    if (open.empty()) {
      out.push_back("!");
      continue;
    }
    out.push_back(open.back().first + "[" + std::to_string(open.back().second - T) + "," + std::to_string(e.ts - T) +
                  "]");
    open.pop_back();
  }
  for (const auto& o : open) out.push_back(o.first + "[" + std::to_string(o.second - T) + ",open]");
  return out;
}

TEST(PerfettoTrace, EveryEventFieldByField) {
  test::TempDir dir;
  write_workload(dir.file("a.rpf"));
  PerfettoTraceStats stats;
  const std::string bytes = convert({dir.file("a.rpf")}, {}, &stats);
  const Model m = read_model(bytes);
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(stats.packets_written, m.packets);
  EXPECT_EQ(stats.bytes_written, bytes.size());

  // Tracks: the process, its two threads under it.
  const uint64_t proc = [&] {
    for (const auto& [uuid, t] : m.tracks)
      if (t.has_process()) return uuid;
    return uint64_t{0};
  }();
  ASSERT_NE(proc, 0u);
  EXPECT_EQ(m.tracks.at(proc).process().pid(), 4242);
  EXPECT_EQ(m.tracks.at(proc).process().process_name(), "trainer");
  const uint64_t main_t = m.track_named("main"), loader = m.track_named("loader");
  ASSERT_NE(main_t, 0u);
  ASSERT_NE(loader, 0u);
  EXPECT_EQ(m.tracks.at(main_t).thread().tid(), 5001);
  EXPECT_EQ(m.tracks.at(main_t).thread().pid(), 4242);
  EXPECT_EQ(m.tracks.at(main_t).parent_uuid(), proc);
  EXPECT_EQ(m.tracks.at(loader).thread().tid(), 5002);

  // The clock: CLOCK_MONOTONIC is the trace's clock; the process's start
  // relates it to wall-clock time.
  ASSERT_EQ(m.clocks.size(), 1u);
  EXPECT_EQ(m.clocks[0].primary_trace_clock(), pf::BUILTIN_CLOCK_MONOTONIC);
  ASSERT_EQ(m.clocks[0].clocks_size(), 2);
  EXPECT_EQ(m.clocks[0].clocks(0).clock_id(), static_cast<uint32_t>(pf::BUILTIN_CLOCK_MONOTONIC));
  EXPECT_EQ(m.clocks[0].clocks(1).clock_id(), static_cast<uint32_t>(pf::BUILTIN_CLOCK_REALTIME));

  // main: forward [1000, 4000] around backward [2000, 2500]; forward from
  // 8000, closed at the thread's last event (9000) and flagged unterminated.
  const std::vector<Event> on_main = m.on(main_t);
  EXPECT_EQ(slices(on_main), (std::vector<std::string>{"backward[2000,2500]", "forward[1000,4000]", "forward[8000,9000]"}));
  std::vector<Event> begins, ends;
  for (const Event& e : on_main) {
    if (e.type == pf::TrackEvent::TYPE_SLICE_BEGIN) begins.push_back(e);
    if (e.type == pf::TrackEvent::TYPE_SLICE_END) ends.push_back(e);
  }
  ASSERT_EQ(begins.size(), 3u);
  EXPECT_EQ(begins[0].category, "ringprof");
  EXPECT_EQ(begins[0].file, "model.cpp");
  EXPECT_EQ(begins[0].line, 42u);
  EXPECT_EQ(begins[1].file, "");  // backward: no call site known
  ASSERT_EQ(ends.size(), 3u);
  EXPECT_TRUE(ends[0].args.empty());
  EXPECT_EQ(ends[2].args, (std::map<std::string, std::string>{{"unterminated", "true"}}));
  EXPECT_EQ(stats.zones_written, 3u);
  EXPECT_EQ(stats.unterminated_zones, 1u);
  EXPECT_EQ(stats.unmatched_zone_ends, 0u);

  // The flow: an instant at each flow event, inside the enclosing zone, with
  // one id (7 made unique to the process: Perfetto's ids are global); the
  // end terminates it. Steps and the end take the begin's name.
  std::vector<Event> flows;
  for (const Event& e : m.events)
    if (e.category == "flow") flows.push_back(e);
  ASSERT_EQ(flows.size(), 3u);
  ASSERT_EQ(flows[0].flows.size(), 1u);
  const uint64_t id = flows[0].flows[0];
  EXPECT_NE(id, 0u);
  const uint64_t flow_ts[] = {T + 2100, T + 5000, T + 6000};
  const uint64_t flow_track[] = {main_t, loader, loader};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(flows[i].name, "batch") << i;
    EXPECT_EQ(flows[i].type, pf::TrackEvent::TYPE_INSTANT) << i;
    EXPECT_EQ(flows[i].ts, flow_ts[i]) << i;
    EXPECT_EQ(flows[i].track, flow_track[i]) << i;
    if (i < 2) {
      EXPECT_EQ(flows[i].flows, std::vector<uint64_t>{id}) << i;
      EXPECT_TRUE(flows[i].terminating_flows.empty()) << i;
    } else {
      EXPECT_TRUE(flows[i].flows.empty());
      EXPECT_EQ(flows[i].terminating_flows, std::vector<uint64_t>{id});
    }
  }

  // The counter: its own track under the process, two values.
  const uint64_t loss = m.track_named("loss");
  ASSERT_NE(loss, 0u);
  EXPECT_TRUE(m.tracks.at(loss).has_counter());
  EXPECT_EQ(m.tracks.at(loss).parent_uuid(), proc);
  const std::vector<Event> values = m.on(loss);
  ASSERT_EQ(values.size(), 2u);
  EXPECT_EQ(values[0].type, pf::TrackEvent::TYPE_COUNTER);
  EXPECT_EQ(values[0].ts, T + 3000);
  EXPECT_EQ(values[0].value, 0.5);
  EXPECT_EQ(values[1].ts, T + 9000);
  EXPECT_EQ(values[1].value, -1.25);

  // The instant on loader, with its call site; the step on the process track.
  std::vector<Event> instants;
  for (const Event& e : m.on(loader))
    if (e.type == pf::TrackEvent::TYPE_INSTANT && e.category == "ringprof") instants.push_back(e);
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0].name, "checkpoint");
  EXPECT_EQ(instants[0].ts, T + 5500);
  EXPECT_EQ(instants[0].file, "ckpt.cpp");
  EXPECT_EQ(instants[0].line, 7u);
  const std::vector<Event> on_proc = m.on(proc);
  ASSERT_EQ(on_proc.size(), 1u);
  EXPECT_EQ(on_proc[0].name, "step 3");
  EXPECT_EQ(on_proc[0].ts, T + 7000);
  EXPECT_EQ(on_proc[0].args.at("step"), "3");

  // Every event accounted for: 6 slice events, 3 flows, 2 counters, 1 instant, 1 step.
  EXPECT_EQ(m.events.size(), 13u);
}

// The window keeps zones that overlap it whole, as the Chrome trace does,
// however they straddle its edges; events outside it are left out.
TEST(PerfettoTrace, WindowKeepsOverlappingZonesWhole) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(11, "w");
  const uint32_t outer = b.location("outer"), z[3] = {b.location("z0"), b.location("z1"), b.location("z2")};
  const uint32_t mark = b.location("mark");
  b.begin(th, T, outer);  // [0, 6 ms]: around everything
  for (int i = 0; i < 3; ++i) {
    const uint64_t at = T + static_cast<uint64_t>(i) * 2'000'000;
    b.begin(th, at, z[i]);
    b.instant(th, at + 500'000, mark);
    b.end(th, at + 1'000'000);
    b.flush();
  }
  b.end(th, T + 6'000'000);
  b.flush();
  test::write_file(dir.file("w.rpf"), b.bytes());

  PerfettoTraceOptions options;
  options.range.from_ns = 2'200'000;  // inside z1, around its instant (2.5 ms)
  options.range.to_ns = 2'600'000;
  const Model m = read_model(convert({dir.file("w.rpf")}, options));
  ASSERT_EQ(m.error, "");
  const std::vector<Event> events = m.on(m.track_named("w"));
  // outer and z1 overlap the window and are whole; z0 and z2 do not.
  EXPECT_EQ(slices(events), (std::vector<std::string>{"z1[2000000,3000000]", "outer[0,6000000]"}));
  size_t instants = 0;
  for (const Event& e : events)
    if (e.type == pf::TrackEvent::TYPE_INSTANT) {
      ++instants;
      EXPECT_EQ(e.ts, T + 2'500'000);
    }
  EXPECT_EQ(instants, 1u);
}

// A thread filter keeps one thread's events; an end without its begin is
// skipped and counted; a zone never closed ends at its thread's last event.
TEST(PerfettoTrace, ThreadFilterUnmatchedEndsAndUnterminatedZones) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t a = b.thread(21, "a"), other = b.thread(22, "other");
  const uint32_t work = b.location("work");
  b.end(a, T + 10);  // its begin is gone
  b.begin(a, T + 100, work);
  b.begin(other, T + 100, work);
  b.end(other, T + 150);
  const uint32_t launch = b.gpu_name("cudaLaunchKernel");
  for (uint32_t tid : {21u, 22u}) {  // an API call on each thread
    GpuActivity api;
    api.kind = GpuKind::RuntimeApi;
    api.name = launch;
    api.start_ns = T + 110;
    api.end_ns = T + 120;
    api.tid = tid;
    b.gpu(api);
  }
  b.flush();
  test::write_file(dir.file("one.rpf"), b.bytes());
  PerfettoTraceOptions options;
  options.thread = "a";
  PerfettoTraceStats stats;
  const Model m = read_model(convert({dir.file("one.rpf")}, options, &stats));
  ASSERT_EQ(m.error, "");
  EXPECT_EQ(m.track_named("other"), 0u);  // filtered out: no track at all
  // The kept thread's API call, under it; the other thread's is left out.
  const uint64_t cuda_api = m.track_named("CUDA API");
  ASSERT_NE(cuda_api, 0u);
  EXPECT_EQ(m.tracks.at(cuda_api).parent_uuid(), m.track_named("a"));
  EXPECT_EQ(slices(m.on(cuda_api)), std::vector<std::string>{"cudaLaunchKernel[110,120]"});
  size_t api_tracks = 0;
  for (const auto& [uuid, t] : m.tracks) api_tracks += t.name().find("CUDA API") != std::string::npos;
  EXPECT_EQ(api_tracks, 1u);
  EXPECT_EQ(slices(m.on(m.track_named("a"))), (std::vector<std::string>{"work[100,100]"}));
  EXPECT_EQ(stats.unmatched_zone_ends, 1u);
  EXPECT_EQ(stats.unterminated_zones, 1u);
}


// Two processes: a process track each with its threads, and a clock
// snapshot each relating its own start on CLOCK_MONOTONIC to wall-clock
// time, so the two line up on one time axis.
TEST(PerfettoTrace, TwoProcessesEachWithTheirTracksAndClock) {
  test::TempDir dir;
  for (uint32_t pid : {7001u, 7002u}) {
    TraceBuilder b(pid, T + pid);
    const uint32_t th = b.thread(pid + 1, "worker");
    const uint32_t work = b.location("work");
    b.begin(th, T + pid + 10, work);
    b.flow_begin(th, T + pid + 15, 5, work);  // the same id in both: two flows, not one
    b.end(th, T + pid + 20);
    b.flush();
    test::write_file(dir.file(std::to_string(pid) + ".rpf"), b.bytes());
  }
  const Model m = read_model(convert({dir.path()}));
  ASSERT_EQ(m.error, "");
  std::map<int32_t, uint64_t> process_tracks;  // pid -> uuid
  for (const auto& [uuid, t] : m.tracks)
    if (t.has_process()) process_tracks[t.process().pid()] = uuid;
  ASSERT_EQ(process_tracks.size(), 2u);
  ASSERT_EQ(m.clocks.size(), 2u);
  std::set<uint64_t> monotonic_starts;
  for (const auto& c : m.clocks) {
    ASSERT_EQ(c.clocks_size(), 2);
    monotonic_starts.insert(c.clocks(0).timestamp());
    EXPECT_EQ(c.clocks(1).timestamp(), 1'700'000'000'000'000'000ull);
  }
  EXPECT_EQ(monotonic_starts, (std::set<uint64_t>{T + 7001, T + 7002}));
  std::set<uint64_t> flow_ids;
  for (const Event& e : m.events)
    for (uint64_t id : e.flows) flow_ids.insert(id);
  EXPECT_EQ(flow_ids.size(), 2u);
  for (const auto& [pid, uuid] : process_tracks) {
    uint64_t thread = 0;
    for (const auto& [u, t] : m.tracks)
      if (t.has_thread() && t.thread().pid() == pid) thread = u;
    ASSERT_NE(thread, 0u) << pid;
    EXPECT_EQ(m.tracks.at(thread).parent_uuid(), uuid);
    EXPECT_EQ(m.tracks.at(thread).thread().tid(), pid + 1);
    const uint64_t base = T + static_cast<uint64_t>(pid);
    EXPECT_EQ(slices(m.on(thread)), std::vector<std::string>{"work[" + std::to_string(base + 10 - T) + "," +
                                                             std::to_string(base + 20 - T) + "]"});
  }
}

// Names made per event ("batch 17") are interned up to a cap, then written
// whole, so the interning tables stop growing and every name still reads back.
TEST(PerfettoTrace, NamesPastTheInterningCapAreWrittenWhole) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(31, "t");
  constexpr int kNames = 17000;  // past PacketWriter::kMaxInternedNames (16384)
  for (int i = 0; i < kNames; ++i) {
    b.instant(th, T + static_cast<uint64_t>(i), b.location("batch " + std::to_string(i)));
    if (i % 4096 == 4095) b.flush();
  }
  b.flush();
  test::write_file(dir.file("n.rpf"), b.bytes());
  const std::string bytes = convert({dir.file("n.rpf")});
  const Model m = read_model(bytes);
  ASSERT_EQ(m.error, "");
  ASSERT_EQ(m.events.size(), static_cast<size_t>(kNames));
  for (int i = 0; i < kNames; ++i) ASSERT_EQ(m.events[static_cast<size_t>(i)].name, "batch " + std::to_string(i)) << i;
  pf::Trace trace;
  ASSERT_TRUE(trace.ParseFromString(bytes));
  size_t interned = 0, inline_names = 0;
  for (const auto& p : trace.packet()) {
    interned += static_cast<size_t>(p.interned_data().event_names_size());
    inline_names += p.has_track_event() && p.track_event().has_name();
  }
  EXPECT_EQ(interned, 16384u);
  EXPECT_EQ(inline_names, static_cast<size_t>(kNames) - 16384u);
}

// trace_processor refuses a clock snapshot whose trace clock goes backwards:
// a process that started before the one read before it adds none.
TEST(PerfettoTrace, ClockSnapshotsOnlyMoveForward) {
  test::TempDir dir;
  const std::pair<uint32_t, uint64_t> processes[] = {{8001, T + 500}, {8002, T + 100}, {8003, T + 900}};
  for (const auto& [pid, start] : processes) {
    TraceBuilder b(pid, start);
    b.instant(b.thread(pid, "main"), start + 1, b.location("x"));
    b.flush();
    test::write_file(dir.file(std::to_string(pid) + ".rpf"), b.bytes());
  }
  const Model m = read_model(convert({dir.path()}));
  ASSERT_EQ(m.error, "");
  std::vector<uint64_t> starts;
  for (const auto& c : m.clocks) starts.push_back(c.clocks(0).timestamp());
  EXPECT_EQ(starts, (std::vector<uint64_t>{T + 500, T + 900}));  // pid order; 8002's earlier start adds none
  EXPECT_EQ(m.events.size(), 3u);
}

// Samples, memory, marks, drop gaps and GPU records, each where the header
// (ringprof/tools/perfetto_trace.h) says it goes.
TEST(PerfettoTrace, SamplesMemoryMarksDropsAndGpu) {
  test::TempDir dir;
  TraceBuilder b;
  ModuleInfo lib;
  lib.path = "/opt/app/libwork.so";
  lib.build_id = "00112233";
  lib.base = 0x7000000000;
  lib.start = 0x7000001000;
  lib.end = 0x7000002000;
  b.module(lib);
  b.sampler("perf_event", 100);
  const uint32_t stack = b.stack({0x7000001234, 0x7000001500, 0x10});  // leaf first; the root is in no module
  const uint32_t main_th = b.thread(100, "main");
  const uint32_t heap = b.location("heap");
  const uint32_t window_begin = b.location(kMarkWindowBegin), crash = b.location(kMarkCrash);
  const uint32_t drops_begin = b.location(kMarkDropsBegin), drops_end = b.location(kMarkDropsEnd);
  b.sample(main_th, T + 1000, stack);
  b.sample(main_th, T + 1050, stack);
  b.alloc(main_th, T + 1100, heap, 0xA000, 100);
  b.alloc(main_th, T + 1300, heap, 0xB000, 1000);
  b.free(main_th, T + 1500, heap, 0xA000);
  b.mark(main_th, T + 2000, window_begin, 3);
  b.mark(main_th, T + 2500, crash, uint64_t{100} << 32 | 11);
  const uint32_t tick = b.location("tick");
  b.mark(main_th, T + 3000, drops_begin, 5);
  b.instant(main_th, T + 3200, tick);  // written before the gap, which begins earlier: an absolute timestamp
  b.mark(main_th, T + 3500, drops_end, 5);
  const uint32_t launch = b.gpu_name("cudaLaunchKernel"), matmul = b.gpu_name("_Z6matmulPfS_S_i"),
                 nvtx = b.gpu_name("step");
  GpuActivity api;
  api.kind = GpuKind::RuntimeApi;
  api.name = launch;
  api.start_ns = T + 4000;
  api.end_ns = T + 4100;
  api.tid = 100;
  api.correlation = 1;
  b.gpu(api);
  GpuActivity k;
  k.kind = GpuKind::Kernel;
  k.name = matmul;
  k.start_ns = T + 4200;
  k.end_ns = T + 5200;
  k.stream = 7;
  k.correlation = 1;
  k.grid[0] = 1024, k.grid[1] = k.grid[2] = 1;
  k.block[0] = 256, k.block[1] = k.block[2] = 1;
  b.gpu(k);
  for (uint64_t start : {6000, 6100}) {  // two NVTX ranges that overlap without nesting
    GpuActivity r;
    r.kind = GpuKind::Marker;
    r.sub_kind = 1;
    r.name = nvtx;
    r.start_ns = T + start;
    r.end_ns = T + start + 500;
    r.tid = 100;
    b.gpu(r);
  }
  GpuActivity alloc;
  alloc.kind = GpuKind::Memory;
  alloc.sub_kind = 1;
  alloc.bytes = 4096;
  alloc.start_ns = alloc.end_ns = T + 7000;
  b.gpu(alloc);
  b.flush();
  test::write_file(dir.file("s.rpf"), b.bytes());
  PerfettoTraceStats stats;
  const Model m = read_model(convert({dir.file("s.rpf")}, {}, &stats));
  ASSERT_EQ(m.error, "");
  const uint64_t main_t = m.track_named("main");
  ASSERT_NE(main_t, 0u);

  // Samples: pid, tid, time, and the stack root first: the address in no
  // module, then the library's two frames at their offsets from its load
  // bias, in its mapping with its build ID.
  ASSERT_EQ(m.samples.size(), 2u);
  EXPECT_EQ(stats.samples_written, 2u);
  EXPECT_EQ(m.samples[0].ts, T + 1000);
  EXPECT_EQ(m.samples[1].ts, T + 1050);
  EXPECT_EQ(m.samples[0].pid, 4242u);
  EXPECT_EQ(m.samples[0].tid, 100u);
  ASSERT_EQ(m.samples[0].frames.size(), 3u);
  EXPECT_EQ(m.samples[0].frames[0].mapping, "/[unknown]");
  EXPECT_EQ(m.samples[0].frames[0].function, "0x10");
  EXPECT_EQ(m.samples[0].frames[1].mapping, "/opt/app/libwork.so");
  EXPECT_EQ(m.samples[0].frames[1].build_id, std::string("\x00\x11\x22\x33", 4));
  EXPECT_EQ(m.samples[0].frames[1].rel_pc, 0x1500u);
  EXPECT_EQ(m.samples[0].frames[2].rel_pc, 0x1234u);
  EXPECT_NE(m.samples[0].frames[2].function.find("libwork.so"), std::string::npos) << m.samples[0].frames[2].function;
  EXPECT_EQ(m.samples[1].frames.size(), 3u);  // the interned stack, resolved again

  // Memory: the pool's live bytes, a point per allocation and free.
  const uint64_t mem = m.track_named("memory: heap");
  ASSERT_NE(mem, 0u);
  EXPECT_EQ(m.tracks.at(mem).counter().unit(), pf::CounterDescriptor::UNIT_SIZE_BYTES);
  std::vector<double> live;
  for (const Event& e : m.on(mem)) live.push_back(e.value);
  EXPECT_EQ(live, (std::vector<double>{100, 1100, 1000}));

  // Marks on the process's marks track, described, with their values.
  const std::vector<Event> marks = m.on(m.track_named("ringprof marks"));
  ASSERT_EQ(marks.size(), 2u);
  EXPECT_EQ(marks[0].ts, T + 2000);
  EXPECT_EQ(marks[0].name, describe_mark(kMarkWindowBegin, 3));
  EXPECT_EQ(marks[0].args.at("window"), "3");
  EXPECT_EQ(marks[0].args.at("mark"), kMarkWindowBegin);
  EXPECT_EQ(marks[1].args.at("signal"), "SIGSEGV");
  EXPECT_EQ(marks[1].args.at("thread"), "100");

  // The drop gap: a slice under the thread, from the first lost event to the next kept.
  const uint64_t drops = m.track_named("ringprof drops");
  ASSERT_NE(drops, 0u);
  EXPECT_EQ(m.tracks.at(drops).parent_uuid(), main_t);
  const std::vector<Event> gap = m.on(drops);
  EXPECT_EQ(slices(gap), std::vector<std::string>{"ringprof: 5 events dropped (ring full)[3000,3500]"});
  EXPECT_EQ(gap[0].args.at("dropped"), "5");

  // GPU: the API call under its thread, the kernel on its stream, one flow
  // from the one to the other.
  const uint64_t cuda_api = m.track_named("CUDA API");
  ASSERT_NE(cuda_api, 0u);
  EXPECT_EQ(m.tracks.at(cuda_api).parent_uuid(), main_t);
  const std::vector<Event> calls = m.on(cuda_api);
  EXPECT_EQ(slices(calls), std::vector<std::string>{"cudaLaunchKernel[4000,4100]"});
  ASSERT_EQ(calls[0].flows.size(), 1u);
  const uint64_t flow = calls[0].flows[0];
  const std::vector<Event> kernels = m.on(m.track_named("GPU 0 stream 7"));
  EXPECT_EQ(slices(kernels), std::vector<std::string>{"matmul(float*, float*, float*, int)[4200,5200]"});
  EXPECT_EQ(kernels[0].terminating_flows, std::vector<uint64_t>{flow});
  EXPECT_EQ(kernels[0].category, "kernel");
  EXPECT_EQ(kernels[0].args.at("grid"), "1024x1x1");
  EXPECT_EQ(kernels[0].args.at("block"), "256x1x1");
  // Overlapping NVTX ranges: one lane each, so each track's slices nest.
  EXPECT_EQ(slices(m.on(m.track_named("NVTX"))), std::vector<std::string>{"step[6000,6500]"});
  EXPECT_EQ(slices(m.on(m.track_named("NVTX #2"))), std::vector<std::string>{"step[6100,6600]"});
  const std::vector<Event> gpu_mem = m.on(m.track_named("GPU 0 memory allocated"));
  ASSERT_EQ(gpu_mem.size(), 1u);
  EXPECT_EQ(gpu_mem[0].value, 4096);
  EXPECT_EQ(stats.gpu_records_written, 5u);
}

// Names come from the recorded program and may hold any bytes; Perfetto's
// string fields must be valid UTF-8. Each byte that starts no valid sequence
// becomes U+FFFD, as in the Chrome trace; valid UTF-8 passes unchanged.
TEST(PerfettoTrace, InvalidUtf8InNamesBecomesReplacementCharacters) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  const uint32_t th = b.thread(100, "thr\xff");
  const uint32_t bad = b.location("zone\xc3\x28", "file\xfe.cpp", 7);
  const uint32_t key = b.location("k"), value = b.location(
                                            "v\x80"
                                            "al");
  const uint32_t good = b.location("µs \xe2\x9c\x93");
  b.begin(th, T + 100, bad);
  b.arg(th, T + 100, key, value);
  b.end(th, T + 200);
  b.instant(th, T + 300, good);
  b.flush();
  test::write_file(dir.file("u.rpf"), b.bytes());
  const Model m = read_model(convert({dir.file("u.rpf")}));
  ASSERT_EQ(m.error, "");
  const std::string fffd = "\xef\xbf\xbd";
  bool zone = false, instant = false;
  for (const Event& e : m.events) {
    if (e.name == "zone" + fffd + "(") {
      zone = true;
      EXPECT_EQ(e.file, "file" + fffd + ".cpp");
    }
    if (e.args.count("k")) {
      EXPECT_EQ(e.args.at("k"), "v" + fffd + "al");
    }
    instant |= e.name == "µs \xe2\x9c\x93";
  }
  EXPECT_TRUE(zone);
  EXPECT_TRUE(instant) << "valid UTF-8 is left as it is";
  bool thread = false;
  for (const auto& [uuid, t] : m.tracks) thread |= t.has_thread() && t.thread().thread_name() == "thr" + fffd;
  EXPECT_TRUE(thread);
}

// Zone arguments reach the slice through its end event's annotations (the
// trace processor merges them into the slice's args): a key given twice keeps
// its last value, an argument with no zone open goes nowhere, and a zone
// whose end is past the data carries its arguments beside "unterminated".
TEST(PerfettoTrace, ZoneArgumentsOnTheSliceEnd) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  const uint32_t th = b.thread(100, "main");
  const uint32_t op = b.location("aten::addmm"), dims = b.location("Input Dims"), type = b.location("Input type");
  const uint32_t shape = b.location("[[8, 16], [16, 4]]"), other = b.location("[[1]]"), f32 = b.location("[float]");
  b.arg(th, T + 50, dims, other);  // no zone open: ignored
  b.begin(th, T + 100, op);
  b.arg(th, T + 100, dims, other);
  b.arg(th, T + 100, dims, shape);  // replaces
  b.arg(th, T + 100, type, f32);
  b.end(th, T + 200);
  b.begin(th, T + 300, op);
  b.arg(th, T + 300, type, f32);
  b.instant(th, T + 400, op);
  b.flush();
  test::write_file(dir.file("a.rpf"), b.bytes());
  const Model m = read_model(convert({dir.file("a.rpf")}));
  ASSERT_EQ(m.error, "");
  std::vector<Event> ends;
  for (const Event& e : m.on(m.track_named("main")))
    if (e.type == pf::TrackEvent::TYPE_SLICE_END) ends.push_back(e);
  ASSERT_EQ(ends.size(), 2u);
  EXPECT_EQ(ends[0].args, (std::map<std::string, std::string>{{"Input Dims", "[[8, 16], [16, 4]]"},
                                                               {"Input type", "[float]"}}));
  EXPECT_EQ(ends[1].args,
            (std::map<std::string, std::string>{{"Input type", "[float]"}, {"unterminated", "true"}}));
}

// A rank's process track is named "rank N (host, pid)".
TEST(PerfettoTrace, RankProcessesAreNamedByRank) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  b.host("nodeA");
  b.rank(7, 8);
  const uint32_t th = b.thread(100, "main");
  b.instant(th, T + 10, b.location("x"));
  b.flush();
  test::write_file(dir.file("a.rpf"), b.bytes());
  const Model m = read_model(convert({dir.file("a.rpf")}));
  ASSERT_EQ(m.error, "");
  std::vector<std::string> processes;
  for (const auto& [uuid, t] : m.tracks)
    if (t.has_process()) processes.push_back(t.process().process_name());
  EXPECT_EQ(processes, std::vector<std::string>{"rank 7 (nodeA, 4242)"});
}

// Async spans: a track per name under the process, more of that name
// (lanes) where spans overlap, since slices on one track must nest. Here
// work [10, 50] and [30, 70] overlap, [60, 90] fits after the first: two
// lanes. Their begin and end threads and arguments are annotations.
TEST(PerfettoTrace, AsyncSpansOnLanesOfTheirOwn) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  const uint32_t main_t = b.thread(100, "main");
  const uint32_t worker = b.thread(101, "worker");
  const uint32_t work = b.location("work"), dims = b.location("Input Dims"), two = b.location("[[2]]");
  b.async_begin(main_t, T + 10, 1, work);
  b.arg(main_t, T + 10, dims, two);
  b.async_begin(main_t, T + 30, 2, work);
  b.async_end(worker, T + 50, 1);
  b.async_begin(worker, T + 60, 3, work);
  b.async_end(worker, T + 70, 2);
  b.async_end(main_t, T + 90, 3);
  b.flush();
  test::write_file(dir.file("a.rpf"), b.bytes());
  const Model m = read_model(convert({dir.file("a.rpf")}));
  ASSERT_EQ(m.error, "");
  std::vector<uint64_t> lanes;
  for (const auto& [uuid, t] : m.tracks)
    if (t.name() == "work") lanes.push_back(uuid);
  ASSERT_EQ(lanes.size(), 2u);
  std::vector<std::string> all;
  for (uint64_t lane : lanes) {
    EXPECT_NE(m.tracks.at(lane).parent_uuid(), 0u);
    for (const std::string& s : slices(m.on(lane))) all.push_back(s);
  }
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (std::vector<std::string>{"work[10,50]", "work[30,70]", "work[60,90]"}));
  for (const Event& e : m.events) {
    if (e.type != pf::TrackEvent::TYPE_SLICE_BEGIN || e.ts != T + 10) continue;
    EXPECT_EQ(e.args.at("Input Dims"), "[[2]]");
    EXPECT_EQ(e.args.at("begin thread"), "100");
    EXPECT_EQ(e.args.at("end thread"), "101");
    EXPECT_EQ(e.category, "async");
  }
}

}  // namespace
}  // namespace ringprof
