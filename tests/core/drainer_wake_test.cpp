// Waking the drainer (draining/drainer_wake.h): a producer whose ring passes
// its wake fill wakes a sleeping drainer, once per crossing, and no wake is
// lost between the drainer's last look and its sleep. No drainer runs here:
// the test plays the drainer with the same calls.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>

#include "draining/drainer_wake.h"
#include "ringprof/internal/ring.h"

using namespace ringprof;

namespace {

struct RingDeleter {
  void operator()(Ring* r) const {
    Ring::release(r);
    Ring::release(r);
  }
};
using RingPtr = std::unique_ptr<Ring, RingDeleter>;

Event counter_event(uint64_t v) {
  Event e{};
  e.kind = EventKind::Counter;
  e.p1 = v;
  return e;
}

// Far longer than any test here waits: a sleep that ends by its timeout
// means the wake was lost.
constexpr uint64_t kLongSleepNs = 120'000'000'000ull;

}  // namespace

TEST(DrainerWake, TheCrossingPushWakesAndTheOthersDoNot) {
  RingPtr r(Ring::create(256, 1, 25));  // wake fill: 64 slots
  drainer_wake::prepare_to_sleep();     // the drainer is about to sleep
  const uint64_t before = drainer_wake::wakes();
  for (uint64_t i = 0; i < 64; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  EXPECT_EQ(drainer_wake::wakes(), before) << "64 slots: at the wake fill, not past it";
  ASSERT_TRUE(r->push(counter_event(64)));
  EXPECT_EQ(drainer_wake::wakes(), before + 1) << "the 65th slot passes the wake fill";
  for (uint64_t i = 65; i < 256; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  EXPECT_EQ(drainer_wake::wakes(), before + 1) << "one wake per crossing; the drainer is awake now";
  EXPECT_FALSE(r->push(counter_event(256))) << "full";
  EXPECT_EQ(r->dropped(), 1u);

  // The drainer empties the ring and goes back to sleep: the next crossing
  // wakes it again.
  r->consume(r->readable());
  drainer_wake::prepare_to_sleep();
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  EXPECT_EQ(drainer_wake::wakes(), before + 2);
  drainer_wake::cancel_sleep();
}

// The drainer was awake when the ring crossed its wake fill (no wake was
// needed), then went to sleep without reading it: the producer asks again
// after another wake fill's worth of events, not only when the ring is full.
TEST(DrainerWake, AProducerPastItsWakeFillAsksAgainAfterAnotherWakeFill) {
  RingPtr r(Ring::create(256, 1, 25));  // wake fill: 64 slots
  drainer_wake::cancel_sleep();         // the drainer is awake
  for (uint64_t i = 0; i < 65; ++i) ASSERT_TRUE(r->push(counter_event(i)));  // crossed: nobody to wake
  drainer_wake::prepare_to_sleep();     // now it sleeps, the ring unread
  const uint64_t before = drainer_wake::wakes();
  for (uint64_t i = 65; i < 129; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  EXPECT_EQ(drainer_wake::wakes(), before) << "within a wake fill of the crossing";
  ASSERT_TRUE(r->push(counter_event(129)));
  EXPECT_EQ(drainer_wake::wakes(), before + 1) << "a wake fill further on, it asks again";
  drainer_wake::cancel_sleep();
}

TEST(DrainerWake, AWakeBetweenTheLastLookAndTheSleepIsNotLost) {
  RingPtr r(Ring::create(256, 1, 25));
  const uint32_t seq = drainer_wake::prepare_to_sleep();
  for (uint64_t i = 0; i < 100; ++i) ASSERT_TRUE(r->push(counter_event(i)));  // crosses now
  const auto t0 = std::chrono::steady_clock::now();
  drainer_wake::sleep(seq, kLongSleepNs);  // must return at once: seq moved
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST(DrainerWake, AProducerOnAnotherThreadWakesASleepingDrainer) {
  RingPtr r(Ring::create(1024, 1, 25));
  std::atomic<bool> woke{false};
  std::atomic<bool> asleep_soon{false};
  std::thread drainer([&] {
    const uint32_t seq = drainer_wake::prepare_to_sleep();
    asleep_soon = true;
    drainer_wake::sleep(seq, kLongSleepNs);
    woke = true;
  });
  while (!asleep_soon) std::this_thread::yield();
  // Whether the drainer is in the futex yet or not, the crossing push wakes it.
  for (uint64_t i = 0; i < 300; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!woke && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(woke) << "the drainer slept on";
  if (!woke) drainer_wake::wake();  // let the thread end
  drainer.join();
}

// A drainer that backs off while idle is woken by the next CPU sample (its
// interpreter frames must be named while their code lives) or new thread;
// one that sleeps its ordinary interval is not (a wake per sample would cost
// more than the interval's round).
TEST(DrainerWake, ASampleWakesAnIdleDrainerOnlyOnce) {
  std::atomic<bool> woke{false};
  std::atomic<bool> asleep_soon{false};
  const uint64_t before = drainer_wake::wakes();
  std::thread drainer([&] {
    const uint32_t seq = drainer_wake::prepare_to_sleep(/*idle=*/true);
    asleep_soon = true;
    drainer_wake::sleep(seq, kLongSleepNs);
    woke = true;
  });
  while (!asleep_soon) std::this_thread::yield();
  // Whether the drainer is in the futex yet or not, the sample wakes it.
  drainer_wake::wake_if_idle();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!woke && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  EXPECT_TRUE(woke) << "the idle drainer slept on past a sample";
  if (!woke) drainer_wake::wake();
  drainer.join();
  EXPECT_EQ(drainer_wake::wakes(), before + 1);
  // An idle sleep that ends by its timeout leaves the drainer awake: a later
  // sample has nothing to wake.
  drainer_wake::sleep(drainer_wake::prepare_to_sleep(/*idle=*/true), 1'000'000);
  drainer_wake::wake_if_idle();
  EXPECT_EQ(drainer_wake::wakes(), before + 1);
}

TEST(DrainerWake, ASampleLeavesADrainerOnItsIntervalAlone) {
  const uint32_t seq = drainer_wake::prepare_to_sleep();
  const uint64_t before = drainer_wake::wakes();
  std::atomic<bool> done{false};
  std::thread sampler([&] {
    while (!done) drainer_wake::wake_if_idle();
  });
  drainer_wake::sleep(seq, 50'000'000);  // not idle: only its 50 ms timeout ends it
  done = true;
  sampler.join();
  EXPECT_EQ(drainer_wake::wakes(), before) << "samples woke a drainer that was not backing off";
}

TEST(DrainerWake, ControlWakesEvenWithoutAProducer) {
  const uint32_t seq = drainer_wake::prepare_to_sleep();
  drainer_wake::wake();  // flush() or stop()
  const auto t0 = std::chrono::steady_clock::now();
  drainer_wake::sleep(seq, kLongSleepNs);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(60));
}

TEST(DrainerWake, TheCheckFillCoversTheLongestRecord) {
  // A producer crosses with a record of up to kMaxRecordSlots slots: the
  // ring then holds more than wake fill - kMaxRecordSlots readable slots.
  RingPtr big(Ring::create(16384, 1, 25));
  EXPECT_EQ(big->wake_check_fill(), 4096 - Ring::kMaxRecordSlots);
  RingPtr small(Ring::create(64, 1, 25));  // wake fill 16: shorter than a long record
  EXPECT_EQ(small->wake_check_fill(), 8u);
}

// An idle drainer sleeps until the next event: after prepare_to_sleep with
// `until_event` it lowers each ring's limit (Ring::wake_at_next_claim), so the
// next record of a thread takes the slow path and wakes it, however far below
// the wake fill its ring is. Once: the drainer is awake after that.
TEST(DrainerWake, SleepingUntilTheNextEventTheNextRecordWakesOnce) {
  RingPtr r(Ring::create(256, 1, 25));  // wake fill: 64 slots
  drainer_wake::cancel_sleep();
  for (uint64_t i = 0; i < 10; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  r->consume(r->readable());  // the drainer read them

  // Its ordinary back-off: a record far below the wake fill lets it sleep.
  drainer_wake::prepare_to_sleep(/*idle=*/true);
  uint64_t before = drainer_wake::wakes();
  ASSERT_TRUE(r->push(counter_event(10)));
  EXPECT_EQ(drainer_wake::wakes(), before) << "below the wake fill, a back-off sleep goes on";
  r->consume(r->readable());

  drainer_wake::prepare_to_sleep(/*idle=*/true, /*until_event=*/true);
  r->wake_at_next_claim();
  before = drainer_wake::wakes();
  ASSERT_TRUE(r->push(counter_event(11)));
  EXPECT_EQ(drainer_wake::wakes(), before + 1) << "the first record after the sleep began wakes it";
  for (uint64_t i = 12; i < 40; ++i) ASSERT_TRUE(r->push(counter_event(i)));
  EXPECT_EQ(drainer_wake::wakes(), before + 1) << "one wake: the others find it awake";
  EXPECT_EQ(r->readable(), 29u);
  drainer_wake::cancel_sleep();
}

// The thread was offered a larger ring and moves to it at its next record:
// that record wakes the drainer too, though only the old ring's limit was
// lowered.
TEST(DrainerWake, SleepingUntilTheNextEventAMoveToALargerRingWakes) {
  Ring* old_ring = Ring::create(64, 1);
  Ring* next = Ring::create(256, 1);
  for (uint64_t i = 0; i < 5; ++i) ASSERT_TRUE(old_ring->push(counter_event(i)));
  old_ring->consume(old_ring->readable());
  old_ring->offer_successor(next);
  drainer_wake::prepare_to_sleep(/*idle=*/true, /*until_event=*/true);
  old_ring->wake_at_next_claim();
  const uint64_t before = drainer_wake::wakes();
  Ring* r = old_ring;
  uint64_t pos = 0;
  ASSERT_TRUE(Ring::claim(r, 1, &pos));
  EXPECT_EQ(r, next);
  *r->slot_at(pos) = counter_event(5);
  r->publish(pos + 1);
  EXPECT_EQ(drainer_wake::wakes(), before + 1);
  drainer_wake::cancel_sleep();
  Ring::release(old_ring);  // the drainer's reference: the producer dropped its own
  Ring::release(next);
  Ring::release(next);
}

// A thread that records nothing while the drainer sleeps until the next
// event is not woken for: lowering the limit alone writes nothing.
TEST(DrainerWake, LoweringTheLimitAloneWakesNobody) {
  RingPtr r(Ring::create(256, 1, 25));
  drainer_wake::prepare_to_sleep(/*idle=*/true, /*until_event=*/true);
  const uint64_t before = drainer_wake::wakes();
  r->wake_at_next_claim();
  r->wake_at_next_claim();
  EXPECT_EQ(drainer_wake::wakes(), before);
  EXPECT_EQ(r->readable(), 0u);
  drainer_wake::cancel_sleep();
}
