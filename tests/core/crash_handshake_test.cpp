// The fatal-signal handler's handshake with the writer thread
// (crash/crash_state.h): the batches the writer has queued are written before
// the handler takes the sink, for as long as the writer gets through them,
// and a writer stuck in a call is left alone without being refused for good.
// No recording runs here: the test plays the writer with the same calls.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "crash/crash_state.h"

using namespace ringprof;

namespace {

// Publishes a handshake for one test and takes it back after.
struct PublishedWriter {
  crash::WriterHandshake handshake;
  PublishedWriter() { crash::publish_writer(&handshake); }
  ~PublishedWriter() { crash::unpublish_writer(&handshake); }
};

constexpr int kStallMs = 300;
// A wait this long means the wrong rule ended it: the tests below pass it
// where the rule under test should end the wait long before (at most
// kStallMs twice), and check that it did, with half of it as the margin.
constexpr int kLongMs = 120'000;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

TEST(CrashHandshake, ASlowWriterWritesItsWholeQueueFirst) {
  // Ten jobs of 50 ms each: half a second in all, longer than the writer may
  // stand still, but it never stands still that long.
  PublishedWriter w;
  constexpr int kJobs = 10;
  w.handshake.backlog.store(kJobs);
  std::atomic<int> written{0};
  std::thread writer([&] {
    for (int i = 0; i < kJobs; ++i) {
      ASSERT_TRUE(crash::writer_begin_work(w.handshake)) << "job " << i << " refused while the queue empties";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the job's write, slow on purpose
      written.fetch_add(1);
      w.handshake.backlog.fetch_sub(1);
      crash::writer_end_work(w.handshake);
    }
  });
  const bool held = crash::hold_writer(kStallMs, kLongMs, /*queue_closed=*/true);
  const int written_when_held = written.load();
  writer.join();
  EXPECT_TRUE(held);
  EXPECT_EQ(written_when_held, kJobs) << "the handler took the sink with jobs still queued";
  EXPECT_FALSE(crash::writer_begin_work(w.handshake)) << "held: the writer must stay off the sink";
  crash::release_writer();
  EXPECT_TRUE(crash::writer_begin_work(w.handshake)) << "released: the writer works again";
  crash::writer_end_work(w.handshake);
}

TEST(CrashHandshake, AWriterStuckInACallIsLeftAndNotRefusedForGood) {
  PublishedWriter w;
  w.handshake.backlog.store(1);
  ASSERT_TRUE(crash::writer_begin_work(w.handshake));  // in a call that never ends (a write on a dead disk)
  // Its queue does not move: the handler stops waiting for it after
  // kStallMs, not after the cap on the whole wait.
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_FALSE(crash::hold_writer(kStallMs, kLongMs, /*queue_closed=*/true));
  EXPECT_LT(seconds_since(t0), kLongMs / 2000.0) << "the stalled queue was waited for until the cap";
  crash::writer_end_work(w.handshake);
  // Should the process go on (a previous handler recovered), the writer's
  // next call must not be refused.
  EXPECT_TRUE(crash::writer_begin_work(w.handshake));
  crash::writer_end_work(w.handshake);
}

TEST(CrashHandshake, WithoutAParkedDrainerTheIdleWriterIsHeldAtOnce) {
  // A drainer that did not park may still queue jobs: waiting for the queue
  // to empty would be waiting for nothing.
  PublishedWriter w;
  w.handshake.backlog.store(3);
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(crash::hold_writer(kLongMs, kLongMs, /*queue_closed=*/false));
  EXPECT_LT(seconds_since(t0), kLongMs / 2000.0) << "the queue was waited for with jobs still able to come";
  EXPECT_FALSE(crash::writer_begin_work(w.handshake));
  crash::release_writer();
}
