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
  ZoneBegin = 1,      // loc: zone name/site
  ZoneEnd = 2,        // closes the innermost open zone of the thread
  Instant = 3,        // loc: name
  Counter = 4,        // loc: counter track name, p1: double value
  FlowBegin = 5,      // loc: flow name (0 = "flow"), p1: flow id
  FlowStep = 6,       // p1: flow id
  FlowEnd = 7,        // p1: flow id
  Step = 8,           // p1: step (iteration) number
  ThreadName = 9,     // inline name; consumed by the drainer (becomes thread metadata)
  Continuation = 10,  // names the raw name slots after an Inline event; never a slot kind
  Sample = 11,        // a CPU stack sample. In a ring: `extra` = frame count, the
                      // frames (leaf first, 8 bytes each) follow in
                      // `sample_frame_slots(extra)` Continuation slots. After the
                      // drainer: loc = interned stack id (StackTrace::id), frames gone.
  Mark = 12,          // an operational marker (window start/end, trigger, mode
                      // change, crash): loc = its name, p1 = its value (window id, …)
  Alloc = 13,         // a block allocated (Detailed level only). In a ring: p0 =
                      // address, p1 = size in bytes, extra = pool index. In the
                      // file: loc = the pool's name (a location), value = size,
                      // address in its own column.
  Free = 14,          // a block freed: as Alloc; p1 = its size when the caller
                      // knows it, else 0 (the tools take the size from the Alloc)
  ZoneArg = 15,       // an argument of the thread's innermost open zone (input
                      // shapes, a batch size). In a ring: the value's text
                      // inline (ref Inline, length in `extra`), p1 = the key, a
                      // `const char*` with static storage. In the file: loc = the
                      // key (a location), value = the value text's location id.
  ZoneStack = 16,     // the interpreter (Python) call stack at the begin of the
                      // thread's innermost open zone (an operator's with_stack).
                      // In a ring: as Sample (`extra` = word count, the words in
                      // `sample_frame_slots(extra)` Continuation slots). In the
                      // file: loc = interned stack id, as a Sample's.
  AsyncBegin = 17,    // an async span begins (it may end on another thread):
                      // loc = its name, p1 = its id. ZoneArg events that
                      // follow it directly on its thread are its arguments.
  AsyncEnd = 18,      // the async span with id p1 ends, on whatever thread
  HeapAlloc = 19,     // an allocation the heap sampler picked (ringprof/heap.h),
                      // at any level. In a ring: a words record whose count is
                      // in `loc` (the stack's words, then the sampling interval
                      // in bytes), p0 = address, p1 = size, extra = pool index.
                      // In the file: as Alloc, directly followed on its thread
                      // by the HeapStack that holds its stack.
  HeapStack = 20,     // the stack of the HeapAlloc just before it on its thread;
                      // made by the drainer, never in a ring. In the file: loc =
                      // interned stack id, value = the mean sampling interval in
                      // bytes the allocation was picked at (its weight's basis).
  HeapFree = 21,      // a block the heap sampler picked is freed: as Free.
};

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

// Every property of an event kind, in one place: the recorder, the codec, the
// crash path and the tools ask this table instead of listing kinds. Each kind
// gets its row from a switch without `default:`, so a kind added to the enum
// without a row is a build error (-Wswitch, -Werror), and the static_assert
// below fails until kEventKindCount counts it.
struct EventKindTraits {
  const char* name;        // as `ringprof info` prints it; null: not a kind
  bool ring_record;        // the drainer writes it to the file as one event per ring record
  bool in_file;            // may appear in a segment's event columns (ring records and samples)
  bool in_crash_segment;   // a crash flush writes it (that format has one name per event, no address)
  bool has_location;       // `loc` names the event in the file (a location id)
  bool has_value;          // carries p1 in the file
  bool value_is_location;  // the value is a location id too (a second name)
  bool is_memory;          // carries an address (p0 in a ring, its own column in the file)
  bool has_stack;          // `loc` is a stack id (StackTrace::id) in the file
};

// One row per kind, in columns.
// clang-format off
constexpr EventKindTraits event_kind_traits(EventKind k) noexcept {
  //                                     name            ring   file   crash  loc    value  vloc   mem    stack
  switch (k) {
    // An empty event: nothing records one, but the codec has always carried
    // it as it is (files and their readers stay as they were).
    case EventKind::None:         return {"none",         false, true,  false, false, false, false, false, false};
    case EventKind::ZoneBegin:    return {"zone_begin",   true,  true,  true,  true,  false, false, false, false};
    case EventKind::ZoneEnd:      return {"zone_end",     true,  true,  true,  false, false, false, false, false};
    case EventKind::Instant:      return {"instant",      true,  true,  true,  true,  false, false, false, false};
    case EventKind::Counter:      return {"counter",      true,  true,  true,  true,  true,  false, false, false};
    case EventKind::FlowBegin:    return {"flow_begin",   true,  true,  true,  true,  true,  false, false, false};
    case EventKind::FlowStep:     return {"flow_step",    true,  true,  true,  false, true,  false, false, false};
    case EventKind::FlowEnd:      return {"flow_end",     true,  true,  true,  false, true,  false, false, false};
    case EventKind::Step:         return {"step",         true,  true,  true,  false, true,  false, false, false};
    // Becomes thread metadata in the drainer.
    case EventKind::ThreadName:   return {"thread_name",  false, false, false, false, false, false, false, false};
    // Slots that belong to the record before them.
    case EventKind::Continuation: return {"continuation", false, false, false, false, false, false, false, false};
    // Reaches the file through the drainer's sampling path, not as a ring
    // record; left out of crash flushes (no stack table there).
    case EventKind::Sample:       return {"sample",       false, true,  false, false, false, false, false, true};
    case EventKind::Mark:         return {"mark",         true,  true,  true,  true,  true,  false, false, false};
    // Memory events and zone arguments stay out of crash flushes: a pool name
    // needs the pool table and an address column, an argument two names.
    case EventKind::Alloc:        return {"alloc",        true,  true,  false, true,  true,  false, true,  false};
    case EventKind::Free:         return {"free",         true,  true,  false, true,  true,  false, true,  false};
    case EventKind::ZoneArg:      return {"zone_arg",     true,  true,  false, true,  true,  true,  false, false};
    // Out of crash flushes as samples are (no stack table there).
    case EventKind::ZoneStack:    return {"zone_stack",   true,  true,  false, false, false, false, false, true};
    case EventKind::AsyncBegin:   return {"async_begin",  true,  true,  true,  true,  true,  false, false, false};
    case EventKind::AsyncEnd:     return {"async_end",    true,  true,  true,  false, true,  false, false, false};
    // The heap profile's kinds stay out of crash flushes as samples do.
    case EventKind::HeapAlloc:    return {"heap_alloc",   true,  true,  false, true,  true,  false, true,  false};
    case EventKind::HeapStack:    return {"heap_stack",   false, true,  false, false, true,  false, false, true};
    case EventKind::HeapFree:     return {"heap_free",    true,  true,  false, true,  true,  false, true,  false};
  }
  return {nullptr, false, false, false, false, false, false, false, false};  // a byte from a damaged file
}
// clang-format on

inline constexpr uint8_t kEventKindCount = 22;

namespace internal {
constexpr bool event_kind_table_is_complete() noexcept {
  for (unsigned k = 0; k < kEventKindCount; ++k)
    if (event_kind_traits(static_cast<EventKind>(k)).name == nullptr) return false;
  return event_kind_traits(static_cast<EventKind>(kEventKindCount)).name == nullptr;
}
}  // namespace internal
static_assert(internal::event_kind_table_is_complete(),
              "kEventKindCount must count exactly the kinds event_kind_traits() describes");

// The drainer and the codec ask these per event: one byte of flags per kind
// byte (all 256, so no bounds check), computed from the table at compile time.
// A switch per question cost the drainer a fifth of its speed (an indirect
// jump per predicate, mispredicted on mixed kinds).
namespace internal {
enum EventKindFlag : uint8_t {
  kKindRing = 1,
  kKindFile = 2,
  kKindCrash = 4,
  kKindLocation = 8,
  kKindValue = 16,
  kKindValueLocation = 32,
  kKindMemory = 64,
  kKindStack = 128,
};
constexpr uint8_t event_kind_flags(EventKind k) noexcept {
  const EventKindTraits t = event_kind_traits(k);
  return static_cast<uint8_t>((t.ring_record ? kKindRing : 0) | (t.in_file ? kKindFile : 0) |
                              (t.in_crash_segment ? kKindCrash : 0) | (t.has_location ? kKindLocation : 0) |
                              (t.has_value ? kKindValue : 0) | (t.value_is_location ? kKindValueLocation : 0) |
                              (t.is_memory ? kKindMemory : 0) | (t.has_stack ? kKindStack : 0));
}
struct EventKindFlags {
  uint8_t of[256];
};
inline constexpr EventKindFlags kEventKindFlags = [] {
  EventKindFlags f{};
  for (unsigned k = 0; k < 256; ++k) f.of[k] = event_kind_flags(static_cast<EventKind>(k));
  return f;
}();
constexpr bool kind_flag(uint8_t k, EventKindFlag flag) noexcept { return (kEventKindFlags.of[k] & flag) != 0; }
}  // namespace internal

// A kind byte read from outside (a file): known, and allowed where it is read.
constexpr bool valid_file_kind(uint8_t k) noexcept { return internal::kind_flag(k, internal::kKindFile); }
constexpr bool valid_crash_kind(uint8_t k) noexcept { return internal::kind_flag(k, internal::kKindCrash); }

// The predicates the code reads best with, all from the table.
constexpr bool kind_is_ring_record(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindRing);
}
constexpr bool kind_has_location(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindLocation);
}
constexpr bool kind_is_memory(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindMemory);
}
// Alloc and Free: every block of a detailed window, which memory accounting
// pairs. The heap sampler's kinds carry addresses too, but stand for a sample.
constexpr bool kind_is_exact_memory(EventKind k) noexcept { return k == EventKind::Alloc || k == EventKind::Free; }
constexpr bool kind_has_stack(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindStack);
}
constexpr bool kind_has_value(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindValue);
}
constexpr bool kind_value_is_location(EventKind k) noexcept {
  return internal::kind_flag(static_cast<uint8_t>(k), internal::kKindValueLocation);
}

// The slots that follow a record's head in a ring: an inline name's bytes, or
// the words of a sample or a zone's stack.
constexpr uint32_t trailing_slots(const Event& e) noexcept {
  if (e.ref == NameRef::Inline) return continuation_slots(e.extra);
  if (e.kind == EventKind::Sample || e.kind == EventKind::ZoneStack) return sample_frame_slots(e.extra);
  if (e.kind == EventKind::HeapAlloc) return sample_frame_slots(e.loc);
  return 0;
}

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

constexpr const char* event_kind_name(EventKind k) noexcept {
  const char* name = event_kind_traits(k).name;
  return name ? name : "unknown";
}

}  // namespace ringprof
