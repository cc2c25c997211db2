// ringprof/internal/ring.h — the per-thread single-producer/single-consumer event ring.
//
// Layout: a power-of-two array of 32-byte Event slots plus two monotonically
// increasing 64-bit positions, `head` (next slot the producer will fill) and
// `tail` (next slot the drainer will read). Slot i lives at index i & mask.
// The ring holds head - tail events; it is full when that equals capacity.
// Positions never wrap in practice (2^64 events).
//
// Ownership and memory order:
//   - `head`, `limit` and `dropped` are written only by the owning thread.
//     The producer fills slots first, then publishes them with one release
//     store of `head` (prepare, then release-commit), so a multi-slot record
//     (an event and its Continuation slots) becomes visible all at once.
//   - `tail` is written only by the drainer, with a release store after it has
//     copied the slots out; the producer acquires it only when it reaches
//     `limit`, so the common path touches no shared cache line. `limit` is
//     the tail as last seen plus the wake fill (a quarter of the ring by
//     default) while the ring is below it; once past it, another wake fill
//     further on (at most the tail plus the capacity).
//   - Waking the drainer: the producer that finds its ring past the wake fill
//     calls internal::ring_past_wake_fill(), which wakes the drainer if it is
//     asleep (a futex). That is one slow path per
//     wake-fill events, never the common path; a drainer that keeps up is
//     woken by fill, not only by its timer.
//   - Sleeping until the next event: an idle drainer lowers `limit` to the
//     head (wake_at_next_claim(), a compare-and-swap: `limit` is the one
//     producer field the drainer may write, and only downwards), so the
//     thread's next record takes the slow path, which calls
//     internal::ring_refilled() and wakes it. A producer that stores a new
//     `limit` over the lowered one reads the drainer's flag after it (both
//     sides fence), so it wakes the drainer itself. The common path still
//     reads only its own cache line.
//   - A full ring never blocks: the record is dropped and `dropped` counts the
//     events lost: one per record (an event and its continuations are one
//     event), two for a zone begin, whose zone then records no end either.
//   - Inline names: an event with NameRef::Inline is followed by
//     continuation_slots(extra) slots of raw name bytes (not Events).
//   - `retired` is set by the owning thread as it exits; the drainer drains
//     what is left and then releases its reference.
//   - Growth: the drainer may offer a ring that fills fast (or that it found
//     half full) a larger successor. The producer takes it in the slow path
//     (never with a gap of drops not yet marked): it points its thread slot
//     at the successor (internal::ring_switched), sets `switched`, retires
//     this ring and drops its reference, and goes on in the successor. The
//     drainer reads this ring to the end before it reads the successor, so
//     the thread's events stay in order.
//   - A producer whose ring is full and was offered nothing grows it itself
//     (grow(): up to `max_capacity`, from the process's growth budget)
//     rather than drop: a drainer that the scheduler keeps off a core for
//     a few milliseconds cannot then cost events. It publishes the new ring
//     in `moved_to` with a compare-and-swap; the drainer, done with this
//     ring, closes it with an exchange (close()), so exactly one of them
//     wins: either the drainer follows the thread into the new ring, or the
//     thread finds the ring closed (stop()), frees its new ring and drops.
//     One allocation per growth step, a few per thread's life at most.
//   - Lifetime: a ring is shared by its thread and the drainer through `refs`
//     (starts at 2). Whoever drops the last reference frees it, so neither side
//     ever touches freed memory, whichever finishes first.
//
// The producer and consumer halves sit on separate cache lines.
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "ringprof/event.h"

namespace ringprof {

class Ring;

namespace internal {
// A producer found its ring past the wake fill: wakes the drainer if it is
// asleep. Defined in the recorder (the drainer's wake-up).
void ring_past_wake_fill() noexcept;
// A producer took the slow path below the wake fill (or moved to a
// successor): wakes a drainer that sleeps until the next event, if it does
// (after a full fence, so it pairs with Ring::wake_at_next_claim()).
void ring_refilled() noexcept;
// The recording clock's raw time now (TSC ticks or CLOCK_MONOTONIC ns, as
// the session records), for the drop marks. Defined in the recorder.
uint64_t ring_clock_ticks() noexcept;
// The calling thread moved from ring `from` to its successor `to` (growth):
// its thread slot now names `to`. Defined in the recorder.
void ring_switched(Ring* from, Ring* to) noexcept;
}  // namespace internal

// The drop marks a thread's ring writes around a gap (Ring::mark_drop_gaps).
inline constexpr const char* kMarkDropsBegin = "ringprof.drops.begin";
inline constexpr const char* kMarkDropsEnd = "ringprof.drops.end";
// Whether a drained event is one of those marks (a Mark naming a static string).
inline bool is_drop_mark(const Event& e) noexcept {
  if (e.kind != EventKind::Mark || e.ref != NameRef::StaticString) return false;
  const char* name = reinterpret_cast<const char*>(e.p0);
  return std::strcmp(name, kMarkDropsBegin) == 0 || std::strcmp(name, kMarkDropsEnd) == 0;
}

class Ring {
 public:
  // capacity_events is rounded up to a power of two, at least 64. The
  // drainer is woken when the ring is `wake_percent` full (1..100).
  static Ring* create(uint32_t capacity_events, uint32_t tid, uint32_t wake_percent = 25) noexcept;
  // A ring that holds nothing and refuses every event (counting the drops),
  // for threads whose own ring could not be allocated. Never released.
  static Ring* refusing() noexcept;
  // Drops one reference; frees the ring when it was the last.
  static void release(Ring* r) noexcept;
  // The process's growth budget: bytes of grown rings (successors, offered
  // or made by their thread) alive at once, at most kMaxGrownBytes.
  static constexpr uint64_t kMaxGrownBytes = 256ull << 20;
  static bool reserve_growth(uint64_t bytes) noexcept;
  static void return_growth(uint64_t bytes) noexcept;
  // Lets the owning thread grow this ring itself, to at most `max_events`
  // slots (0 or less than twice capacity(): never). Before registration.
  void allow_growth(uint64_t max_events) noexcept { max_capacity_ = max_events; }
  // A larger ring for this ring's thread (growth, by the drainer's offer or
  // the thread's own grow()): up to four times the capacity and at most
  // `max_events` slots, its bytes taken from the growth budget, with this
  // ring's identity, drop marking and wake fill, growth allowed up to
  // `max_events`, and registered with the crash flush. Null (nothing taken)
  // when it could not be twice as large, or budget or memory is short.
  // Reads only what is fixed before registration: either side may call it.
  Ring* make_successor(uint64_t max_events) const noexcept;

  // ---- producer side (owning thread only) ----

  // Claims `n` consecutive slots of ring `r` starting at *pos, or counts
  // `lost` dropped events (1 for a record of any number of slots, 2 for a
  // zone begin) and returns false when they do not fit. When the thread
  // moves to a larger successor (growth), `r` then names it. Write slot k at
  // r->slot_at(*pos + k), which may wrap past the end of the array, then make
  // the record visible with r->publish(*pos + n).
  __attribute__((always_inline)) static bool claim(Ring*& r, uint32_t n, uint64_t* pos, uint32_t lost = 1) noexcept {
    uint64_t h = r->head_.load(std::memory_order_relaxed);
    if (h + n > r->limit_.load(std::memory_order_relaxed)) [[unlikely]] {
      Ring* to = r->refill(h, n, lost);
      if (!to) return false;
      r = to;
      h = r->head_.load(std::memory_order_relaxed);  // past the drop marks refill() may have written
    }
    *pos = h;
    return true;
  }
  Event* slot_at(uint64_t pos) noexcept { return slots_ + (pos & mask_); }
  __attribute__((always_inline)) void publish(uint64_t new_head) noexcept {
    head_.store(new_head, std::memory_order_release);
  }

  // One-slot write: the hot path of every zone, instant and counter.
  // (It follows a move to a successor too, so the event may land there.)
  bool push(const Event& e) noexcept {
    uint64_t pos;
    Ring* r = this;
    if (!claim(r, 1, &pos)) return false;
    *r->slot_at(pos) = e;
    r->publish(pos + 1);
    return true;
  }

  void retire() noexcept { retired_.store(true, std::memory_order_release); }

  // Threads' event rings mark where they dropped events: once the ring takes
  // events again, two Mark events go in first, kMarkDropsBegin at the first
  // refused event and kMarkDropsEnd now, each with the number of events lost
  // between them. (Sample rings, which hold stack records, do not.)
  void mark_drop_gaps() noexcept { mark_drops_ = true; }

  // ---- growth (drainer offers, producer takes; see the header comment) ----
  void offer_successor(Ring* next) noexcept { successor_.store(next, std::memory_order_release); }
  // Takes back an offer the producer has not taken: the successor, or null
  // when the producer took it (it then writes there, or is about to).
  Ring* withdraw_successor() noexcept { return successor_.exchange(nullptr, std::memory_order_acq_rel); }
  // The producer moved to the successor (and will not write here again).
  bool switched() const noexcept { return switched_.load(std::memory_order_acquire); }
  // The drainer is done with this ring: returns the ring its thread made
  // itself and moved to (grow()), or null, and makes any later attempt fail.
  Ring* close() noexcept {
    Ring* moved = moved_to_.exchange(closed_mark(), std::memory_order_acq_rel);
    return moved == closed_mark() ? nullptr : moved;
  }

  // ---- consumer side (drainer only) ----

  // Slots ready to read. Always whole records: the producer publishes an
  // event and its continuation slots with one head store.
  uint64_t readable() const noexcept {
    return head_.load(std::memory_order_acquire) - tail_.load(std::memory_order_relaxed);
  }
  // The slot `offset` places past the read position (offset < readable()).
  const Event& peek(uint64_t offset) const noexcept {
    return slots_[(tail_.load(std::memory_order_relaxed) + offset) & mask_];
  }
  // The slots from `offset` places past the read position on, as far as the
  // end of the ring's memory and at most *n (offset + *n <= readable()):
  // the first, and *n is how many lie there. A loop over them does not load
  // the read position again at every slot.
  const Event* peek_run(uint64_t offset, uint64_t* n) const noexcept {
    const uint64_t at = (tail_.load(std::memory_order_relaxed) + offset) & mask_;
    if (*n > mask_ + 1 - at) *n = mask_ + 1 - at;
    return slots_ + at;
  }
  // Frees `n` slots for the producer.
  void consume(uint64_t n) noexcept {
    tail_.store(tail_.load(std::memory_order_relaxed) + n, std::memory_order_release);
  }
  uint64_t dropped() const noexcept { return dropped_.load(std::memory_order_relaxed); }
  bool retired() const noexcept { return retired_.load(std::memory_order_acquire); }
  uint32_t capacity() const noexcept { return static_cast<uint32_t>(capacity_); }
  // Past this many readable slots a producer may have asked for the drainer
  // (its crossing record can hold up to kMaxRecordSlots slots), so a drainer
  // about to sleep looks again instead.
  uint64_t wake_check_fill() const noexcept {
    return wake_fill_ > 2 * kMaxRecordSlots ? wake_fill_ - kMaxRecordSlots : (wake_fill_ + 1) / 2;
  }
  // The drainer is about to sleep until the next event: the thread's next
  // claim takes the slow path (see the header comment). Call after
  // drainer_wake::prepare_to_sleep(), before the last look at the rings.
  void wake_at_next_claim() noexcept {
    const uint64_t h = head_.load(std::memory_order_relaxed);
    uint64_t cur = limit_.load(std::memory_order_relaxed);
    while (cur > h && !limit_.compare_exchange_weak(cur, h, std::memory_order_seq_cst, std::memory_order_relaxed)) {
    }
  }
  uint32_t tid() const noexcept { return tid_; }

  // ---- identity (set by the owning thread before the ring is registered,
  // read-only afterwards) ----
  uint32_t thread_index = 0;   // process-unique index assigned by the recorder
  uint32_t session = 0;        // the recording session the ring belongs to
  uint32_t crash_slot = 0;     // its slot in the crash flush's table + 1 (0: not there)
  char initial_name[16] = {};  // the thread's name when the ring was created

  // The most slots one record takes: an event and the longest inline name.
  static constexpr uint64_t kMaxRecordSlots = 1 + continuation_slots(kMaxInlineName);

 private:
  Ring() = default;

  // The slow path of claim() for `n` slots at head `h`: moves to a successor
  // the drainer offered, or reads the drainer's tail again, wakes the drainer
  // when the ring is past its wake fill, moves `limit_`, and writes the drop
  // marks of a gap that just ended. Returns the ring to write in (this one or
  // the successor); null, with `lost` events counted as dropped, when the
  // slots do not fit.
  __attribute__((noinline)) Ring* refill(uint64_t h, uint32_t n, uint32_t lost) noexcept {
    const uint64_t dropped = dropped_.load(std::memory_order_relaxed);
    const bool gap = mark_drops_ && dropped != drops_marked_;
    if (!gap) {
      Ring* next = successor_.load(std::memory_order_relaxed);
      if (next) next = successor_.exchange(nullptr, std::memory_order_acq_rel);  // or the drainer took it back
      if (next) {
        // The successor is empty and at least twice as large: the record
        // fits. This ring is left to the drainer; not touched after release.
        internal::ring_switched(this, next);
        switched_.store(true, std::memory_order_release);
        retire();
        release(this);
        internal::ring_refilled();  // the drainer may have lowered only this ring's limit
        return next;
      }
    }
    const uint64_t end = h + n + (gap ? 2 : 0);
    const uint64_t t = tail_.load(std::memory_order_acquire);
    if (end <= t + wake_fill_) {
      limit_.store(t + wake_fill_, std::memory_order_relaxed);
      internal::ring_refilled();
    } else {
      // Past the wake fill: come back after another wake fill's worth (or
      // when full), so a wake that the drainer's last look made needless
      // (it read the ring just as this thread crossed) is asked for again
      // if the ring keeps filling.
      limit_.store(t + capacity_ < end + wake_fill_ ? t + capacity_ : end + wake_fill_, std::memory_order_relaxed);
      if (capacity_ != 0) internal::ring_past_wake_fill();
      if (end > t + capacity_) {
        if (!gap && max_capacity_ > capacity_) {
          if (Ring* grown = grow()) return grown;
        }
        if (mark_drops_) {
          if (!gap) drops_since_ticks_ = internal::ring_clock_ticks();  // a gap starts
          limit_.store(h, std::memory_order_relaxed);  // every claim comes here until the gap is marked
        }
        dropped_.store(dropped + lost, std::memory_order_relaxed);
        return nullptr;
      }
    }
    if (gap) {
      write_drop_mark(h, drops_since_ticks_, kMarkDropsBegin, dropped - drops_marked_);
      write_drop_mark(h + 1, internal::ring_clock_ticks(), kMarkDropsEnd, dropped - drops_marked_);
      publish(h + 2);
      drops_marked_ = dropped;
    }
    return this;
  }
  // Full, nothing offered: a ring up to four times larger, made here and
  // moved to (see the header comment). Null, and no further attempt on
  // this ring, when the budget or memory is short or the drainer closed it.
  __attribute__((noinline)) Ring* grow() noexcept;
  // What close() leaves in moved_to_: no ring is ever at this address.
  static Ring* closed_mark() noexcept { return reinterpret_cast<Ring*>(alignof(Ring)); }

  void write_drop_mark(uint64_t pos, uint64_t ticks, const char* name, uint64_t count) noexcept {
    Event* e = slot_at(pos);
    e->ts = ticks;
    e->kind = EventKind::Mark;
    e->ref = NameRef::StaticString;
    e->extra = 0;
    e->loc = 0;
    e->p0 = reinterpret_cast<uintptr_t>(name);
    e->p1 = count;
  }

  // producer cache line
  alignas(64) std::atomic<uint64_t> head_{0};
  // The producer fills up to here before it reads the tail again; the
  // drainer only ever lowers it (wake_at_next_claim).
  std::atomic<uint64_t> limit_{0};
  uint64_t wake_fill_ = 0;          // readable slots past which the drainer is woken
  uint64_t drops_marked_ = 0;       // dropped_ as of the last drop marks written
  uint64_t drops_since_ticks_ = 0;  // when the gap not yet marked began
  bool mark_drops_ = false;
  std::atomic<uint64_t> dropped_{0};
  Event* slots_ = nullptr;
  uint64_t mask_ = 0;
  uint64_t capacity_ = 0;
  uint64_t max_capacity_ = 0;  // grow() up to here; 0: never
  uint32_t wake_percent_ = 25;
  // consumer cache line
  alignas(64) std::atomic<uint64_t> tail_{0};
  std::atomic<Ring*> successor_{nullptr};  // offered by the drainer
  std::atomic<bool> switched_{false};      // the producer moved to successor_ or moved_to_
  std::atomic<Ring*> moved_to_{nullptr};   // grow()'s ring, or closed_mark() once closed
  std::atomic<bool> retired_{false};
  std::atomic<uint32_t> refs_{2};
  uint32_t tid_ = 0;
};

// A record of `n` 8-byte words (a sample's stack, a zone's stack): its head,
// `kind` at `ts` with the count in `extra`, then the words packed four to a
// slot in sample_frame_slots(n) slots. False when the ring refused it (and
// counted `lost` events dropped). Async-signal-safe.
inline bool write_words_record(Ring*& r, EventKind kind, uint64_t ts, const uint64_t* words, size_t n,
                               uint32_t lost = 1) noexcept {
  const uint32_t slots = sample_frame_slots(n);
  uint64_t pos;
  if (!Ring::claim(r, 1 + slots, &pos, lost)) return false;
  Event* e = r->slot_at(pos);
  e->ts = ts;
  e->kind = kind;
  e->ref = NameRef::None;
  e->extra = static_cast<uint16_t>(n);
  e->loc = 0;
  e->p0 = 0;
  e->p1 = 0;
  for (uint32_t k = 0; k < slots; ++k) {
    const size_t first = size_t{k} * 4, count = n - first < 4 ? n - first : 4;
    std::memcpy(r->slot_at(pos + 1 + k), words + first, count * sizeof(uint64_t));
  }
  r->publish(pos + 1 + slots);
  return true;
}

// The first `n` words (n <= the record's count) of the words record whose
// head is `at` slots past the read position. Consumer side.
inline void read_words_record(const Ring& r, uint64_t at, uint64_t* out, size_t n) noexcept {
  for (size_t first = 0, k = 0; first < n; first += 4, ++k) {
    const size_t count = n - first < 4 ? n - first : 4;
    std::memcpy(out + first, &r.peek(at + 1 + k), count * sizeof(uint64_t));
  }
}

}  // namespace ringprof
