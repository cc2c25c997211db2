// The drainer: one background thread per process that empties every ring,
// names events, converts timestamps and hands batches to the writer thread,
// which makes the sink calls (batch_writer.h).
//
// It is the only consumer of every ring. It sleeps between rounds until a
// producer's ring passes its wake fill (ring_drain_percent of the ring), a
// flush() or stop(), or drain_interval_ms, whichever comes first
// (drainer_wake.h); it goes round again at once while some ring is still past
// its wake fill. Rounds that find nothing back off, and after two of them the
// drainer sleeps until the next event: every ring's next record wakes it
// (Ring::wake_at_next_claim), so an idle process pays no rounds at all. Each round copies whatever is ready into the
// current batch and frees the slots at once, and hands the batch to the writer when it holds batch_events events, when
// its oldest event has waited flush_interval_ms, or on flush() and stop(); encoding, compression and file writes happen
// there, so reading the rings never waits behind them. It never blocks a recording thread: producers never wait for it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <optional>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "draining/batch_writer.h"
#include "recording/clock.h"
#include "gpu/gpu_collector.h"
#include "draining/location_registry.h"
#include "draining/interpreter_names.h"
#include "operation/ops_hooks.h"
#include "ringprof/config.h"
#include "ringprof/internal/ring.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"
#include "ringprof/sink.h"
#include "sampler/module_table.h"
#include "sampler/unwind_index.h"
#include "sampler/sample_visitor.h"
#include "sampler/stack_table.h"

namespace ringprof {

namespace sampler {
class Sampler;
}

class Drainer : private sampler::SampleVisitor {
 public:
  Drainer(const Config& config, std::shared_ptr<Sink> sink, uint32_t session, ClockSource clock);
  ~Drainer() override;

  // Starts the thread. False when the thread could not be created.
  bool start();
  // Drains and writes everything, ends the sink's session, joins the thread.
  // Returns false when the writer wrote no batch for Config::stall_ms while
  // it had not finished (a dead disk): the thread is then left running
  // detached and this object must never be deleted.
  bool stop();
  uint32_t stall_ms() const noexcept { return config_.stall_ms; }
  // Drains and writes everything recorded so far, waits until the sink has it.
  void flush();

  RecorderStats stats() const;
  // CPU that start() spent on the application's thread around the drainer's
  // start (arming the samplers, handlers): ringprof's own, so it does not
  // count as the application running (application_cpu_ns).
  void note_start_cpu(uint64_t ns) noexcept { start_cpu_ns_.store(ns, std::memory_order_relaxed); }

 private:
  struct ThreadState {
    Ring* ring = nullptr;  // our reference; null once reclaimed
    Ring* next_ring = nullptr;  // a larger successor offered to the thread (growth)
    bool ring_grown = false;    // `ring` is a successor: its bytes count in Ring::reserve_growth's budget
    uint64_t rate_since_ns = 0;  // the ring's fill rate: slots read since then
    uint64_t slots_read = 0;
    ThreadInfo info;
    uint64_t ring_dropped_seen = 0;
    bool in_batch = false;
    bool sampled = false;  // the sampler covers this thread (it is alive)
    uint64_t first_seen_ns = 0;    // sampler-only threads: when the sampler found it
    uint64_t name_checked_ns = 0;  // sampler-only threads: when comm was last read
  };

  void run();
  template <typename F>
  void guarded(F&& f) noexcept;
  void adopt_new_rings();
  void drain_all();
  bool control_pending();             // stop() or flush() waits for a round not yet done
  // Waits on flushed_ until done(); false once the writer wrote no batch for
  // `limit` without done() coming true.
  template <typename Done>
  bool wait_while_writing(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds limit, Done done);
  // A ring past its wake fill (`any`: holding anything), or a new ring.
  bool rings_need_draining(bool any = false) const;
  // The next sleep may last until the next event (drainer_wake.h): the
  // rounds find nothing and nothing else needs one on time.
  bool may_sleep_until_event() const noexcept;
  void drain_ring(ThreadState& t);
  // From record i of r's `ready`: the plain records (drainer.cpp) up to the
  // first other one, into the batch (at most `cap` events); where it stopped.
  uint64_t drain_plain(const Ring& r, uint64_t i, uint64_t ready, size_t cap, EventRun& run);
  // The stack of a ZoneStack record (its `words` words in the slots after
  // position `at` of the ring) interned as a Sample's is; 0 when the stack
  // table is full.
  uint32_t intern_zone_stack(const Ring& r, uint64_t at, uint16_t words);
  // A HeapAlloc record's stack (ringprof/heap.h), and the interval after it.
  uint32_t intern_heap_stack(const Ring& r, uint64_t at, uint32_t words, uint64_t* interval);
  // zone_stack_words_ interned, through the cache of recent stacks.
  uint32_t intern_record_words();
  void account_drops(ThreadState& t);
  // Offers the thread a larger ring when its ring overflowed, was found half
  // full, or fills so fast that what is left past the wake fill lasts less
  // than kRingCoverNs.
  void maybe_grow(ThreadState& t, uint64_t waiting, bool dropped, uint64_t now_ns);
  void release_ring(Ring* r, bool grown);
  // A ring this session will not read (an earlier session's), with whatever
  // its thread grew it into.
  void release_unread(Ring* r);
  // Reads a ring the thread left (retired, or moved to its successor) to its
  // end and lets it go; the successor the thread took becomes its ring. With
  // `wait`, past a full writer; without, false when events remain for the
  // next round.
  bool finish_ring(ThreadState& t, bool wait);
  // Adds to the thread's entry in thread_drops_ (recorder_stats()); any thread.
  void note_thread_drops(const ThreadInfo& t, uint64_t ring, uint64_t io);
  // Hands the batch to the writer. False, with the batch kept, when the
  // writer is full; with `wait` (flush, stop), waits for it instead.
  bool emit_batch(bool wait = false);
  void wait_for_writer();
  // Drop counts of batches the sink lost, to report again with a later one.
  void take_back_counts();
  void discard_batch();  // a crash flush stored it already
  void reclaim_rings(bool all);
  SessionInfo session_info() const;

  // ---- sampling (drainer_sampling.cpp) ----
  void start_sampler();
  void sample_round(bool final);
  ThreadState& thread_for_tid(uint32_t tid);
  void on_sample(uint32_t tid, uint64_t ts_ns, std::span<const uint64_t> words) override;
  void on_lost(uint32_t tid, uint64_t n) override;
  void refresh_sampled_names(uint64_t now_ns);
  // The detail level changed: sampling rate and GPU activity kinds follow.
  void on_level(Level m);

  Config config_;
  std::shared_ptr<Sink> sink_;
  uint32_t session_;
  TickConverter clock_;
  LocationRegistry locations_;
  std::unordered_map<uint32_t, ThreadState> threads_;  // by thread index
  std::unordered_map<uint32_t, uint32_t> index_by_tid_;  // live threads: tid → index in threads_

  // Sampling.
  std::unique_ptr<sampler::Sampler> sampler_;
  // The heap sampler's view of the loaded objects when the CPU sampler
  // publishes none (off, or perf's kernel call chains), and the modules its
  // stacks' addresses lie in (heap_round).
  std::unique_ptr<sampler::UnwindIndex> heap_unwind_;
  uint64_t heap_refreshed_ns_ = 0;
  bool heap_seen_ = false;  // a heap sample was drained: the module table is kept for it
  void heap_round(bool force);
  std::shared_ptr<const RankInfo> rank_;  // the process's identity as last copied (null: unknown)
  uint32_t rank_seen_ = UINT32_MAX;       // its version
  sampler::StackTable stacks_;
  InterpreterNames interpreter_names_;
  std::vector<uint64_t> sample_frames_;     // on_sample's scratch
  std::vector<uint64_t> zone_stack_words_;  // intern_zone_stack's scratch
  // Operators called from one line in a loop repeat the same raw stack: the
  // last ids by a hash of the raw words, so a repeat costs a compare instead
  // of naming each frame and interning the stack again.
  struct ZoneStackCacheEntry {
    std::vector<uint64_t> words;
    uint32_t id = 0;
  };
  static constexpr size_t kZoneStackCache = 64;
  std::vector<ZoneStackCacheEntry> zone_stack_cache_ = std::vector<ZoneStackCacheEntry>(kZoneStackCache);
  sampler::ModuleTable modules_;
  // modules_ is read from the first stack on (a sample, a zone's or heap
  // stack), then kept current every round.
  bool modules_wanted_ = false;
  void want_modules();
  std::vector<uint32_t> tids_added_, tids_removed_;
  uint64_t samples_in_batch_ = 0;
  uint64_t unrecorded_in_batch_ = 0;  // BatchJob::unrecorded of the current batch
  int level_subscription_ = 0;  // level::subscribe id while the drainer runs
  uint64_t names_checked_ns_ = 0;
  // The application's CPU at the last scan for threads and at the last round
  // (none yet, or unknown: unset), and whether it used under 1 ms between the
  // last two rounds: then an idle sleep may pass the sampled cap.
  std::optional<uint64_t> app_cpu_at_scan_, app_cpu_last_round_;
  bool app_idle_ = false;
  bool writer_ignored_ = false;            // the sampler leaves the writer thread out
  std::atomic<uint64_t> start_cpu_ns_{0};  // note_start_cpu
  std::optional<uint64_t> application_cpu_ns() const;
  // After prepare_to_sleep, for a sleep of *sleep_ns: arms the CPU alarm
  // (cpu_alarm.h) when it is an idle sleep past the sampled cap, or lowers
  // *sleep_ns to that cap when the alarm cannot be armed. True when armed:
  // then disarm_after_sleep() once the sleep ends.
  bool arm_for_idle_sleep(uint64_t* sleep_ns);
  void disarm_after_sleep() noexcept;

  // The current batch.
  BatchEvents events_;
  std::vector<EventRun> runs_;
  std::vector<ThreadInfo> batch_threads_;
  uint64_t batch_first_ns_ = ~0ull;
  uint64_t batch_last_ns_ = 0;
  uint64_t batch_started_mono_ = 0;  // when the oldest event of the batch was drained
  uint64_t sequence_ = 0;
  std::string name_buffer_;
  ops::DrainerOps ops_;  // levels, windows, triggers, crash hand-off (ops_hooks.h)

  // Control (stop/flush callers ↔ drainer thread); never touched by producers.
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable flushed_;
  bool stop_requested_ = false;
  uint64_t flush_requested_ = 0;
  uint64_t flush_done_ = 0;  // set by the writer once the sink has the flush
  uint64_t flush_sent_ = 0;  // drainer thread: the last ticket handed to the writer
  bool finished_ = false;
  bool sink_ready_ = false;  // begin_session() has returned
  bool warned_exception_ = false;

  std::atomic<uint64_t> dropped_ring_{0};
  std::atomic<uint64_t> threads_seen_{0};
  std::atomic<uint64_t> cpu_ns_{0};  // this thread's CPU time, after each round
  // Rounds in a row that found nothing to do (sleep_ns backs off on them).
  // From 2: right after start() nothing waits to be read but what the
  // rings already hold, which the last look before a sleep finds.
  uint32_t idle_rounds_ = 2;
  static constexpr uint64_t kIdleSleepMaxNs = 500'000'000;
  static constexpr uint64_t kIdleSleepSampledMaxNs = 250'000'000;  // sampler on, no CPU alarm
  // A sleep until the next event ends after this at the latest: a record
  // published just as the drainer went to sleep (its thread past the limit
  // check already, and silent since) waits no longer than this.
  static constexpr uint64_t kUntilEventMaxNs = 10'000'000'000;
  // Rounds in a row that found events, with nothing that needs rounds every
  // RINGPROF_DRAIN_MS (rounds_on_time); sleep_ns backs off on them too.
  uint32_t flow_rounds_ = 0;
  uint64_t sleep_ns() const noexcept;
  uint64_t batch_due_ns() const noexcept;  // when the current batch must go to the writer
  bool rounds_on_time() const noexcept;
  std::atomic<uint64_t> rings_live_{0};

  GpuCollector gpu_;  // GPU activity (CUPTI) for the batches; last, so it starts after the rest is set up
  std::atomic<uint64_t> samples_taken_{0};
  std::atomic<uint64_t> sample_handler_ns_{0};
  std::atomic<uint64_t> samples_lost_{0};  // by the sampler and the stack table (the writer counts its own)
  mutable std::mutex drops_mutex_;       // thread_drops_: written by the drainer and the writer, read by stats()
  std::vector<ThreadDrops> thread_drops_;
  std::unordered_map<uint32_t, size_t> drops_slot_;  // thread index → its entry in thread_drops_

  // What the writer has of the append-only tables (emit_batch sends the rest).
  size_t locations_sent_ = 0, stacks_sent_ = 0, modules_sent_ = 0, gpu_names_sent_ = 0;
  bool wait_for_writer_ = false;  // this round must not leave events behind (flush, stop)
  std::unique_ptr<BatchWriter> writer_;  // last: its thread stops before the rest goes
};

// The queue through which a thread's new ring reaches the drainer.
void enqueue_new_ring(Ring* ring) noexcept;
bool dequeue_new_ring(Ring** ring) noexcept;
bool new_rings_waiting() noexcept;  // roughly: some ring was enqueued and not yet taken
// In a forked child: a fresh, empty queue.
void reset_new_ring_queue_after_fork() noexcept;

}  // namespace ringprof
