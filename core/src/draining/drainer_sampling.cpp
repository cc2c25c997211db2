// The drainer's side of CPU sampling: starts the sampler on the drainer
// thread, turns its samples into Sample events of the sampled threads' runs
// (the stack interned into an id), keeps modules and thread coverage current,
// and counts what was lost.
#include <algorithm>

#include "draining/drainer.h"
#include "draining/thread_cpu.h"
#include "sampler/sampler.h"
#include "sampler/thread_list.h"
#include "recording/thread_index.h"

namespace ringprof {

namespace {
// Sampler-only threads name themselves through the kernel, usually right
// after they start: look at a young thread's name every round (100 ms), at an
// older one's every 2 s.
constexpr uint64_t kYoungThreadNs = 2000000000;
constexpr uint64_t kOldNameRefreshNs = 2000000000;
// The scan for threads and their names waits until the application's threads
// have run this much CPU since the last one: a thread that has not run has
// nothing to sample yet, and one found a round later has lost nothing. In an
// idle process the scan (a listing of /proc/self/task, a read of each young
// thread's name) was 120 µs of a 150–250 µs round, four rounds a second.
constexpr uint64_t kScanAfterAppCpuNs = 1000000;
}

void Drainer::start_sampler() {
  sampler_ = std::make_unique<sampler::Sampler>(config_.sample_hz, config_.sampler);
  heap_round(true);  // before the first heap samples' walks, as far as it can be
  if (!sampler_->on()) return;
  // Threads that recorded before the drainer's first look already have rings
  // (adopted on the first round); every other thread is found by this scan.
  adopt_new_rings();
  sample_round(false);
  // Just scanned: the application has not run since, and the first sleep
  // may wait for it with the CPU alarm instead of a timed round. Without
  // the alarm (perf_event's rings have no signal for it) that sleep would
  // last 250 ms, and a thread started just after start() would wait that
  // long for its first sample: the first round comes at the next scan and
  // measures whether the application runs.
  app_idle_ = sampler_->unwinds_in_process();
}

void Drainer::heap_round(bool force) {
  if (config_.heap_interval == 0) return;
  const uint64_t now = internal::monotonic_ns();
  if (!force && now - heap_refreshed_ns_ < 100000000) return;  // as often as the sampler rescans
  heap_refreshed_ns_ = now;
  if (sampler_ && sampler_->unwinds_in_process()) {
    heap_unwind_.reset();
  } else {
    if (!heap_unwind_) heap_unwind_ = std::make_unique<sampler::UnwindIndex>();
    heap_unwind_->refresh();
  }
  if (heap_seen_) modules_.refresh();
}

void Drainer::on_level(Level m) {
  gpu_.set_level(m);
  if (!sampler_ || !sampler_->on()) return;
  const uint32_t detailed = config_.detailed_sample_hz ? config_.detailed_sample_hz : config_.sample_hz;
  const uint32_t hz = m == Level::Detailed ? detailed : m == Level::AlwaysOn ? config_.sample_hz : 0;
  if (hz == sampler_->state().hz) return;
  // The samples taken at the old rate go out in a batch that states it.
  sampler_->collect(*this);
  emit_batch(true);
  sampler_->set_hz(hz);
}

Drainer::ThreadState& Drainer::thread_for_tid(uint32_t tid) {
  if (auto it = index_by_tid_.find(tid); it != index_by_tid_.end()) {
    if (auto t = threads_.find(it->second); t != threads_.end()) return t->second;
  }
  // A thread that never recorded an event: an index from the recorder's
  // counter, and the kernel's name for it.
  const uint32_t index = allocate_thread_index();
  ThreadState& t = threads_[index];
  t.info.index = index;
  t.info.tid = tid;
  t.info.name = sampler::thread_comm(tid);
  t.info.name_version = 1;
  t.first_seen_ns = t.name_checked_ns = internal::monotonic_ns();
  index_by_tid_[tid] = index;
  threads_seen_.fetch_add(1, std::memory_order_relaxed);
  return t;
}

void Drainer::sample_round(bool final) {
  if (!sampler_ || !sampler_->on()) {
    if (final && sampler_) {
      samples_taken_.store(sampler_->taken(), std::memory_order_relaxed);
      sample_handler_ns_.store(sampler_->handler_ns(), std::memory_order_relaxed);
    }
    return;
  }
  const uint64_t now = internal::monotonic_ns();
  tids_added_.clear();
  tids_removed_.clear();
  if (final) {
    sampler_->stop(*this);
    for (auto& [index, t] : threads_) t.sampled = false;
  } else {
    // The figure steps down when the writer's count catches up with work
    // it had done: a step down is no CPU of the application's. Unknown (the
    // clock failed): as if the application ran.
    const std::optional<uint64_t> app_cpu = application_cpu_ns();
    app_idle_ = app_cpu && app_cpu_last_round_ && *app_cpu < *app_cpu_last_round_ + kScanAfterAppCpuNs;
    app_cpu_last_round_ = app_cpu;
    if (app_cpu && app_cpu_at_scan_ && *app_cpu < *app_cpu_at_scan_) app_cpu_at_scan_ = app_cpu;
    bool app_ran = !app_cpu || !app_cpu_at_scan_ || *app_cpu >= *app_cpu_at_scan_ + kScanAfterAppCpuNs;
    // The writer thread is ringprof's own, like the drainer: left out once
    // its id is known, and no scan before (it starts after the first).
    if (!writer_ignored_ && writer_->running()) {
      if (const pid_t tid = writer_->tid(); tid != 0) {
        sampler_->ignore(static_cast<uint32_t>(tid));
        writer_ignored_ = true;
      } else {
        app_ran = false;
      }
    }
    if (sampler_->upkeep(now, false, app_ran, *this, &tids_added_, &tids_removed_)) app_cpu_at_scan_ = app_cpu;
    for (uint32_t tid : tids_added_) thread_for_tid(tid).sampled = true;
    for (uint32_t tid : tids_removed_) {
      if (auto it = index_by_tid_.find(tid); it != index_by_tid_.end()) {
        if (auto t = threads_.find(it->second); t != threads_.end()) t->second.sampled = false;
      }
    }
    sampler_->collect(*this);
    if (modules_wanted_) modules_.refresh();
    if (!tids_added_.empty() || !tids_removed_.empty() || (app_ran && now - names_checked_ns_ >= 100000000)) {
      names_checked_ns_ = now;
      refresh_sampled_names(now);
    }
  }
  samples_taken_.store(sampler_->taken(), std::memory_order_relaxed);
  sample_handler_ns_.store(sampler_->handler_ns(), std::memory_order_relaxed);
}

bool Drainer::arm_for_idle_sleep(uint64_t* sleep_ns) {
  // An idle sleep past the sampled cap only with the alarm armed, so a
  // thread that starts to run wakes the drainer for its scan. A sleep of the
  // configured interval (RINGPROF_DRAIN_MS, whatever its length) is no idle
  // sleep and never arms it.
  const uint64_t cap = std::max<uint64_t>(uint64_t{config_.drain_interval_ms} * 1000000ull, kIdleSleepSampledMaxNs);
  if (!sampler_ || !sampler_->on() || *sleep_ns <= cap) return false;
  if (sampler_->arm_cpu_alarm(kScanAfterAppCpuNs)) return true;
  *sleep_ns = cap;
  return false;
}

void Drainer::disarm_after_sleep() noexcept {
  if (sampler_) sampler_->disarm_cpu_alarm();
}

std::optional<uint64_t> Drainer::application_cpu_ns() const {
  // The process's CPU less the drainer's (now) and the writer's (as of its
  // last wait, at most a second old: a little of its time may count as the
  // application's, which at worst scans once more).
  const uint64_t ours = internal::thread_cpu_ns() + writer_->counters().cpu_ns.load(std::memory_order_relaxed) +
                        start_cpu_ns_.load(std::memory_order_relaxed);
  const uint64_t all = internal::process_cpu_ns();
  if (all == 0) return std::nullopt;
  return all > ours ? all - ours : 0;
}

void Drainer::refresh_sampled_names(uint64_t now_ns) {
  // A thread without a ring names itself only through the kernel
  // (pthread_setname_np): look again now and then.
  for (auto& [index, t] : threads_) {
    if (t.ring || !t.sampled) continue;
    const bool young = now_ns - t.first_seen_ns < kYoungThreadNs;
    if (!young && now_ns - t.name_checked_ns < kOldNameRefreshNs) continue;
    t.name_checked_ns = now_ns;
    std::string name = sampler::thread_comm(t.info.tid);
    if (!name.empty() && name != t.info.name) {
      t.info.name = std::move(name);
      ++t.info.name_version;
    }
  }
}

void Drainer::want_modules() {
  // Stacks are named by module; a process that never gives one (idle, or
  // sampled never) never reads the loaded objects' headers.
  if (modules_wanted_) return;
  modules_wanted_ = true;
  modules_.refresh();
}

void Drainer::on_sample(uint32_t tid, uint64_t ts_ns, std::span<const uint64_t> words) {
  want_modules();
  ThreadState& t = thread_for_tid(tid);
  interpreter_names_.convert(words, locations_, &sample_frames_, kMaxSampleFrames);
  const uint32_t id = stacks_.intern(sample_frames_);
  if (id == 0) {  // the stack table is full
    ++t.info.samples_lost;
    samples_lost_.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  const size_t cap = std::max<uint32_t>(config_.batch_events, 1024);
  if (events_.size() >= cap) emit_batch(wait_for_writer_);  // a full writer: this batch grows past cap
  if (events_.empty()) batch_started_mono_ = internal::monotonic_ns();
  if (runs_.empty() || runs_.back().thread_index != t.info.index)
    runs_.push_back(EventRun{t.info.index, static_cast<uint32_t>(events_.size()), 0});
  Event e{};
  e.ts = ts_ns;
  e.kind = EventKind::Sample;
  e.loc = id;
  events_.push_back(e);
  ++runs_.back().count;
  ++samples_in_batch_;
  t.in_batch = true;
  batch_first_ns_ = std::min(batch_first_ns_, ts_ns);
  batch_last_ns_ = std::max(batch_last_ns_, ts_ns);
}

uint32_t Drainer::intern_zone_stack(const Ring& r, uint64_t at, uint16_t words) {
  const size_t n = std::min<size_t>(words, kMaxSampleFrames);
  zone_stack_words_.resize(n);
  read_words_record(r, at, zone_stack_words_.data(), n);
  return intern_record_words();
}

uint32_t Drainer::intern_heap_stack(const Ring& r, uint64_t at, uint32_t words, uint64_t* interval) {
  // The stack's words (as a sample's), then the sampling interval.
  const size_t n = std::min<size_t>(words, 2 * kMaxSampleFrames + 1);
  zone_stack_words_.resize(n);
  read_words_record(r, at, zone_stack_words_.data(), n);
  *interval = n ? zone_stack_words_.back() : 0;
  if (n) zone_stack_words_.pop_back();
  return intern_record_words();
}

uint32_t Drainer::intern_record_words() {
  want_modules();
  const size_t n = zone_stack_words_.size();
  uint64_t h = n;
  for (uint64_t w : zone_stack_words_) h = (h ^ w) * 0x100000001b3ull;
  ZoneStackCacheEntry& slot = zone_stack_cache_[(h ^ (h >> 29)) % kZoneStackCache];
  if (slot.id != 0 && slot.words == zone_stack_words_) return slot.id;
  interpreter_names_.convert(zone_stack_words_, locations_, &sample_frames_, kMaxSampleFrames);
  const uint32_t id = stacks_.intern(sample_frames_);  // 0, full: the table warned once
  if (id != 0) {
    slot.words = zone_stack_words_;
    slot.id = id;
  }
  return id;
}

void Drainer::on_lost(uint32_t tid, uint64_t n) {
  thread_for_tid(tid).info.samples_lost += n;
  samples_lost_.fetch_add(n, std::memory_order_relaxed);
}

}  // namespace ringprof
