#include "sampler/sampler.h"

#include <errno.h>
#include <string.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <unordered_set>

#include "sampler/cpu_alarm.h"
#include "sampler/perf_thread_event.h"
#include "sampler/thread_list.h"
#include "sampler/signal_thread_sampler.h"

namespace ringprof::sampler {

namespace {

constexpr uint64_t kScanIntervalNs = 100000000;  // /proc/self/task every 100 ms

// One line each per process, never more.
std::atomic<bool> g_warned_mechanism{false};
std::atomic<bool> g_warned_thread{false};

std::string paranoid_level() {
  std::string v;
  if (FILE* f = std::fopen("/proc/sys/kernel/perf_event_paranoid", "re")) {
    int x;
    if (std::fscanf(f, "%d", &x) == 1) v = std::to_string(x);
    std::fclose(f);
  }
  return v;
}

}  // namespace

std::string errno_name(int err) {
  if (const char* n = strerrorname_np(err)) return n;
  return "errno " + std::to_string(err);
}

Sampler::Sampler(uint32_t hz, SamplerChoice choice) : hz_(hz), self_tid_(current_tid()) {
  state_.version = 1;
  if (hz == 0) {
    go_off("RINGPROF_SAMPLE_HZ=0", false);
    return;
  }
  std::string perf_refusal;
  std::string why;
  if (choice == SamplerChoice::Auto || choice == SamplerChoice::PerfSignal) {
    signo_ = ensure_sample_signal(&why);
    const int err = signo_ ? probe_perf_clock(hz, signo_) : 0;
    if (signo_ && err == 0) {
      reader_mode_ = StackReader::probe_mode();
      mechanism_ = Mechanism::PerfSignal;
      state_.mechanism = "perf_signal";
      state_.detail = choice == SamplerChoice::PerfSignal
                          ? "forced by RINGPROF_SAMPLER=perf_signal"
                          : "perf_event_open: task clock signalling the thread; unwound in-process";
      state_.hz = hz;
      unwind_.refresh();
      return;
    }
    perf_refusal = signo_ ? "perf_event_open refused: " + errno_name(err) : why;
    const std::string level = paranoid_level();
    if (signo_ && !level.empty()) perf_refusal += " (perf_event_paranoid=" + level + ")";
    if (choice == SamplerChoice::PerfSignal) {
      go_off(perf_refusal + "; RINGPROF_SAMPLER=perf_signal allows no fallback, sampling is off", true);
      return;
    }
    if (!signo_) {
      // Without a signal of our own the kernel's call chains still work.
      if (probe_perf_event(hz) == 0) {
        mechanism_ = Mechanism::Perf;
        state_.mechanism = "perf_event";
        state_.detail = why + "; using perf_event's kernel call chains (frame pointers only, no Python frames)";
        state_.hz = hz;
        if (!g_warned_mechanism.exchange(true)) std::fprintf(stderr, "ringprof: %s\n", state_.detail.c_str());
        return;
      }
      go_off(why + "; sampling is off", true);
      return;
    }
  }
  if (choice == SamplerChoice::Perf) {
    const int err = probe_perf_event(hz);
    if (err == 0) {
      mechanism_ = Mechanism::Perf;
      state_.mechanism = "perf_event";
      state_.detail = "forced by RINGPROF_SAMPLER=perf: kernel call chains (frame pointers only)";
      state_.hz = hz;
      return;
    }
    perf_refusal = "perf_event_open refused: " + errno_name(err);
    const std::string level = paranoid_level();
    if (!level.empty()) perf_refusal += " (perf_event_paranoid=" + level + ")";
    go_off(perf_refusal + "; RINGPROF_SAMPLER=perf allows no fallback, sampling is off", true);
    return;
  }
  if (!signo_) signo_ = ensure_sample_signal(&why);
  if (!signo_) {
    go_off((perf_refusal.empty() ? std::string() : perf_refusal + ", and ") + why + "; sampling is off", true);
    return;
  }
  reader_mode_ = StackReader::probe_mode();
  mechanism_ = Mechanism::Timer;
  state_.mechanism = "timer_signal";
  state_.hz = hz;
  unwind_.refresh();
  if (choice == SamplerChoice::Timer) {
    state_.detail = "forced by RINGPROF_SAMPLER=timer";
  } else {
    state_.detail = perf_refusal + "; using the timer-signal fallback";
    if (!g_warned_mechanism.exchange(true)) std::fprintf(stderr, "ringprof: %s\n", state_.detail.c_str());
  }
}

Sampler::~Sampler() {
  // Without a visitor the last samples are simply not delivered.
  struct Discard : SampleVisitor {
    void on_sample(uint32_t, uint64_t, std::span<const uint64_t>) override {}
    void on_lost(uint32_t, uint64_t) override {}
  } discard;
  stop(discard);
}

void Sampler::go_off(const std::string& why, bool warn) {
  mechanism_ = Mechanism::Off;
  state_.mechanism = "off";
  state_.detail = why;
  state_.hz = 0;
  if (warn && !g_warned_mechanism.exchange(true)) std::fprintf(stderr, "ringprof: warning: %s\n", why.c_str());
}

void Sampler::warn_thread_failure(uint32_t tid, int err) {
  if (!g_warned_thread.exchange(true))
    std::fprintf(stderr, "ringprof: warning: cannot sample thread %u (%s); such threads are left out\n", tid,
                 errno_name(err).c_str());
}

bool Sampler::watch(uint32_t tid) {
  if (mechanism_ == Mechanism::Off || stopped_ || tid == self_tid_ || tid == ignored_tid_ || tid == 0) return false;
  if (perf_.count(tid) || timers_.count(tid) || failed_.count(tid)) return false;
  int err = 0;
  if (mechanism_ == Mechanism::Perf) {
    auto e = PerfThreadEvent::open(tid, hz_, &err);
    if (e) {
      if (paused_) e->set_hz(0);
      perf_.emplace(tid, std::move(e));
      return true;
    }
  } else {
    const auto clock =
        mechanism_ == Mechanism::PerfSignal ? SignalThreadSampler::Clock::Perf : SignalThreadSampler::Clock::Timer;
    auto t = SignalThreadSampler::open(tid, hz_, signo_, clock, reader_mode_, &err);
    if (t) {
      if (paused_) t->set_hz(0);
      timers_.emplace(tid, std::move(t));
      return true;
    }
  }
  failed_.insert(tid);
  if (err != ESRCH && err != EINVAL) warn_thread_failure(tid, err);  // ESRCH/EINVAL: the thread just exited
  return false;
}

void Sampler::set_hz(uint32_t hz) {
  if (mechanism_ == Mechanism::Off || stopped_) return;
  if (hz == 0 ? paused_ : (!paused_ && hz == hz_)) return;
  // A thread whose rate cannot be changed keeps its old one (its thread is
  // probably exiting); the next upkeep retires it.
  for (auto& [tid, e] : perf_) e->set_hz(hz);
  for (auto& [tid, t] : timers_) t->set_hz(hz);
  paused_ = hz == 0;
  if (hz != 0) hz_ = hz;
  state_.hz = hz;
  ++state_.version;
}

void Sampler::close_thread(uint32_t tid, SampleVisitor& v) {
  if (auto it = perf_.find(tid); it != perf_.end()) {
    taken_perf_ += it->second->read(v, scratch_);
    perf_.erase(it);
  }
  if (auto it = timers_.find(tid); it != timers_.end()) {
    it->second->disarm();
    it->second->read(v);
    taken_closed_ += it->second->taken();
    handler_ns_closed_ += it->second->handler_ns();
    timers_.erase(it);
  }
}

bool Sampler::upkeep(uint64_t now_ns, bool force, bool scan_threads, SampleVisitor& v, std::vector<uint32_t>* added,
                     std::vector<uint32_t>* removed) {
  if (mechanism_ == Mechanism::Off || stopped_) return false;
  // Two clocks: the checks below every 100 ms whatever happens; the listing
  // every 100 ms that it is wanted, so one wanted after a quiet stretch runs
  // at once.
  const bool check = force || now_ns >= next_check_ns_;
  const bool scan = scan_threads && (force || now_ns >= next_scan_ns_);
  if (!check && !scan) return false;
  if (check) next_check_ns_ = now_ns + kScanIntervalNs;
  if (mechanism_ != Mechanism::Perf) unwind_.refresh();
  if (mechanism_ != Mechanism::Perf && !sample_signal_intact(signo_)) {
    // The application took the signal over: our timers must stop at once.
    stop(v);
    go_off("the application installed its own handler for signal " + std::to_string(signo_) +
               ", used by the signal sampler; sampling stopped",
           true);
    ++state_.version;
    return false;
  }
  if (!scan) return false;
  next_scan_ns_ = now_ns + kScanIntervalNs;
  const std::vector<uint32_t> tids = list_threads();
  if (tids.empty()) return true;  // no /proc: keep what we have
  const std::unordered_set<uint32_t> live(tids.begin(), tids.end());
  std::vector<uint32_t> gone;
  for (const auto& [tid, e] : perf_)
    if (!live.count(tid)) gone.push_back(tid);
  for (const auto& [tid, t] : timers_)
    if (!live.count(tid)) gone.push_back(tid);
  for (uint32_t tid : gone) {
    close_thread(tid, v);
    if (removed) removed->push_back(tid);
  }
  for (auto it = failed_.begin(); it != failed_.end();) it = live.count(*it) ? std::next(it) : failed_.erase(it);
  for (uint32_t tid : tids)
    if (watch(tid) && added) added->push_back(tid);
  return true;
}

void Sampler::collect(SampleVisitor& v) {
  for (auto& [tid, e] : perf_) taken_perf_ += e->read(v, scratch_);
  for (auto& [tid, t] : timers_) t->read(v);
}

bool Sampler::arm_cpu_alarm(uint64_t cpu_ns) {
  // A signal the application took over must not be unblocked here: its
  // handler would run on ringprof's thread (the next upkeep stops sampling).
  if (!unwinds_in_process() || stopped_ || alarm_failed_ || !sample_signal_intact(signo_)) return false;
  if (!alarm_) alarm_ = CpuAlarm::create(signo_);
  if (alarm_ && alarm_->arm(cpu_ns)) return true;
  alarm_.reset();
  alarm_failed_ = true;
  return false;
}

void Sampler::disarm_cpu_alarm() noexcept {
  if (alarm_) alarm_->disarm();
}

void Sampler::stop(SampleVisitor& v) {
  stopped_ = true;
  if (alarm_) alarm_->disarm();
  alarm_.reset();
  // Disarm every timer first, so the last reads see everything taken.
  for (auto& [tid, t] : timers_) t->disarm();
  std::vector<uint32_t> tids;
  for (const auto& [tid, e] : perf_) tids.push_back(tid);
  for (const auto& [tid, t] : timers_) tids.push_back(tid);
  for (uint32_t tid : tids) close_thread(tid, v);
}

uint64_t Sampler::handler_ns() const noexcept {
  uint64_t n = handler_ns_closed_;
  for (const auto& [tid, t] : timers_) n += t->handler_ns();
  return n;
}

uint64_t Sampler::taken() const noexcept {
  uint64_t n = taken_closed_ + taken_perf_;
  for (const auto& [tid, t] : timers_) n += t->taken();
  return n;
}

}  // namespace ringprof::sampler
