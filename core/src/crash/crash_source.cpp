// Walks what is still in memory at a crash, resolving names the way the
// drainer would but without its registry (which allocates and is not safe to
// read here): a SourceLocation or static string is read through its pointer,
// a run-time name is copied out of the ring's continuation slots.
#include "crash/crash_source.h"

#include <cstring>

#include "ringprof/ops.h"
#include "ringprof/ringprof_c.h"

namespace ringprof::crash {
namespace {

LiveCrashSource g_source;
char g_inline_name[kMaxInlineName];  // one run-time name at a time (only the crash flusher runs here)

// Which ring records a crash flush writes: the kind table says (memory
// events and zone arguments stay out; every such kind is a ring record, see
// ringprof/event.h and event_kind_test).
bool file_kind(EventKind k) noexcept { return valid_crash_kind(static_cast<uint8_t>(k)); }

size_t c_strlen(const char* s) noexcept { return s ? std::strlen(s) : 0; }

// Copies the inline name that follows the record at `k` (its head `e`,
// `slots` continuation slots) into g_inline_name; returns its length.
size_t copy_inline_name(const Ring& ring, uint64_t k, const Event& e, uint64_t slots) noexcept {
  const size_t len = e.extra < kMaxInlineName ? e.extra : kMaxInlineName;
  for (uint64_t c = 0; c < slots; ++c) {
    const size_t off = c * sizeof(Event);
    const size_t take = len - off < sizeof(Event) ? len - off : sizeof(Event);
    std::memcpy(g_inline_name + off, &ring.peek(k + 1 + c), take);
  }
  return len;
}

// Names a drained event from the pointer the drainer kept in p0.
void name_from_pointer(NameRef ref, uint64_t p0, CrashEvent& ce) noexcept {
  if (p0 == 0) return;
  if (ref == NameRef::SourceLocation) {
    const auto* loc = reinterpret_cast<const ringprof_source_location*>(p0);
    ce.key = loc;
    ce.name = loc->name;
    ce.name_len = c_strlen(loc->name);
    ce.function = loc->function;
    ce.file = loc->file;
    ce.line = loc->line;
  } else if (ref == NameRef::StaticString) {
    const char* s = reinterpret_cast<const char*>(p0);
    ce.key = s;
    ce.name = s;
    ce.name_len = c_strlen(s);
  }
}

}  // namespace

LiveCrashSource& LiveCrashSource::snapshot(const CrashInfo& info, const PendingBatch* pending,
                                           uint32_t session) noexcept {
  LiveCrashSource& s = g_source;
  s.info_ = info;
  s.pending_ = pending ? *pending : PendingBatch{};
  s.clock_ = read_clock();
  s.n_rings_ = 0;
  RingSlot* slots = ring_slots();
  for (size_t i = 0; i < kMaxRings; ++i) {
    Ring* r = slots[i].ring.load(std::memory_order_seq_cst);
    if (r == nullptr || r->session != session) continue;
    s.rings_[s.n_rings_++] = Snap{r, r->readable(), &slots[i]};
  }
  return s;
}

void LiveCrashSource::for_each_thread(ThreadFn fn, void* ctx) const noexcept {
  bool faulting_listed = false;
  for (size_t i = 0; i < n_rings_; ++i) {
    const Snap& s = rings_[i];
    CrashThread t;
    t.index = s.ring->thread_index;
    t.tid = s.ring->tid();
    faulting_listed |= t.index == info_.thread_index && info_.thread_index != 0;
    // The newest name: a rename still in the ring, else one the drainer saw,
    // else the kernel's name when the ring was made.
    for (uint64_t k = 0; k < s.readable;) {
      const Event& e = s.ring->peek(k);
      const uint64_t extra = trailing_slots(e);
      if (e.kind == EventKind::ThreadName && e.ref == NameRef::Inline && k + 1 + extra <= s.readable) {
        t.name_len = copy_inline_name(*s.ring, k, e, extra);
        t.name = g_inline_name;
        t.name_from_rename = true;
      }
      k += 1 + extra;
    }
    if (t.name_from_rename) {
      fn(ctx, t);  // g_inline_name is reused: hand it over before the next ring
      continue;
    }
    const uint32_t renamed = s.slot->name_len.load(std::memory_order_acquire);
    if (renamed) {
      t.name = s.slot->name;
      t.name_len = renamed;
      t.name_from_rename = true;
    } else {
      t.name = s.ring->initial_name;
      t.name_len = strnlen(s.ring->initial_name, sizeof s.ring->initial_name);
    }
    fn(ctx, t);
  }
  if (!faulting_listed) {
    CrashThread t;
    t.index = info_.thread_index;
    t.tid = info_.tid;
    fn(ctx, t);
  }
}

void LiveCrashSource::for_each_event(EventFn fn, void* ctx) const noexcept {
  // 1. The drainer's batch: already converted, names by pointer in p0.
  for (size_t r = 0; r < pending_.n_runs; ++r) {
    const EventRun& run = pending_.runs[r];
    for (uint32_t i = 0; i < run.count && run.begin + i < pending_.n_events; ++i) {
      const Event& e = pending_.events[run.begin + i];
      if (!file_kind(e.kind)) continue;
      CrashEvent ce;
      ce.ts_ns = e.ts;
      ce.kind = e.kind;
      ce.thread_index = run.thread_index;
      ce.value = kind_has_value(e.kind) ? e.p1 : 0;
      if (kind_has_location(e.kind)) name_from_pointer(e.ref, e.p0, ce);
      fn(ctx, ce);
    }
  }
  // 2. Each ring from its read position to where it stood at the snapshot.
  for (size_t i = 0; i < n_rings_; ++i) {
    const Snap& s = rings_[i];
    for (uint64_t k = 0; k < s.readable;) {
      const Event& e = s.ring->peek(k);
      const uint64_t extra = trailing_slots(e);
      if (k + 1 + extra > s.readable) break;
      // Samples need the drainer's stack table; they are left out of the crash segment.
      if (file_kind(e.kind)) {
        CrashEvent ce;
        ce.ts_ns = clock_.to_ns(e.ts);
        ce.kind = e.kind;
        ce.thread_index = s.ring->thread_index;
        ce.value = kind_has_value(e.kind) ? e.p1 : 0;
        if (kind_has_location(e.kind)) {
          if (e.ref == NameRef::Inline) {
            ce.name_len = copy_inline_name(*s.ring, k, e, extra);
            ce.name = g_inline_name;
          } else {
            name_from_pointer(e.ref, e.p0, ce);
          }
        }
        fn(ctx, ce);
      }
      k += 1 + extra;
    }
  }
  // 3. The crash itself, on the faulting thread.
  CrashEvent ce;
  ce.ts_ns = info_.ts_ns;
  ce.kind = EventKind::Mark;
  ce.thread_index = info_.thread_index;
  ce.value = static_cast<uint64_t>(static_cast<uint32_t>(info_.signo)) | (uint64_t{info_.tid} << 32);
  name_from_pointer(NameRef::StaticString, reinterpret_cast<uintptr_t>(kMarkCrash), ce);
  fn(ctx, ce);
}

void LiveCrashSource::consume_rings() noexcept {
  for (size_t i = 0; i < n_rings_; ++i) rings_[i].ring->consume(rings_[i].readable);
}

}  // namespace ringprof::crash
