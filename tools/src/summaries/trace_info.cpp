#include "ringprof/tools/trace_info.h"

#include <algorithm>
#include <ctime>
#include <map>

#include "ringprof/internal/ring.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/tools/time_range.h"

namespace ringprof {

namespace {

class InfoCollector final : public SegmentVisitor {
 public:
  explicit InfoCollector(TraceInfo& info) : info_(info) {}

  void begin_process(const ProcessState&) override {
    threads_.clear();
    current_ = ProcessSummary{};
  }

  void segment(const SegmentView& view) override {
    const DecodedSegment& seg = view.segment;
    ++current_.segments;
    if (seg.sampler && seg.sampler->hz) current_.sampler_running = seg.sampler;
    for (const DecodedThread& t : seg.threads) {
      ThreadSummary& ts = threads_[t.index];
      ts.dropped_ring += t.dropped_ring;
      ts.dropped_io += t.dropped_io;
      ts.samples_lost += t.samples_lost;
    }
    for (const DecodedEvent& e : seg.events) {
      ThreadSummary& ts = threads_[e.thread_index];
      ++ts.events;
      if (e.kind == EventKind::Sample) ++ts.samples;
      const auto k = static_cast<size_t>(e.kind);
      if (k < info_.events_by_kind.size()) ++info_.events_by_kind[k];
      current_.first_ns = current_.first_ns == 0 ? e.ts_ns : std::min(current_.first_ns, e.ts_ns);
      current_.last_ns = std::max(current_.last_ns, e.ts_ns);
      if (e.kind == EventKind::Mark) add_mark(view.process, e, ts);
    }
    current_.events += seg.events.size();
    for (const GpuActivity& a : seg.gpu) {
      ++info_.gpu_records;
      const auto k = static_cast<size_t>(a.kind);
      if (k < info_.gpu_by_kind.size()) ++info_.gpu_by_kind[k];
      if (a.kind == GpuKind::ExternalCorrelation) continue;  // no time of its own
      current_.first_ns = current_.first_ns == 0 ? a.start_ns : std::min(current_.first_ns, a.start_ns);
      current_.last_ns = std::max(current_.last_ns, a.end_ns);
    }
    if (seg.gpu_stats) gpu_stats_seen_ = true;
  }

  void end_process(const ProcessState& p) override {
    current_.pid = p.pid;
    current_.start_known = p.start_known;
    current_.start_monotonic_ns = p.start_monotonic_ns;
    current_.start_realtime_ns = p.start_realtime_ns;
    current_.hostname = p.hostname;
    current_.command_line = p.command_line;
    current_.ringprof_version = p.ringprof_version;
    current_.rank = p.rank;
    current_.sampler = p.sampler;
    current_.modules = p.modules.size();
    current_.stacks = p.stacks.size();
    for (auto& [index, ts] : threads_) {
      ts.index = index;
      if (const ThreadState* t = p.thread(index)) {
        ts.tid = t->tid;
        ts.name = t->name;
      } else {
        ts.tid = index;
      }
      current_.threads.push_back(ts);
    }
    for (const auto& [id, d] : p.gpu_devices) info_.gpu_devices.emplace_back(p.pid, d);
    if (gpu_stats_seen_) {
      info_.gpu_stats_seen = true;
      info_.gpu_stats.records += p.gpu_stats.records;
      info_.gpu_stats.dropped_records += p.gpu_stats.dropped_records;
      info_.gpu_stats.refused_buffers += p.gpu_stats.refused_buffers;
      info_.gpu_stats.clock_violations += p.gpu_stats.clock_violations;
      info_.gpu_stats.unknown_records += p.gpu_stats.unknown_records;
    }
    gpu_stats_seen_ = false;
    info_.processes.push_back(std::move(current_));
  }

 private:
  bool gpu_stats_seen_ = false;
  void add_mark(const ProcessState& p, const DecodedEvent& e, ThreadSummary& thread) {
    const std::string name = p.location_name(e.loc);
    if (classify_mark(name) == MarkClass::Drops) {  // summed per thread, not listed: there may be thousands
      thread.drop_gaps += name == kMarkDropsBegin;
      return;
    }
    if (current_.marks_total++ >= ProcessSummary::kMaxMarks) return;
    current_.marks.push_back({e.ts_ns, p.tid_of(e.thread_index), p.location_name(e.loc), e.value});
  }

  TraceInfo& info_;
  ProcessSummary current_;
  std::map<uint32_t, ThreadSummary> threads_;
};

// Monotonic ns as wall-clock UTC, through the process's calibration.
std::string wall_clock(const ProcessSummary& p, uint64_t mono_ns) {
  if (!p.start_known || p.start_realtime_ns == 0) return "";
  const int64_t offset = static_cast<int64_t>(p.start_realtime_ns) - static_cast<int64_t>(p.start_monotonic_ns);
  const int64_t real = static_cast<int64_t>(mono_ns) + offset;
  if (real < 0) return "";
  const time_t secs = static_cast<time_t>(real / 1000000000);
  struct tm tm {};
  if (!gmtime_r(&secs, &tm)) return "";
  char buf[64];
  const size_t n = std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  std::string ms = std::to_string(real % 1000000000 / 1000000);
  return std::string(buf, n) + "." + std::string(3 - ms.size(), '0') + ms + "Z";
}

// Seconds with nine decimals, from integer ns.
std::string format_seconds(uint64_t ns) {
  std::string frac = std::to_string(ns % 1000000000);
  return std::to_string(ns / 1000000000) + "." + std::string(9 - frac.size(), '0') + frac + " s";
}

}  // namespace

TraceInfo collect_info(TraceReader& reader) {
  TraceInfo info;
  InfoCollector collector(info);
  reader.read(collector);
  info.files = reader.files();
  info.problems = reader.problems();
  const auto& processes = reader.processes();
  for (size_t i = 0; i < info.processes.size() && i < processes.size(); ++i) {
    for (size_t fi : processes[i].files) info.processes[i].files.push_back(info.files[fi].path);
  }
  for (const FileSummary& f : info.files) {
    info.segments += f.segments;
    info.bad_segments += f.bad_segments;
    info.torn_tails += f.torn_tail ? 1 : 0;
    info.truncated_files += f.truncated ? 1 : 0;
    info.stored_bytes += f.stored_bytes;
    info.raw_bytes += f.raw_bytes;
  }
  for (const ProcessSummary& p : info.processes) {
    info.events += p.events;
    if (p.first_ns) {
      info.first_ns = info.first_ns == 0 ? p.first_ns : std::min(info.first_ns, p.first_ns);
      info.last_ns = std::max(info.last_ns, p.last_ns);
    }
    for (const ThreadSummary& t : p.threads) {
      info.dropped_ring += t.dropped_ring;
      info.dropped_io += t.dropped_io;
      info.samples += t.samples;
      info.samples_lost += t.samples_lost;
    }
  }
  return info;
}

std::string format_rank(const RankInfo& r) {
  std::string s = r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("rank unknown");
  if (r.world_size >= 0) s += " of " + std::to_string(r.world_size);
  if (r.local_rank >= 0) s += " (local rank " + std::to_string(r.local_rank) + ")";
  if (!r.job_id.empty()) s += ", job " + r.job_id;
  if (!r.source.empty()) s += " (from " + r.source + ")";
  return s;
}

std::string format_info(const TraceInfo& info) {
  std::string out;
  auto line = [&](const std::string& s) { out += s + "\n"; };

  line("Files: " + std::to_string(info.files.size()));
  for (const FileSummary& f : info.files) {
    std::string s = "  " + f.path + ": " + std::to_string(f.size_bytes) + " bytes, " + std::to_string(f.segments) +
                    " segments, " + std::to_string(f.events) + " events";
    if (f.is_part) s += ", being written (.part)";
    if (f.process != SIZE_MAX && !f.has_file_start) s += ", file start missing";
    if (f.bad_segments) s += ", " + std::to_string(f.bad_segments) + " corrupt";
    if (f.torn_tail) s += ", torn tail";
    if (f.truncated) s += ", truncated";
    if (f.process == SIZE_MAX) s += ", no valid segment";
    line(s);
  }

  if (info.first_ns) {
    line("Time range: " + format_us(info.first_ns) + " .. " + format_us(info.last_ns) + " us (CLOCK_MONOTONIC), " +
         format_seconds(info.last_ns - info.first_ns));
  } else {
    line("Time range: no events");
  }

  line("Processes: " + std::to_string(info.processes.size()));
  for (const ProcessSummary& p : info.processes) {
    std::string s = "  pid " + std::to_string(p.pid);
    if (!p.hostname.empty()) s += " on " + p.hostname;
    if (!p.command_line.empty()) {
      s += ":";
      for (const std::string& a : p.command_line) s += " " + a;
    }
    line(s);
    if (!p.ringprof_version.empty()) line("    ringprof " + p.ringprof_version);
    if (p.rank) line("    " + format_rank(*p.rank));
    if (p.first_ns) {
      std::string range = "    " + std::to_string(p.events) + " events in " + std::to_string(p.segments) +
                          " segments, " + format_seconds(p.last_ns - p.first_ns);
      const std::string from = wall_clock(p, p.first_ns), to = wall_clock(p, p.last_ns);
      if (!from.empty()) range += " (" + from + " .. " + to + ")";
      line(range);
    }
    if (p.sampler) {
      // The rate it sampled at, not the hz 0 that stop() (or level off)
      // states last; then how it ended.
      const bool ended = p.sampler->hz == 0 && p.sampler_running;
      const SamplerState& ran = ended ? *p.sampler_running : *p.sampler;
      std::string s2 = "    sampling: " + ran.mechanism;
      if (ran.hz) s2 += " at " + std::to_string(ran.hz) + " Hz";
      if (!ran.detail.empty()) s2 += " (" + ran.detail + ")";
      if (ended) {
        s2 += ", then off";
        if (!p.sampler->detail.empty() && p.sampler->detail != ran.detail) s2 += " (" + p.sampler->detail + ")";
      }
      line(s2);
    }
    if (p.modules || p.stacks)
      line("    " + std::to_string(p.modules) + " modules, " + std::to_string(p.stacks) + " distinct stacks");
    if (p.marks_total) {
      size_t windows = 0, triggers = 0, modes = 0, crashes = 0;
      for (const MarkSummary& m : p.marks) {
        const MarkClass c = classify_mark(m.name);
        windows += c == MarkClass::Window && m.name == "ringprof.window.begin";
        triggers += c == MarkClass::Trigger;
        modes += c == MarkClass::Level;
        crashes += c == MarkClass::Crash;
      }
      line("    marks: " + std::to_string(p.marks_total) + " (" + std::to_string(windows) + " windows, " +
           std::to_string(triggers) + " triggers, " + std::to_string(modes) + " level changes, " +
           std::to_string(crashes) + " crashes)");
      for (const MarkSummary& m : p.marks) {
        std::string when = wall_clock(p, m.ts_ns);
        if (when.empty()) when = format_us(m.ts_ns) + " us";
        line("      " + when + "  " + describe_mark(m.name, m.value) + " (thread " + std::to_string(m.tid) + ")");
      }
      if (p.marks_total > p.marks.size()) line("      ... " + std::to_string(p.marks_total - p.marks.size()) + " more");
    }
    for (const ThreadSummary& t : p.threads) {
      std::string s2 = "    thread " + std::to_string(t.tid);
      if (!t.name.empty()) s2 += " \"" + t.name + "\"";
      s2 += ": " + std::to_string(t.events) + " events";
      if (t.dropped_ring || t.dropped_io) {
        s2 += ", dropped " + std::to_string(t.dropped_ring) + " events (ring full";
        if (t.drop_gaps) s2 += ", " + std::to_string(t.drop_gaps) + (t.drop_gaps == 1 ? " gap" : " gaps");
        s2 += ") + " + std::to_string(t.dropped_io) + " (write failed)";
      }
      if (t.samples || t.samples_lost)
        s2 += ", " + std::to_string(t.samples) + " samples (" + std::to_string(t.samples_lost) + " lost)";
      line(s2);
    }
  }

  line("Events: " + std::to_string(info.events));
  for (size_t k = 0; k < info.events_by_kind.size(); ++k) {
    if (info.events_by_kind[k] == 0) continue;
    line("  " + std::string(event_kind_name(static_cast<EventKind>(k))) + ": " +
         std::to_string(info.events_by_kind[k]));
  }
  if (info.samples || info.samples_lost)
    line("Samples: " + std::to_string(info.samples) + " kept, " + std::to_string(info.samples_lost) + " lost");
  if (info.gpu_records || info.gpu_stats_seen) {
    line("GPU records: " + std::to_string(info.gpu_records));
    for (size_t k = 1; k < info.gpu_by_kind.size(); ++k) {
      if (info.gpu_by_kind[k] == 0) continue;
      line("  " + std::string(gpu_kind_name(static_cast<GpuKind>(k))) + ": " + std::to_string(info.gpu_by_kind[k]));
    }
    for (const auto& [pid, d] : info.gpu_devices)
      line("GPU device: pid " + std::to_string(pid) + " GPU " + std::to_string(d.id) + " \"" + d.name + "\" (cc " +
           std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor) + ", " + std::to_string(d.sm_count) + " SMs)");
    line("GPU lost: " + std::to_string(info.gpu_stats.dropped_records) + " records dropped by CUPTI, " +
         std::to_string(info.gpu_stats.refused_buffers) + " buffers refused (pool full), " +
         std::to_string(info.gpu_stats.unknown_records) +
         " unknown records; clock order violations: " + std::to_string(info.gpu_stats.clock_violations));
  }
  line("Dropped: " + std::to_string(info.dropped_ring) + " events (ring full), " + std::to_string(info.dropped_io) +
       " (write failed)");
  std::string bytes =
      "Bytes: " + std::to_string(info.stored_bytes) + " stored, " + std::to_string(info.raw_bytes) + " raw";
  if (info.stored_bytes) {
    // One decimal of the ratio, integer arithmetic (raw / stored).
    const uint64_t tenths = (info.raw_bytes * 10 + info.stored_bytes / 2) / info.stored_bytes;
    bytes += " (" + std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + "x)";
  }
  line(bytes);
  line("Segments: " + std::to_string(info.segments) + " intact, " + std::to_string(info.bad_segments) + " corrupt, " +
       std::to_string(info.torn_tails) + " torn tails, " + std::to_string(info.truncated_files) + " truncated files");
  if (!info.problems.empty()) {
    line("Problems: " + std::to_string(info.problems.size()));
    for (const Problem& p : info.problems) line("  " + format_problem(p));
  }
  return out;
}

}  // namespace ringprof
