// Every event of a set of ringprof files with its names resolved, through the
// tools' TraceReader: what the ops tests (crash, trigger, extract, fork,
// schedules) check their expectations against. Header-only, tests only.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/trace_reader.h"

namespace ringprof::test {

struct NamedEvent {
  uint32_t pid = 0;
  EventKind kind = EventKind::None;
  uint64_t ts = 0;
  std::string name;    // location name ("" when the kind has none)
  std::string thread;  // thread name
  uint32_t tid = 0;
  uint64_t value = 0;
};

struct NamedTrace {
  std::vector<NamedEvent> events;  // process by process, segments in file order
  std::vector<Problem> problems;
  size_t processes = 0;
};

inline NamedTrace read_named(const std::vector<std::string>& paths) {
  NamedTrace out;
  TraceReader reader(paths);
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) {
      NamedEvent n;
      n.pid = v.process.pid;
      n.kind = e.kind;
      n.ts = e.ts_ns;
      if (kind_has_location(e.kind) && e.loc != 0) n.name = v.process.location_name(e.loc);
      if (const ThreadState* t = v.process.thread(e.thread_index)) {
        n.thread = t->name;
        n.tid = t->tid;
      }
      n.value = e.value;
      out.events.push_back(std::move(n));
    }
  });
  out.problems = reader.problems();
  out.processes = reader.processes().size();
  return out;
}

inline size_t count_named(const NamedTrace& t, EventKind kind, const std::string& name) {
  size_t n = 0;
  for (const NamedEvent& e : t.events) n += e.kind == kind && e.name == name;
  return n;
}

}  // namespace ringprof::test
