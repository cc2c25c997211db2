// ringprof/event.h — the fixed 32-byte event every producer writes.
//
// Layout (little-endian, one ring slot, 32 bytes, naturally aligned):
//
//   offset size field  meaning
//   0      8    ts     producer: raw clock ticks (TSC, or CLOCK_MONOTONIC ns in
//                      the fallback). After the drainer: CLOCK_MONOTONIC ns.
//   8      1    kind   EventKind below.
//   9      1    ref    how `p0` names the event (NameRef below).
//   10     2    extra  for an inline name: its length in bytes; the name's bytes
//                      follow in `continuation_slots(extra)` Continuation slots.
//                      For Alloc/Free: the memory pool's index (ringprof/memory.h).
//   12     4    loc    location id. Producers write 0; the drainer resolves the
//                      name (pointer or inline bytes) into a process-wide id,
//                      and for Alloc/Free the pool index into its name's id.
//   16     8    p0     name reference: a `ringprof_source_location*`, a
//                      `const char*` with static storage; not written (stale)
//                      when ref is None. For Alloc/Free (ref None): the address.
//   24     8    p1     kind payload: counter value (IEEE double bits), flow id,
//                      step number, Alloc/Free size in bytes; not written
//                      (stale) for kinds without one.
//
// Ownership: a producer thread writes events only into its own ring; the drainer
// reads them out, resolves names and rewrites `ts` and `loc` in its own copy. No
// other party ever sees a ring slot. Variable data never widens an event: a
// run-time name is split into Continuation slots that travel with the event and
// are consumed by the drainer, which interns the string once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ringprof {

enum class EventKind : uint8_t {
  None = 0,
  ZoneBegin = 1,     // loc: zone name/site
  ZoneEnd = 2,       // closes the innermost open zone of the thread
  Instant = 3,       // loc: name
  Counter = 4,       // loc: counter track name, p1: double value
  FlowBegin = 5,     // loc: flow name (0 = "flow"), p1: flow id
  FlowStep = 6,      // p1: flow id
  FlowEnd = 7,       // p1: flow id
  Step = 8,          // p1: step (iteration) number
  ThreadName = 9,    // inline name; consumed by the drainer (becomes thread metadata)
  Continuation = 10, // names the raw name slots after an Inline event; never a slot kind
  Sample = 11,       // a CPU stack sample. In a ring: `extra` = frame count, the
                     // frames (leaf first, 8 bytes each) follow in
                     // `sample_frame_slots(extra)` Continuation slots. After the
                     // drainer: loc = interned stack id (StackTrace::id), frames gone.
  Mark = 12,         // an operational marker (window start/end, trigger, mode
                     // change, crash): loc = its name, p1 = its value (window id, …)
  Alloc = 13,        // a block allocated (Detailed level only). In a ring: p0 =
                     // address, p1 = size in bytes, extra = pool index. In the
                     // file: loc = the pool's name (a location), value = size,
                     // address in its own column.
  Free = 14,         // a block freed: as Alloc; p1 = its size when the caller
                     // knows it, else 0 (the tools take the size from the Alloc)
  ZoneArg = 15,      // an argument of the thread's innermost open zone (input
                     // shapes, a batch size). In a ring: the value's text
                     // inline (ref Inline, length in `extra`), p1 = the key, a
                     // `const char*` with static storage. In the file: loc = the
                     // key (a location), value = the value text's location id.
};
inline constexpr uint8_t kEventKindCount = 16;

// How p0 of an event names it.
enum class NameRef : uint8_t {
  None = 0,
  SourceLocation = 1,  // p0 is a `const ringprof_source_location*` (static)
  StaticString = 2,    // p0 is a `const char*` with static storage duration
  Inline = 3,          // name bytes follow in Continuation slots (length in `extra`)
};

struct Event {
  uint64_t ts;
  EventKind kind;
  NameRef ref;
  uint16_t extra;
  uint32_t loc;
  uint64_t p0;
  uint64_t p1;
};
static_assert(sizeof(Event) == 32, "ring slots are exactly 32 bytes");
static_assert(alignof(Event) == 8);

// Longest inline name; longer run-time names are cut to this many bytes.
inline constexpr std::size_t kMaxInlineName = 1024;

constexpr uint32_t continuation_slots(std::size_t len) noexcept {
  return static_cast<uint32_t>((len + sizeof(Event) - 1) / sizeof(Event));
}

// Longest stack a sample keeps; deeper stacks keep their innermost frames.
inline constexpr std::size_t kMaxSampleFrames = 128;

constexpr uint32_t sample_frame_slots(std::size_t frames) noexcept {
  return static_cast<uint32_t>((frames * sizeof(uint64_t) + sizeof(Event) - 1) / sizeof(Event));
}

// Kinds the drainer writes to the file as events, one per ring record.
// ThreadName becomes thread metadata, Continuation slots belong to the record
// before them, and samples reach the file through the drainer's sampling path.
constexpr bool kind_goes_to_file(EventKind k) noexcept {
  switch (k) {
    case EventKind::ZoneBegin:
    case EventKind::ZoneEnd:
    case EventKind::Instant:
    case EventKind::Counter:
    case EventKind::FlowBegin:
    case EventKind::FlowStep:
    case EventKind::FlowEnd:
    case EventKind::Step:
    case EventKind::Mark:
    case EventKind::Alloc:
    case EventKind::Free:
    case EventKind::ZoneArg: return true;
    case EventKind::None:
    case EventKind::ThreadName:
    case EventKind::Continuation:
    case EventKind::Sample: return false;
  }
  return false;
}

// Kinds whose `loc` names the event in the file (a location id).
constexpr bool kind_has_location(EventKind k) noexcept {
  return k == EventKind::ZoneBegin || k == EventKind::Instant || k == EventKind::Counter ||
         k == EventKind::FlowBegin || k == EventKind::Mark || k == EventKind::Alloc || k == EventKind::Free ||
         k == EventKind::ZoneArg;
}

// Memory events: they carry an address (p0 in a ring, its own column in the file).
constexpr bool kind_is_memory(EventKind k) noexcept { return k == EventKind::Alloc || k == EventKind::Free; }

// Kinds whose `loc` is a stack id (StackTrace::id) in the file.
constexpr bool kind_has_stack(EventKind k) noexcept { return k == EventKind::Sample; }

// Kinds that carry p1 in the file.
constexpr bool kind_has_value(EventKind k) noexcept {
  return k == EventKind::Counter || k == EventKind::FlowBegin || k == EventKind::FlowStep ||
         k == EventKind::FlowEnd || k == EventKind::Step || k == EventKind::Mark || k == EventKind::Alloc ||
         k == EventKind::Free || k == EventKind::ZoneArg;
}

// Kinds whose value is a location id too (a second name: an argument's text).
constexpr bool kind_value_is_location(EventKind k) noexcept { return k == EventKind::ZoneArg; }

inline uint64_t double_bits(double v) noexcept {
  uint64_t b;
  std::memcpy(&b, &v, sizeof b);
  return b;
}
inline double bits_double(uint64_t b) noexcept {
  double v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

const char* event_kind_name(EventKind k) noexcept;

}  // namespace ringprof
