// The SPSC ring on its own: wrap-around, full-ring drops, multi-slot records,
// and a concurrent producer/consumer pair where every event is accounted for.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "ringprof/internal/ring.h"

using ringprof::Event;
using ringprof::EventKind;
using ringprof::Ring;

namespace {

Event make(uint64_t seq) {
  Event e{};
  e.ts = seq;
  e.kind = EventKind::Instant;
  e.p1 = seq * 3;
  return e;
}

struct RingDeleter {
  void operator()(Ring* r) const {
    Ring::release(r);
    Ring::release(r);  // both references: the test is thread and drainer
  }
};
using RingPtr = std::unique_ptr<Ring, RingDeleter>;

}  // namespace

TEST(Ring, CapacityRoundsUpToPowerOfTwo) {
  RingPtr r(Ring::create(100, 7));
  EXPECT_EQ(r->capacity(), 128u);
  EXPECT_EQ(r->tid(), 7u);
  RingPtr small(Ring::create(3, 1));
  EXPECT_EQ(small->capacity(), 64u);
}

TEST(Ring, WrapsAroundManyTimesInOrder) {
  RingPtr r(Ring::create(64, 1));
  uint64_t next_write = 0, next_read = 0;
  // 37 is coprime with 64, so reads and writes straddle the array end in
  // every possible position.
  for (int round = 0; round < 200; ++round) {
    for (int i = 0; i < 37; ++i) ASSERT_TRUE(r->push(make(next_write++)));
    const uint64_t ready = r->readable();
    ASSERT_EQ(ready, next_write - next_read);
    for (uint64_t i = 0; i < ready; ++i) {
      ASSERT_EQ(r->peek(i).ts, next_read + i);
      ASSERT_EQ(r->peek(i).p1, (next_read + i) * 3);
    }
    r->consume(ready);
    next_read += ready;
  }
  EXPECT_EQ(next_read, 200u * 37u);
  EXPECT_EQ(r->dropped(), 0u);
}

TEST(Ring, FullRingDropsAndCountsWithoutBlocking) {
  RingPtr r(Ring::create(64, 1));
  for (uint64_t i = 0; i < 64; ++i) ASSERT_TRUE(r->push(make(i)));
  for (uint64_t i = 0; i < 10; ++i) EXPECT_FALSE(r->push(make(1000 + i)));
  EXPECT_EQ(r->dropped(), 10u);
  EXPECT_EQ(r->readable(), 64u);
  r->consume(5);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_TRUE(r->push(make(64 + i)));
  EXPECT_FALSE(r->push(make(99)));
  EXPECT_EQ(r->dropped(), 11u);
  // What is in the ring is exactly events 5..68 in order: drops left no gap.
  for (uint64_t i = 0; i < 64; ++i) EXPECT_EQ(r->peek(i).ts, 5 + i);
}

// A thread's event ring marks a gap where it happened: when it takes events
// again, a begin mark (at the first refused event) and an end mark (now) with
// the number lost go in before the event, and the marks need room too.
TEST(Ring, AGapOfDropsIsMarkedWhenTheRingTakesEventsAgain) {
  RingPtr r(Ring::create(64, 1));
  r->mark_drop_gaps();
  for (uint64_t i = 0; i < 64; ++i) ASSERT_TRUE(r->push(make(i)));
  for (uint64_t i = 0; i < 7; ++i) EXPECT_FALSE(r->push(make(1000 + i)));
  r->consume(2);  // room for the two marks only: the event is refused, and counted
  EXPECT_FALSE(r->push(make(2000)));
  EXPECT_EQ(r->dropped(), 8u);
  r->consume(62);
  ASSERT_TRUE(r->push(make(64)));
  ASSERT_EQ(r->readable(), 3u);
  const Event& begin = r->peek(0);
  const Event& end = r->peek(1);
  EXPECT_EQ(begin.kind, ringprof::EventKind::Mark);
  EXPECT_EQ(begin.ref, ringprof::NameRef::StaticString);
  EXPECT_STREQ(reinterpret_cast<const char*>(begin.p0), ringprof::kMarkDropsBegin);
  EXPECT_EQ(begin.p1, 8u);
  EXPECT_STREQ(reinterpret_cast<const char*>(end.p0), ringprof::kMarkDropsEnd);
  EXPECT_EQ(end.p1, 8u);
  EXPECT_LE(begin.ts, end.ts);
  EXPECT_EQ(r->peek(2).ts, 64u) << "the event that ended the gap follows its marks";
  // No new gap: no more marks.
  ASSERT_TRUE(r->push(make(65)));
  EXPECT_EQ(r->readable(), 4u);
  EXPECT_EQ(r->peek(3).ts, 65u);
}

TEST(Ring, RingsThatDoNotMarkGapsOnlyCount) {
  RingPtr r(Ring::create(64, 1));  // a sample ring, say
  for (uint64_t i = 0; i < 65; ++i) r->push(make(i));
  r->consume(64);
  ASSERT_TRUE(r->push(make(100)));
  EXPECT_EQ(r->readable(), 1u);
  EXPECT_EQ(r->dropped(), 1u);
}

TEST(Ring, MultiSlotRecordIsAllOrNothing) {
  RingPtr r(Ring::create(64, 1));
  for (uint64_t i = 0; i < 60; ++i) ASSERT_TRUE(r->push(make(i)));
  uint64_t first = 0;
  Ring* raw = r.get();
  EXPECT_FALSE(Ring::claim(raw, 5, &first));  // 60 + 5 > 64
  EXPECT_EQ(r->dropped(), 1u);                // one record, one drop
  r->consume(60);
  // Now head sits at 60: a 6-slot record straddles the end of the array.
  ASSERT_TRUE(Ring::claim(raw, 6, &first));
  EXPECT_EQ(raw, r.get());
  EXPECT_EQ(first, 60u);
  for (uint64_t k = 0; k < 6; ++k) *r->slot_at(first + k) = make(500 + k);
  EXPECT_EQ(r->readable(), 0u);  // nothing visible before publish
  r->publish(first + 6);
  ASSERT_EQ(r->readable(), 6u);
  for (uint64_t k = 0; k < 6; ++k) EXPECT_EQ(r->peek(k).ts, 500 + k);
}

TEST(Ring, ConcurrentProducerConsumerAccountsForEveryEvent) {
  RingPtr r(Ring::create(256, 1));
  constexpr uint64_t kEvents = 2000000;
  std::atomic<bool> done{false};
  uint64_t pushed = 0;
  std::thread producer([&] {
    for (uint64_t i = 0; i < kEvents; ++i) pushed += r->push(make(i)) ? 1 : 0;
    done.store(true, std::memory_order_release);
  });
  uint64_t read = 0, last = 0;
  bool ordered = true, first = true;
  for (;;) {
    const bool finished = done.load(std::memory_order_acquire);
    const uint64_t ready = r->readable();
    for (uint64_t i = 0; i < ready; ++i) {
      const uint64_t seq = r->peek(i).ts;
      if (!first && seq <= last) ordered = false;
      if (r->peek(i).p1 != seq * 3) ordered = false;  // a torn slot would break this
      last = seq;
      first = false;
    }
    r->consume(ready);
    read += ready;
    if (finished && ready == 0 && r->readable() == 0) break;
  }
  producer.join();
  EXPECT_TRUE(ordered);
  EXPECT_EQ(read, pushed);
  EXPECT_EQ(read + r->dropped(), kEvents);
}

// Growth: the producer moves to an offered successor at its next slow path,
// retires the old ring and drops its reference there; the old ring keeps what
// was written before, in order, for the drainer.
TEST(Ring, TheProducerMovesToAnOfferedSuccessorAtItsSlowPath) {
  Ring* old_ring = Ring::create(64, 1);  // wake fill 16: the slow path every 16 slots
  Ring* next = Ring::create(256, 1);
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(old_ring->push(make(i)));
  old_ring->offer_successor(next);
  uint64_t pos = 0;
  Ring* r = old_ring;
  // Slots 10..15 still fit below the limit: the fast path, no move yet.
  for (uint64_t i = 10; i < 16; ++i) {
    ASSERT_TRUE(Ring::claim(r, 1, &pos));
    ASSERT_EQ(r, old_ring);
    *r->slot_at(pos) = make(i);
    r->publish(pos + 1);
  }
  EXPECT_FALSE(old_ring->switched());
  ASSERT_TRUE(Ring::claim(r, 1, &pos));  // the slow path takes the successor
  EXPECT_EQ(r, next);
  EXPECT_EQ(pos, 0u);
  *r->slot_at(pos) = make(16);
  r->publish(pos + 1);
  EXPECT_TRUE(old_ring->switched());
  EXPECT_TRUE(old_ring->retired());
  EXPECT_EQ(old_ring->withdraw_successor(), nullptr);  // taken: nothing to take back
  ASSERT_EQ(old_ring->readable(), 16u);
  for (uint64_t i = 0; i < 16; ++i) EXPECT_EQ(old_ring->peek(i).ts, i);
  ASSERT_EQ(next->readable(), 1u);
  EXPECT_EQ(next->peek(0).ts, 16u);
  Ring::release(old_ring);  // the drainer's reference: the producer dropped its own
  Ring::release(next);
  Ring::release(next);
}

TEST(Ring, AWithdrawnOfferIsNeverTaken) {
  RingPtr r(Ring::create(64, 1));
  RingPtr next(Ring::create(256, 1));
  r->offer_successor(next.get());
  EXPECT_EQ(r->withdraw_successor(), next.get());
  for (uint64_t i = 0; i < 64; ++i) ASSERT_TRUE(r->push(make(i)));  // through every slow path
  EXPECT_FALSE(r->switched());
  EXPECT_FALSE(r->retired());
  EXPECT_EQ(r->readable(), 64u);
  EXPECT_EQ(next->readable(), 0u);
}

// Growth by the thread itself: a full ring that was offered nothing moves to
// one four times larger, up to its maximum, instead of dropping. Each ring
// keeps what was written into it, in order, and close() hands the drainer
// the ring the thread moved to. Past the maximum the ring drops as before.
TEST(Ring, AFullRingGrowsItselfUpToItsMaximumWithoutDropping) {
  Ring* first = Ring::create(64, 1);
  first->allow_growth(4096);
  Ring* r = first;
  std::vector<Ring*> chain{first};
  uint64_t pos = 0;
  for (uint64_t i = 0; i < 64 + 256 + 1024 + 4096; ++i) {
    ASSERT_TRUE(Ring::claim(r, 1, &pos)) << "event " << i;
    *r->slot_at(pos) = make(i);
    r->publish(pos + 1);
    if (r != chain.back()) chain.push_back(r);
  }
  ASSERT_EQ(chain.size(), 4u);  // 64 → 256 → 1024 → 4096
  EXPECT_FALSE(Ring::claim(r, 1, &pos));  // the largest is full: a drop
  EXPECT_EQ(r->dropped(), 1u);
  EXPECT_EQ(r, chain.back());
  uint64_t next = 0;
  for (size_t k = 0; k < chain.size(); ++k) {
    Ring* ring = chain[k];
    EXPECT_EQ(ring->capacity(), 64u << (2 * k));
    EXPECT_EQ(ring->dropped(), 0u + (k + 1 == chain.size() ? 1 : 0));
    ASSERT_EQ(ring->readable(), ring->capacity());
    for (uint64_t i = 0; i < ring->capacity(); ++i) ASSERT_EQ(ring->peek(i).ts, next++);
    ring->consume(ring->capacity());
    EXPECT_EQ(ring->switched(), k + 1 < chain.size());
    EXPECT_EQ(ring->close(), k + 1 < chain.size() ? chain[k + 1] : nullptr);
    if (k > 0) Ring::return_growth(ring->capacity() * sizeof(Event));  // as the drainer does
    Ring::release(ring);  // the drainer's reference; the thread dropped its own on moving
  }
  Ring::release(r);  // the thread's reference to the last one
}

// stop() closes a ring while its thread still writes: the thread then finds
// it closed when it fills, frees what it made, and drops and counts instead,
// so no ring is left that nobody reads.
TEST(Ring, AClosedRingDropsInsteadOfGrowing) {
  RingPtr r(Ring::create(64, 1));
  r->allow_growth(4096);
  EXPECT_EQ(r->close(), nullptr);
  for (uint64_t i = 0; i < 100; ++i) r->push(make(i));
  EXPECT_FALSE(r->switched());
  EXPECT_EQ(r->readable(), 64u);
  EXPECT_EQ(r->dropped(), 36u);
  EXPECT_TRUE(Ring::reserve_growth(Ring::kMaxGrownBytes));  // nothing of the budget kept
  Ring::return_growth(Ring::kMaxGrownBytes);
}

// A producer that outruns its reader grows its ring; a reader that follows it
// through close() sees every event once, in order.
TEST(Ring, AReaderFollowsAGrowingProducerAndSeesEveryEventInOrder) {
  constexpr uint64_t kEvents = 400000;
  Ring* first = Ring::create(64, 1);
  first->allow_growth(16384);
  std::thread producer([first] {
    Ring* r = first;
    uint64_t pos = 0;
    for (uint64_t i = 0; i < kEvents; ++i) {
      if (!Ring::claim(r, 1, &pos)) continue;
      *r->slot_at(pos) = make(i);
      r->publish(pos + 1);
    }
    r->retire();
    Ring::release(r);
  });
  Ring* ring = first;
  uint64_t read = 0, last = 0, dropped = 0;
  bool ordered = true, grown = false;
  for (;;) {
    const uint64_t n = ring->readable();
    for (uint64_t i = 0; i < n; ++i) {
      const uint64_t ts = ring->peek(i).ts;
      if (read > 0 && ts <= last) ordered = false;
      last = ts;
      ++read;
    }
    ring->consume(n);
    if (!ring->retired() || ring->readable() != 0) continue;
    dropped += ring->dropped();
    Ring* next = ring->close();
    if (grown) Ring::return_growth(ring->capacity() * sizeof(Event));
    Ring::release(ring);
    if (!next) break;
    ring = next;
    grown = true;
  }
  producer.join();
  EXPECT_TRUE(ordered);
  EXPECT_TRUE(grown);
  EXPECT_EQ(read + dropped, kEvents);
}
