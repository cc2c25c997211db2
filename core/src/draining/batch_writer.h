// The writer: the thread that hands finished batches to the sink, so that
// reading the rings never waits behind encoding, compression and file writes.
//
// Data flow: the drainer fills a batch (events named and timed, runs, the
// threads they name, the table entries added since the last batch), moves it
// into a WriteJob and enqueues it; the writer thread ("ringprof-write") takes
// jobs in order from a moodycamel queue and makes every Sink call between
// begin_session() and end_session(): write(), flush() and the trigger polls
// (so a sink is still only ever called by one thread at a time). What has to
// wait for a batch to be written rides in the queue behind it: the sink flush
// and the flush() tickets, and the callbacks of the windows that batch closed.
//
// Ownership: a job belongs to the drainer until enqueued, then to the writer,
// which hands it back emptied (its vectors keep their capacity) for the next
// batch. The writer keeps its own copy of the append-only tables (locations,
// stacks, modules, GPU names), to which each job adds what is new, so the
// drainer never shares a growing vector with it.
//
// Bounded: at most kMaxBatchesInFlight batches are queued or being written.
// A drainer that finds the writer full keeps its current batch and stops
// reading rings; an overloaded writer thus shows as ring drops, counted and
// marked per thread like any other. The writer wakes the drainer when a
// place frees up.
//
// Crash: the writer only touches the sink between crash::writer_begin_work()
// and writer_end_work(); the fatal-signal handler waits for the writer to
// empty its queue (the drainer parked, nothing new comes) and holds it idle
// while it writes the crash segment into the same file (crash_state.h).
#pragma once

#include <algorithm>
#include <atomic>
#include <concurrentqueue/blockingconcurrentqueue.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "crash/crash_state.h"
#include "ringprof/config.h"
#include "draining/batch_memory.h"
#include "ringprof/gpu.h"
#include "ringprof/sink.h"

namespace ringprof {

struct WriteJob {
  // The batch; absent in a job that only carries what follows it.
  bool has_batch = false;
  uint64_t sequence = 0;
  BatchEvents events;
  std::vector<EventRun> runs;
  std::vector<ThreadInfo> threads;
  std::vector<Location> new_locations;  // table entries added since the previous job
  std::vector<StackTrace> new_stacks;
  std::vector<ModuleInfo> new_modules;
  std::vector<std::string> new_gpu_names;
  std::optional<SamplerState> sampler;
  std::shared_ptr<const RankInfo> rank;  // shared with the drainer: no copy per batch
  std::vector<GpuActivity> gpu;
  std::vector<GpuDevice> gpu_devices;
  std::optional<GpuStats> gpu_stats;
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t samples = 0;     // Sample events among `events`
  // Events no thread recorded as such: the rings' drop marks, and the
  // HeapStack the drainer adds after each HeapAlloc.
  uint64_t unrecorded = 0;

  // After the batch.
  bool flush_sink = false;                // Sink::flush()
  std::vector<uint64_t> window_callbacks;  // windows whose events are now written
  uint64_t flush_ticket = 0;              // flush() calls up to this ticket are done
  bool stop = false;                      // the last job: the writer thread ends

  void clear();
};

// What the writer counts (recorder_stats()), final once it has stopped.
struct WriterCounters {
  std::atomic<uint64_t> events_written{0};
  std::atomic<uint64_t> samples_written{0};
  std::atomic<uint64_t> dropped_io{0};
  std::atomic<uint64_t> samples_lost{0};
  std::atomic<uint64_t> batches{0};
  std::atomic<uint64_t> cpu_ns{0};  // the writer thread's CPU time, after each job
};

class BatchWriter {
 public:
  static constexpr uint32_t kMaxBatchesInFlight = 4;

  struct Callbacks {
    // flush() calls up to `ticket` are done.
    std::function<void(uint64_t ticket)> flushed;
    // A batch was lost: `io` of the thread's events with it (writer thread).
    std::function<void(const ThreadInfo& thread, uint64_t io)> io_drops;
  };

  BatchWriter(const Config& config, Sink& sink, Callbacks callbacks);
  ~BatchWriter();

  // Starts the thread (every signal blocked); false when it could not be
  // made. Its id (tid()) follows once it runs.
  bool start();
  // Enqueues the stop job and joins the thread once it has written everything.
  void stop();
  bool running() const { return thread_.joinable(); }
  // The writer thread's kernel id once it runs (0 before, and without it).
  pid_t tid() const noexcept { return handshake_.tid.load(std::memory_order_acquire); }

  // ---- drainer side ----
  // A job to fill: a returned one (emptied, capacity kept) or a new one.
  std::unique_ptr<WriteJob> take_job();
  // True when another batch would exceed kMaxBatchesInFlight; the writer then
  // wakes the drainer once one is written.
  bool full() noexcept;
  // Hands the job over. A job with a batch must not be given while full(),
  // except the last ones before stop(). False when the queue had no memory
  // for it: its batch is counted lost (as a failed write) and the table
  // entries it carried must go with the next job.
  bool give(std::unique_ptr<WriteJob> job);
  // Thread counts of lost batches, for the drainer to report again with a
  // later batch: each entry's dropped_ring, dropped_io and samples_lost.
  std::vector<ThreadInfo> take_returned_counts();

  const WriterCounters& counters() const { return counters_; }

 private:
  void run();
  // The trigger poll, then the job (if any), between the crash handshake's
  // begin and end of work.
  void run_job(WriteJob* job);
  void process(WriteJob& job);
  void write_batch(WriteJob& job);
  void lose_batch(const WriteJob& job);  // counts a batch that never reached the sink
  void poll_trigger(uint64_t now_ns);
  bool idle(uint64_t now_ns) const noexcept;
  // The sink gives a trigger descriptor (an inotify watch) to wait on.
  bool watched() const noexcept { return trigger_fd_ >= 0 && wake_fd_ >= 0; }
  // A watched writer's wait, on the sink's trigger descriptor and wake_fd_
  // instead of the queue's semaphore, until the next trigger poll is due: a
  // job that comes meanwhile, if any.
  WriteJob* wait_idle(uint64_t now_ns);
  void prepare_spare_job();
  static constexpr uint32_t kSpareJobs = kMaxBatchesInFlight + 1;

  const Config config_;
  Sink& sink_;
  Callbacks callbacks_;
  // No spinning before the writer sleeps: a job comes a few times a second
  // (one per batch), and the queue's default of 10,000 spins per wait cost
  // the idle writer more than its wake-ups.
  struct QueueTraits : moodycamel::ConcurrentQueueDefaultTraits {
    static const int MAX_SEMA_SPINS = 0;
  };
  moodycamel::BlockingConcurrentQueue<WriteJob*, QueueTraits> queue_;
  moodycamel::ConcurrentQueue<WriteJob*> free_;
  std::atomic<uint32_t> batches_in_flight_{0};
  std::atomic<bool> drainer_waits_{false};
  // While the writer sleeps in wait_idle(), give() writes to this eventfd.
  int wake_fd_ = -1;
  std::atomic<bool> polling_{false};
  std::thread thread_;
  WriterCounters counters_;
  crash::WriterHandshake handshake_;  // with the fatal-signal handler (crash_state.h)

  // Writer thread only: its copy of the tables.
  std::vector<Location> locations_;
  std::vector<StackTrace> stacks_;
  std::vector<ModuleInfo> modules_;
  std::vector<std::string> gpu_names_;
  uint64_t next_poll_ns_ = 0;
  int trigger_fd_ = -1;          // the sink's trigger_wait_fd() as of the last trigger poll
  const size_t batch_capacity_;  // events in a full batch
  uint32_t spare_jobs_made_ = 0;
  bool batch_seen_ = false;     // the writer thread's: a job with a batch came (prepare_spare_job)
  uint64_t last_batch_ns_ = 0;  // the writer thread's: when the last one came (poll_trigger)

  std::mutex returned_mutex_;
  std::vector<ThreadInfo> returned_;
};

}  // namespace ringprof
