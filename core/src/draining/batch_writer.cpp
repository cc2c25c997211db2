#include "draining/batch_writer.h"
#include "draining/thread_cpu.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "crash/crash_state.h"
#include "draining/drainer_wake.h"
#include "draining/quiet_thread.h"
#include "operation/level_windows.h"
#include "operation/ops_hooks.h"
#include "recording/clock.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"

namespace ringprof {

namespace {
// How long the writer waits for a job before it looks at the trigger inbox
// and the crash handshake again, when no trigger poll is due sooner. Each
// wake-up of an idle thread costs tens of microseconds of CPU on a virtual
// machine (measured: 50 to 60 µs here), so an idle writer wakes rarely.
constexpr int64_t kIdleWaitUs = 1'000'000;
// A recording that wrote no batch yet, or none for this long, is idle: the
// trigger inbox is looked at every kIdleTriggerPollNs (or
// RINGPROF_TRIGGER_POLL_MS, if longer) instead. A window opened in an idle
// process records nothing until it works again, so a later answer loses
// nothing; the CLI waits 5 s. A busy process writes a batch at least every
// RINGPROF_FLUSH_MS, so it is never idle by this measure.
constexpr uint64_t kIdleAfterNs = 2'000'000'000;
constexpr uint64_t kIdleTriggerPollNs = 1'000'000'000;
// An idle writer whose sink gives a trigger descriptor (an inotify watch)
// sleeps on it: it wakes when a request may have come, or a job does. It
// still looks this often, in case a request came the watch cannot see.
constexpr uint64_t kIdleWatchedPollNs = 60'000'000'000;
// A busy writer with a watch waits on it too, between jobs, and looks this
// often besides (a timer wake-up every RINGPROF_TRIGGER_POLL_MS was a third
// of the writer's CPU at 10 k zones a second).
constexpr uint64_t kBusyWatchedPollNs = 1'000'000'000;
// With triggers off (RINGPROF_TRIGGER_POLL_MS=0) nothing but a job needs the
// writer; it still looks at the crash handshake this often.
constexpr int64_t kNoTriggersWaitUs = 3'600'000'000;

}  // namespace

void WriteJob::clear() {
  has_batch = false;
  sequence = 0;
  events.clear();
  runs.clear();
  threads.clear();
  new_locations.clear();
  new_stacks.clear();
  new_modules.clear();
  new_gpu_names.clear();
  sampler.reset();
  gpu.clear();
  gpu_devices.clear();
  gpu_stats.reset();
  first_ns = last_ns = 0;
  samples = unrecorded = 0;
  flush_sink = false;
  window_callbacks.clear();
  flush_ticket = 0;
  stop = false;
}

BatchWriter::BatchWriter(const Config& config, Sink& sink, Callbacks callbacks)
    : config_(config),
      sink_(sink),
      callbacks_(std::move(callbacks)),
      batch_capacity_(std::max<uint32_t>(config.batch_events, 1024)) {}

BatchWriter::~BatchWriter() {
  if (thread_.joinable()) stop();
  WriteJob* j = nullptr;
  while (queue_.try_dequeue(j)) delete j;
  while (free_.try_dequeue(j)) delete j;
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

bool BatchWriter::start() {
  if (wake_fd_ < 0) wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);  // -1: the writer waits on the queue alone
  crash::publish_writer(&handshake_);
  if (!start_quiet_thread(thread_, [this] { run(); })) {
    crash::unpublish_writer(&handshake_);
    return false;
  }
  // Not waiting for its id (tid()): the drainer's sampler asks for it later.
  return true;
}

void BatchWriter::stop() {
  if (!thread_.joinable()) return;
  for (;;) {  // (only out of memory makes this go round)
    auto job = take_job();
    job->stop = true;
    if (give(std::move(job))) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  thread_.join();
  crash::unpublish_writer(&handshake_);
}

std::unique_ptr<WriteJob> BatchWriter::take_job() {
  WriteJob* j = nullptr;
  if (free_.try_dequeue(j)) return std::unique_ptr<WriteJob>(j);
  return std::make_unique<WriteJob>();
}

bool BatchWriter::full() noexcept {
  if (batches_in_flight_.load(std::memory_order_acquire) < kMaxBatchesInFlight) return false;
  drainer_waits_.store(true, std::memory_order_seq_cst);
  // The writer may have finished one between the two loads and not seen the flag.
  return batches_in_flight_.load(std::memory_order_seq_cst) >= kMaxBatchesInFlight;
}

bool BatchWriter::give(std::unique_ptr<WriteJob> job) {
  if (!thread_.joinable()) {
    // No writer thread (it could not be created, or has stopped): the
    // drainer writes the job itself, as the only thread on the sink.
    if (job->stop) return true;
    if (job->has_batch) batches_in_flight_.fetch_add(1, std::memory_order_acq_rel);  // process() counts it out
    run_job(job.get());
    job->clear();
    WriteJob* raw = job.release();
    if (!free_.enqueue(raw)) delete raw;
    return true;
  }
  if (job->has_batch) batches_in_flight_.fetch_add(1, std::memory_order_acq_rel);
  handshake_.backlog.fetch_add(1, std::memory_order_seq_cst);
  if (queue_.enqueue(job.get())) {
    job.release();
    // Orders the enqueue before the read of the flag (wait_idle's fence is
    // the other half): the writer finds the job, or this wakes its poll.
    std::atomic_thread_fence(std::memory_order_seq_cst);
    if (polling_.load(std::memory_order_relaxed)) {
      const uint64_t one = 1;
      [[maybe_unused]] const ssize_t n = ::write(wake_fd_, &one, sizeof one);
    }
    return true;
  }
  // Out of memory for a queue node: the job is lost like a failed write.
  handshake_.backlog.fetch_sub(1, std::memory_order_seq_cst);
  if (job->has_batch) {
    batches_in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    lose_batch(*job);
  }
  if (job->flush_ticket && callbacks_.flushed) callbacks_.flushed(job->flush_ticket);
  return false;
}

std::vector<ThreadInfo> BatchWriter::take_returned_counts() {
  std::lock_guard<std::mutex> lock(returned_mutex_);
  std::vector<ThreadInfo> out;
  out.swap(returned_);
  return out;
}

void BatchWriter::run() {
  prctl(PR_SET_NAME, "ringprof-write", 0, 0, 0);
  internal::t_ringprof_thread = true;  // its allocations are ringprof's own (ringprof/memory.h)
  handshake_.tid.store(static_cast<pid_t>(syscall(SYS_gettid)), std::memory_order_release);
  for (;;) {
    prepare_spare_job();
    WriteJob* raw = nullptr;
    if (!queue_.try_dequeue(raw) && watched()) {
      raw = wait_idle(internal::monotonic_ns());
    } else if (!raw) {
      int64_t wait_us = config_.ops.trigger_poll_ms != 0 ? kIdleWaitUs : kNoTriggersWaitUs;
      if (config_.ops.trigger_poll_ms != 0) {
        const uint64_t now = internal::monotonic_ns();
        const int64_t until_poll = next_poll_ns_ > now ? static_cast<int64_t>((next_poll_ns_ - now) / 1000) : 0;
        wait_us = std::min(wait_us, until_poll);
      }
      if (wait_us <= 0 || !queue_.wait_dequeue_timed(raw, wait_us)) raw = nullptr;
    }
    std::unique_ptr<WriteJob> job(raw);
    if (job && job->has_batch) {
      batch_seen_ = true;
      last_batch_ns_ = internal::monotonic_ns();
    }
    run_job(job.get());
    counters_.cpu_ns.store(internal::thread_cpu_ns(), std::memory_order_relaxed);
    if (job) handshake_.backlog.fetch_sub(1, std::memory_order_seq_cst);
    if (!job) continue;
    const bool stop = job->stop;
    job->clear();
    if (free_.enqueue(job.get())) job.release();  // else the unique_ptr frees it
    if (stop) break;
  }
}

void BatchWriter::prepare_spare_job() {
  // Fresh memory is slow to touch the first time (a page fault per 4 KiB,
  // several microseconds each on some virtual machines): the writer, not the
  // drainer, pays for it, while it has nothing else to do (never with a job
  // waiting: that would hold the job up by milliseconds). At most
  // kSpareJobs such jobs wait, so memory stays bounded.
  // Only once a first batch came: a process that records nothing never
  // pays for them.
  if (!batch_seen_ || spare_jobs_made_ >= kSpareJobs || free_.size_approx() != 0 || queue_.size_approx() != 0) return;
  auto job = std::make_unique<WriteJob>();
  job->events.reserve(batch_capacity_);
  advise_huge_pages(job->events);  // touched whole just below (batch_memory.h)
  std::memset(static_cast<void*>(job->events.data()), 0, job->events.capacity() * sizeof(Event));
  job->runs.reserve(64);
  if (free_.enqueue(job.get())) {
    job.release();
    ++spare_jobs_made_;
  }
}

void BatchWriter::run_job(WriteJob* job) {
  // The crash handler holds the sink: wait until it lets go (it only does
  // when an earlier handler recovered from the signal).
  while (!crash::writer_begin_work(handshake_)) crash::writer_wait(handshake_);
  try {
    poll_trigger(internal::monotonic_ns());
    if (job) process(*job);
  } catch (...) {
    // A throwing user sink: the job's batch was counted as lost in write_batch.
  }
  crash::writer_end_work(handshake_);
}

bool BatchWriter::idle(uint64_t now_ns) const noexcept {
  return !batch_seen_ || now_ns - last_batch_ns_ > kIdleAfterNs;
}

void BatchWriter::poll_trigger(uint64_t now_ns) {
  if (config_.ops.trigger_poll_ms == 0) return;
  uint64_t period = uint64_t{config_.ops.trigger_poll_ms} * 1000000ull;
  // Writing again after an idle stretch: back to the busy period at once.
  const uint64_t busy = watched() ? std::max(period, kBusyWatchedPollNs) : period;
  if (!idle(now_ns) && next_poll_ns_ > now_ns + busy) next_poll_ns_ = now_ns;
  if (now_ns < next_poll_ns_) return;
  ops::poll_trigger(sink_);
  trigger_fd_ = sink_.trigger_wait_fd();
  // Watched, the writer wakes when a request comes. Unwatched, an idle one
  // looks less often, but not at the Off level: a process that records
  // nothing until a trigger opens a window is not idle.
  if (watched())
    period = std::max(period, idle(now_ns) ? kIdleWatchedPollNs : kBusyWatchedPollNs);
  else if (idle(now_ns) && mode() != Level::Off)
    period = std::max(period, kIdleTriggerPollNs);
  next_poll_ns_ = now_ns + period;
}

WriteJob* BatchWriter::wait_idle(uint64_t now_ns) {
  WriteJob* raw = nullptr;
  polling_.store(true, std::memory_order_relaxed);
  // Orders the flag before the look at the queue (give()'s fence is the
  // other half).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (!queue_.try_dequeue(raw)) {
    const uint64_t until = next_poll_ns_ > now_ns ? (next_poll_ns_ - now_ns + 999999) / 1000000 : 0;
    pollfd fds[2] = {{wake_fd_, POLLIN, 0}, {trigger_fd_, POLLIN, 0}};
    const int n = ::poll(fds, 2, static_cast<int>(std::min<uint64_t>(until, 1u << 30)));
    if (n > 0 && fds[1].revents != 0) next_poll_ns_ = 0;  // a request may have come: look now
  }
  polling_.store(false, std::memory_order_relaxed);
  uint64_t count;
  while (::read(wake_fd_, &count, sizeof count) > 0) {
  }
  if (!raw) queue_.try_dequeue(raw);
  return raw;
}

void BatchWriter::process(WriteJob& job) {
  if (job.has_batch) {
    try {
      write_batch(job);  // a throwing sink is caught there
    } catch (...) {
      // Out of memory before the sink saw the batch: it is lost, and counted.
      try {
        lose_batch(job);
      } catch (...) {
      }
    }
    batches_in_flight_.fetch_sub(1, std::memory_order_seq_cst);
    if (drainer_waits_.exchange(false, std::memory_order_seq_cst)) drainer_wake::wake();
  }
  if (job.flush_sink) sink_.flush();
  for (uint64_t id : job.window_callbacks) windows::run_callbacks(id);
  if (job.flush_ticket && callbacks_.flushed) callbacks_.flushed(job.flush_ticket);
}

void BatchWriter::write_batch(WriteJob& job) {
  locations_.insert(locations_.end(), job.new_locations.begin(), job.new_locations.end());
  for (StackTrace& s : job.new_stacks) stacks_.push_back(std::move(s));
  modules_.insert(modules_.end(), job.new_modules.begin(), job.new_modules.end());
  for (std::string& n : job.new_gpu_names) gpu_names_.push_back(std::move(n));
  Batch b;
  b.sequence = job.sequence;
  b.events = job.events;
  b.runs = job.runs;
  b.threads = job.threads;
  b.locations = locations_;
  b.stacks = stacks_;
  b.modules = modules_;
  b.sampler = job.sampler ? &*job.sampler : nullptr;
  b.rank = job.rank.get();
  if (job.gpu_stats) {  // a GPU source runs (or ran) in this session
    b.gpu = job.gpu;
    b.gpu_names = gpu_names_;
    b.gpu_devices = job.gpu_devices;
    b.gpu_stats = &*job.gpu_stats;
  }
  b.first_ns = job.first_ns;
  b.last_ns = job.last_ns;
  bool ok = false;
  try {
    ok = sink_.write(b);
  } catch (...) {
    ok = false;  // a throwing sink loses the batch, which is counted below
  }
  counters_.batches.fetch_add(1, std::memory_order_relaxed);
  if (ok) {
    counters_.events_written.fetch_add(job.events.size() - job.samples - job.unrecorded, std::memory_order_relaxed);
    counters_.samples_written.fetch_add(job.samples, std::memory_order_relaxed);
    return;
  }
  lose_batch(job);
}

void BatchWriter::lose_batch(const WriteJob& job) {
  // The batch is gone: its events count as dropped and its samples as lost;
  // the drainer reports them, and the counts this batch carried, again with
  // a later batch.
  counters_.dropped_io.fetch_add(job.events.size() - job.samples - job.unrecorded, std::memory_order_relaxed);
  counters_.samples_lost.fetch_add(job.samples, std::memory_order_relaxed);
  std::vector<ThreadInfo> back = job.threads;  // every thread the runs name is there
  for (const EventRun& run : job.runs) {
    ThreadInfo* info = nullptr;
    for (ThreadInfo& t : back)
      if (t.index == run.thread_index) info = &t;
    if (!info) continue;
    uint64_t io = 0;
    for (uint32_t i = run.begin; i < run.begin + run.count; ++i) {
      const Event& e = job.events[i];
      if (e.kind == EventKind::Sample) ++info->samples_lost;
      else if (!is_drop_mark(e) && e.kind != EventKind::HeapStack)
        ++io;  // BatchJob::unrecorded
    }
    info->dropped_io += io;
    if (io && callbacks_.io_drops) callbacks_.io_drops(*info, io);
  }
  std::lock_guard<std::mutex> lock(returned_mutex_);
  for (ThreadInfo& t : back)
    if (t.dropped_ring || t.dropped_io || t.samples_lost) returned_.push_back(std::move(t));
}

}  // namespace ringprof
