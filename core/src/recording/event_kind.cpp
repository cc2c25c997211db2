#include "ringprof/event.h"

namespace ringprof {

const char* event_kind_name(EventKind k) noexcept {
  switch (k) {
    case EventKind::None: return "none";
    case EventKind::ZoneBegin: return "zone_begin";
    case EventKind::ZoneEnd: return "zone_end";
    case EventKind::Instant: return "instant";
    case EventKind::Counter: return "counter";
    case EventKind::FlowBegin: return "flow_begin";
    case EventKind::FlowStep: return "flow_step";
    case EventKind::FlowEnd: return "flow_end";
    case EventKind::Step: return "step";
    case EventKind::ThreadName: return "thread_name";
    case EventKind::Continuation: return "continuation";
    case EventKind::Sample: return "sample";
    case EventKind::Mark: return "mark";
    case EventKind::Alloc: return "alloc";
    case EventKind::Free: return "free";
    case EventKind::ZoneArg: return "zone_arg";
  }
  return "unknown";
}

}  // namespace ringprof
