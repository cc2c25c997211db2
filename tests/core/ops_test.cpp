// Detail levels, schedules, the duty cycle and on-demand windows, in process
// (a capturing sink, no files): which steps are recorded in detail, which
// marks delimit them, what subscribers and callbacks see.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include "support/capture_sink.h"
#include "operation/detail_level.h"
#include "ringprof/ringprof.h"
#include "ringprof/tools/time_range.h"

using namespace ringprof;
using ringprof::test::CaptureSink;

namespace {

Config quiet_config() {
  Config c;
  c.drain_interval_ms = 2;
  c.flush_interval_ms = 20;
  c.ops.crash_flush = false;
  c.ops.signal_flush = false;
  return c;
}

// What the captured events say about steps: which were detailed (a
// detail_work zone inside), and which Step events fell between each window's
// begin and end marks.
struct StepView {
  std::set<uint64_t> detailed;
  std::map<uint64_t, std::vector<uint64_t>> windows;  // id → steps, in order
  std::vector<uint64_t> warmups;                      // window ids with a warmup mark
  std::vector<std::string> marks;
};

StepView view_steps(const CaptureSink& sink) {
  StepView v;
  std::lock_guard<std::mutex> lock(sink.mutex_);
  uint64_t current = UINT64_MAX;
  std::optional<uint64_t> open;
  for (const auto& c : sink.events) {
    const Event& e = c.event;
    if (e.kind == EventKind::Step) {
      current = e.p1;
      if (open) v.windows[*open].push_back(current);
    } else if (e.kind == EventKind::ZoneBegin && sink.location_name(e.loc) == "detail_work") {
      v.detailed.insert(current);
    } else if (e.kind == EventKind::Mark) {
      const std::string name = sink.location_name(e.loc);
      v.marks.push_back(name + " " + std::to_string(e.p1));
      if (name == kMarkWindowBegin) {
        open = e.p1;
        v.windows[e.p1];
      } else if (name == kMarkWindowEnd) {
        open.reset();
      } else if (name == kMarkWindowWarmup) {
        v.warmups.push_back(e.p1);
      }
    }
  }
  return v;
}

void run_steps(uint64_t n) {
  for (uint64_t i = 0; i < n; ++i) {
    step(i);
    RINGPROF_ZONE("step_work");
    RINGPROF_ZONE_DETAIL("detail_work");
  }
}

// torch.profiler.schedule(), transcribed independently of the library's copy.
std::string torch_action(uint64_t step, uint32_t skip_first, uint32_t wait, uint32_t warmup, uint32_t active,
                         uint32_t repeat) {
  if (step < skip_first) return "NONE";
  step -= skip_first;
  const uint64_t num_steps = uint64_t{wait} + warmup + active;
  if (repeat > 0 && static_cast<double>(step) / static_cast<double>(num_steps) >= repeat) return "NONE";
  const uint64_t mod_step = step % num_steps;
  if (mod_step < wait) return "NONE";
  if (mod_step < wait + warmup) return "WARMUP";
  return mod_step < num_steps - 1 ? "RECORD" : "RECORD_AND_SAVE";
}

struct ScheduleCase {
  Schedule s;
  uint64_t steps;
};

class ScheduleSteps : public ::testing::TestWithParam<ScheduleCase> {};

TEST_P(ScheduleSteps, ExactlyTheScheduledStepsAreDetailed) {
  const ScheduleCase& c = GetParam();
  // Expected, from torch's arithmetic.
  std::set<uint64_t> detailed, active;
  std::vector<std::vector<uint64_t>> windows;
  size_t warmups = 0;
  bool in_window = false;
  std::string previous = "NONE";
  for (uint64_t k = 0; k < c.steps; ++k) {
    const std::string a = torch_action(k, c.s.skip_first, c.s.wait, c.s.warmup, c.s.active, c.s.repeat);
    if (a != "NONE") detailed.insert(k);
    if (a == "WARMUP" && previous != "WARMUP") ++warmups;
    previous = a;
    if (a == "RECORD" || a == "RECORD_AND_SAVE") {
      active.insert(k);
      if (!in_window) windows.emplace_back();
      windows.back().push_back(k);
      in_window = a == "RECORD";
    } else {
      in_window = false;
    }
    EXPECT_EQ(schedule_action(c.s, k) == ScheduleAction::None, a == "NONE") << k;
  }

  auto sink = std::make_shared<CaptureSink>();
  Config config = quiet_config();
  config.ops.schedule = c.s;
  std::mutex m;
  std::vector<uint64_t> completed;
  const int cb = on_window_complete([&](uint64_t id) {
    std::lock_guard<std::mutex> lock(m);
    completed.push_back(id);
  });
  ASSERT_TRUE(start(config, sink));
  run_steps(c.steps);
  stop();
  remove_window_callback(cb);
  set_schedule(Schedule{});

  const StepView v = view_steps(*sink);
  EXPECT_EQ(v.detailed, detailed);
  std::vector<std::vector<uint64_t>> got;
  for (const auto& [id, steps] : v.windows) got.push_back(steps);
  EXPECT_EQ(got, windows);
  EXPECT_EQ(completed.size(), windows.size()) << "one callback per window, after its events were written";
  EXPECT_EQ(v.warmups.size(), warmups);
}

INSTANTIATE_TEST_SUITE_P(
    Torch, ScheduleSteps,
    ::testing::Values(ScheduleCase{{2, 1, 1, 2, 2}, 14},   // skip 2, two cycles of wait/warmup/2 active
                      ScheduleCase{{0, 0, 0, 1, 0}, 6},    // every step its own window
                      ScheduleCase{{1, 1, 0, 2, 1}, 10},   // one cycle, no warmup
                      ScheduleCase{{0, 2, 1, 1, 0}, 11},   // forever: wait 2, warmup 1, active 1
                      ScheduleCase{{10, 5, 1, 3, 2}, 40},  // the example
                      ScheduleCase{{0, 0, 2, 3, 0}, 12}));  // no wait: windows back to back

TEST(Schedule, HandWorkedExample) {
  // skip_first=2, wait=1, warmup=1, active=2, repeat=2 over 12 steps.
  const Schedule s{2, 1, 1, 2, 2};
  const ScheduleAction N = ScheduleAction::None, W = ScheduleAction::Warmup, R = ScheduleAction::Record,
                       S = ScheduleAction::RecordAndSave;
  const ScheduleAction expected[] = {N, N, N, W, R, S, N, W, R, S, N, N};
  for (uint64_t k = 0; k < 12; ++k) EXPECT_EQ(schedule_action(s, k), expected[k]) << k;
}

TEST(Schedule, Parsing) {
  Schedule s;
  std::string why;
  ASSERT_TRUE(parse_schedule("skip_first=10,wait=5,warmup=1,active=3,repeat=2", &s, &why)) << why;
  EXPECT_EQ(s.skip_first, 10u);
  EXPECT_EQ(s.wait, 5u);
  EXPECT_EQ(s.warmup, 1u);
  EXPECT_EQ(s.active, 3u);
  EXPECT_EQ(s.repeat, 2u);
  EXPECT_FALSE(parse_schedule("wait=5", &s, &why));          // active missing
  EXPECT_FALSE(parse_schedule("active=x", &s, &why));
  EXPECT_FALSE(parse_schedule("active=2,bogus=1", &s, &why));
  DutyCycle d;
  ASSERT_TRUE(parse_duty_cycle("steps=20,every=10m", &d, &why)) << why;
  EXPECT_EQ(d.steps, 20u);
  EXPECT_EQ(d.every_ns, 600'000'000'000ull);
  EXPECT_FALSE(parse_duty_cycle("steps=20", &d, &why));
  EXPECT_FALSE(parse_duty_cycle("steps=0,every=1s", &d, &why));
  Level m;
  EXPECT_TRUE(parse_mode("always_on", &m));
  EXPECT_EQ(m, Level::AlwaysOn);
  EXPECT_TRUE(parse_mode("detailed", &m));
  EXPECT_TRUE(parse_mode("off", &m));
  EXPECT_FALSE(parse_mode("loud", &m));
}

TEST(Levels, OffPausesAndDetailedAddsDetailZones) {
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));
  EXPECT_EQ(mode(), Level::AlwaysOn);
  { RINGPROF_ZONE_DETAIL("detail_work"); }   // not recorded
  RINGPROF_INSTANT("on-1");
  set_mode(Level::Off);
  EXPECT_EQ(mode(), Level::Off);
  EXPECT_FALSE(is_recording());
  RINGPROF_INSTANT("while-off");             // not recorded
  set_mode(Level::Detailed);
  EXPECT_TRUE(detailed());
  { RINGPROF_ZONE_DETAIL("detail_work"); }   // recorded
  set_mode(Level::AlwaysOn);
  RINGPROF_INSTANT("on-2");
  stop();
  EXPECT_EQ(mode(), Level::Off) << "not recording";
  std::vector<std::string> seen;
  for (const auto& c : sink->events) {
    std::string n = sink->location_name(c.event.loc);
    if (c.event.kind == EventKind::Mark) n += "=" + std::to_string(c.event.p1);
    seen.push_back(n);
  }
  const std::vector<std::string> expected = {"on-1", "ringprof.mode=0", "ringprof.mode=2", "detail_work", "",
                                             "ringprof.mode=1", "on-2"};
  EXPECT_EQ(seen, expected);
}

TEST(Levels, StartingOffRecordsNothingUntilAWindowOpens) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ops.mode = Level::Off;
  ASSERT_TRUE(start(c, sink));
  RINGPROF_INSTANT("before");          // off: not recorded
  const uint64_t id = request_window(2, 0);
  EXPECT_NE(id, 0u);
  run_steps(4);                        // the window opens at step 0 and holds steps 0 and 1
  RINGPROF_INSTANT("after");           // off again: not recorded
  stop();
  const StepView v = view_steps(*sink);
  ASSERT_EQ(v.windows.count(id), 1u);
  EXPECT_EQ(v.windows.at(id), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(v.detailed, (std::set<uint64_t>{0, 1}));
  for (const auto& e : sink->events) {
    EXPECT_NE(sink->location_name(e.event.loc), "before");
    EXPECT_NE(sink->location_name(e.event.loc), "after");
  }
}

// A request made on one thread while another steps without pause: every
// window holds exactly the steps asked for, counted in timestamp order across
// both threads' events. (Opened by the requesting thread, a step() racing the
// request fell inside the window by time yet missed its countdown: N + 1.)
TEST(Trigger, ARequestRacingStepsHoldsExactlyItsSteps) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 16u << 20;  // no step lost to a full ring: the count must be exact
  ASSERT_TRUE(start(c, sink));
  std::mutex m;
  std::condition_variable cv;
  std::set<uint64_t> completed;
  const int cb = on_window_complete([&](uint64_t id) {
    std::lock_guard<std::mutex> lock(m);
    completed.insert(id);
    cv.notify_all();
  });
  std::atomic<bool> done{false};
  std::thread stepper([&] {
    for (uint64_t i = 0; !done.load(std::memory_order_relaxed); ++i) {
      step(i);
      // Steps of about a microsecond: short enough that requests land in
      // the middle of step() often, slow enough for the drainer to keep up.
      const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(1);
      while (std::chrono::steady_clock::now() < until) {
      }
    }
  });
  constexpr int kWindows = 40;
  std::vector<uint64_t> ids;
  for (int w = 0; w < kWindows; ++w) {
    const uint64_t id = request_window(3, 0);
    ASSERT_NE(id, 0u);
    ids.push_back(id);
    std::unique_lock<std::mutex> lock(m);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return completed.count(id) != 0; }))
        << "window " << id << " never completed";
  }
  done = true;
  stepper.join();
  stop();
  remove_window_callback(cb);

  struct Point {
    uint64_t ts;
    int what;  // 0 begin, 1 step, 2 end (equal timestamps keep the order recorded)
    uint64_t value;
  };
  std::vector<Point> points;
  {
    std::lock_guard<std::mutex> lock(sink->mutex_);
    for (const auto& [index, t] : sink->threads) ASSERT_EQ(t.dropped_ring, 0u) << "thread " << index;
    for (const auto& captured : sink->events) {
      const Event& e = captured.event;
      if (e.kind == EventKind::Step) points.push_back({e.ts, 1, e.p1});
      if (e.kind != EventKind::Mark) continue;
      const std::string name = sink->location_name(e.loc);
      if (name == kMarkWindowBegin) points.push_back({e.ts, 0, e.p1});
      if (name == kMarkWindowEnd) points.push_back({e.ts, 2, e.p1});
    }
  }
  std::stable_sort(points.begin(), points.end(), [](const Point& a, const Point& b) { return a.ts < b.ts; });
  std::map<uint64_t, size_t> steps_in;
  std::optional<uint64_t> open;
  for (const Point& p : points) {
    if (p.what == 0) open = p.value, steps_in[p.value];
    if (p.what == 2) open.reset();
    if (p.what == 1 && open) ++steps_in[*open];
  }
  ASSERT_EQ(steps_in.size(), ids.size()) << "every request opened one window";
  for (const uint64_t id : ids) EXPECT_EQ(steps_in[id], 3u) << "window " << id;
}

TEST(Levels, SubscribersHearEveryChangeOnTheDrainerThread) {
  std::mutex m;
  std::vector<Level> heard;
  std::set<std::thread::id> threads;
  const int id = level::subscribe([&](Level md) {
    std::lock_guard<std::mutex> lock(m);
    heard.push_back(md);
    threads.insert(std::this_thread::get_id());
  });
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));
  flush();
  set_mode(Level::Detailed);
  flush();
  set_mode(Level::AlwaysOn);
  flush();
  stop();
  level::unsubscribe(id);
  std::lock_guard<std::mutex> lock(m);
  ASSERT_GE(heard.size(), 3u);
  EXPECT_EQ(heard[0], Level::AlwaysOn) << "the starting level first";
  EXPECT_EQ(heard[1], Level::Detailed);
  EXPECT_EQ(heard[2], Level::AlwaysOn);
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u) << "never on the thread that changed the level";
}

// A level change wakes the drainer: the subscribers (the GPU's detailed
// kinds, the sampler's rate) hear it at once, not a drain interval later.
// With a 1 s interval and an idle drainer, hearing it within 0.5 s fails only
// if the machine stalls this process for half a second, and the level is
// changed twice so one lucky interval expiry cannot pass for a wake.
TEST(Levels, ALevelChangeReachesSubscribersWithoutWaitingForTheDrainInterval) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<Level> heard;
  const int id = on_level_change([&](Level md) {
    std::lock_guard<std::mutex> lock(m);
    heard.push_back(md);
    cv.notify_all();
  });
  Config c = quiet_config();
  c.drain_interval_ms = 1000;
  c.flush_interval_ms = 1000;
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(c, sink));
  auto wait_for = [&](size_t n) {
    std::unique_lock<std::mutex> lock(m);
    const auto t0 = std::chrono::steady_clock::now();
    cv.wait_for(lock, std::chrono::seconds(5), [&] { return heard.size() >= n; });
    return std::chrono::steady_clock::now() - t0;
  };
  wait_for(1);  // the starting level, once the drainer runs
  for (const Level want : {Level::Detailed, Level::AlwaysOn}) {
    const size_t before = [&] {
      std::lock_guard<std::mutex> lock(m);
      return heard.size();
    }();
    set_mode(want);
    const auto waited = wait_for(before + 1);
    std::lock_guard<std::mutex> lock(m);
    ASSERT_EQ(heard.size(), before + 1);
    EXPECT_EQ(heard.back(), want);
    EXPECT_LT(waited, std::chrono::milliseconds(500)) << "the change waited for the drain interval";
  }
  stop();
  remove_level_callback(id);
}

// The parent's subscribers are its drainer's event sources; in a forked
// child they would read perf rings that fork did not copy. The child's
// subscriber list starts empty, so nothing of the parent's is ever called.
TEST(Levels, AForkedChildForgetsTheParentsSubscribers) {
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));  // the drainer subscribes; the fork handler is installed
  flush();
  const pid_t pid = fork();
  if (pid == 0) {
    uint64_t seen = 0;  // "never looked": any subscriber would be called now
    _exit(level::notify_if_changed(&seen) ? 1 : 0);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  stop();
  ASSERT_TRUE(WIFEXITED(status)) << "the child died of signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "a subscriber of the parent's was called in the child";
}

TEST(DutyCycle, OneWindowOfNStepsPerPeriod) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ops.duty_cycle = DutyCycle{3, 3600'000'000'000ull};  // 3 steps, every hour: one window in this test
  ASSERT_TRUE(start(c, sink));
  run_steps(20);
  stop();
  set_duty_cycle(DutyCycle{});
  const StepView v = view_steps(*sink);
  ASSERT_EQ(v.windows.size(), 1u);
  EXPECT_EQ(v.windows.begin()->second, (std::vector<uint64_t>{0, 1, 2}));
  EXPECT_EQ(v.detailed, (std::set<uint64_t>{0, 1, 2}));
}

TEST(DutyCycle, ReopensWhenThePeriodHasPassed) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ops.duty_cycle = DutyCycle{2, 20'000'000ull};  // 2 steps every 20 ms
  ASSERT_TRUE(start(c, sink));
  for (uint64_t i = 0; i < 12; ++i) {
    step(i);
    RINGPROF_ZONE_DETAIL("detail_work");
    // Time is the condition here (the duty cycle is time-driven): a step that
    // wakes late only makes more windows of 2 steps, which the checks allow.
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  stop();
  set_duty_cycle(DutyCycle{});
  const StepView v = view_steps(*sink);
  EXPECT_GE(v.windows.size(), 2u);
  // Every window the duty cycle completed holds its 2 steps. The last window
  // may have opened at the last step (11) and been closed by stop(): it holds
  // that one step.
  for (const auto& [id, steps] : v.windows) {
    const bool cut_by_stop = id == v.windows.rbegin()->first && !steps.empty() && steps.back() == 11;
    if (cut_by_stop)
      EXPECT_LE(steps.size(), 2u) << "window " << id;
    else
      EXPECT_EQ(steps.size(), 2u) << "window " << id;
  }
}

// A window's opening mark comes before anything recorded at the detailed
// level: another thread that sees the raised level records after the mark
// (the marks go first, then the level). Checked for the schedule (with a
// warmup) and the duty cycle with a second thread recording detail zones
// without pause. The race this guards against is timing-dependent; the check
// itself never fails wrongly: the first detail zone cannot predate the first
// opening mark.
void check_detail_zones_follow_opening_marks(const Config& config) {
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(config, sink));
  std::atomic<bool> done{false};
  std::atomic<int> detailed_seen{0};
  std::thread busy([&] {
    while (!done.load(std::memory_order_relaxed)) {
      if (detailed() && detailed_seen.load(std::memory_order_relaxed) < 1000)
        detailed_seen.fetch_add(1, std::memory_order_relaxed);
      RINGPROF_ZONE_DETAIL("busy_detail");
    }
  });
  // 40 steps at least, and on until the busy thread has run inside windows
  // (a loaded machine may not schedule it during the first ones).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (uint64_t i = 0; i < 40 || (detailed_seen.load() < 1000 && std::chrono::steady_clock::now() < deadline); ++i) {
    step(i);
    std::this_thread::sleep_for(std::chrono::microseconds(200));  // pacing between steps, not a wait
  }
  done = true;
  busy.join();
  stop();
  std::lock_guard<std::mutex> lock(sink->mutex_);
  uint64_t first_open = UINT64_MAX, first_detail = UINT64_MAX;
  size_t details = 0;
  for (const auto& c : sink->events) {
    const Event& e = c.event;
    if (e.kind == EventKind::Mark) {
      const std::string name = sink->location_name(e.loc);
      if (name == kMarkWindowBegin || name == kMarkWindowWarmup) first_open = std::min(first_open, e.ts);
    } else if (e.kind == EventKind::ZoneBegin && sink->location_name(e.loc) == "busy_detail") {
      first_detail = std::min(first_detail, e.ts);
      ++details;
    }
  }
  ASSERT_NE(first_open, UINT64_MAX) << "a window opened";
  ASSERT_GT(details, 0u) << "the busy thread recorded inside the windows";
  EXPECT_GE(first_detail, first_open) << "a detail zone predates the first window's opening mark";
}

TEST(WindowOrder, ScheduleMarksPrecedeDetailedEventsOfOtherThreads) {
  Config c = quiet_config();
  c.ops.schedule = Schedule{0, 3, 2, 3, 0};  // skip 0, wait 3, warmup 2, active 3, forever
  check_detail_zones_follow_opening_marks(c);
  set_schedule(Schedule{});
}

TEST(WindowOrder, DutyCycleMarksPrecedeDetailedEventsOfOtherThreads) {
  Config c = quiet_config();
  c.ops.duty_cycle = DutyCycle{3, 2'000'000ull};  // 3 steps every 2 ms
  check_detail_zones_follow_opening_marks(c);
  set_duty_cycle(DutyCycle{});
}

TEST(TimePoint, DurationsWallClockAndToday) {
  auto p = parse_time_point("2.5s");
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->wall);
  EXPECT_EQ(p->ns, 2'500'000'000u);
  p = parse_time_point("2024-05-01T12:00:00Z");
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->wall);
  EXPECT_EQ(p->ns, 1714564800ull * 1000000000ull);
  p = parse_time_point("2024-05-01T14:00:00.250+02:00");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->ns, 1714564800ull * 1000000000ull + 250'000'000ull);
  // HH:MM:SS is today in local time: whatever the zone, it lies within a day of now.
  const uint64_t now = static_cast<uint64_t>(time(nullptr)) * 1000000000ull;
  p = parse_time_point("12:34:56", now);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->wall);
  EXPECT_LT(p->ns > now ? p->ns - now : now - p->ns, 86400ull * 1000000000ull);
  EXPECT_FALSE(parse_time_point("25:00:00"));
  EXPECT_FALSE(parse_time_point("2024-13-01T00:00:00Z"));
  EXPECT_FALSE(parse_time_point("yesterday"));
  // Resolving: wall-clock ends through the realtime offset, --around as a centre and width.
  RangeSpec spec;
  spec.from_wall_ns = 1'000'500;
  spec.to_wall_ns = 1'000'900;
  TimeRange w = resolve_range(spec, 100, 1000, 1'000'000);
  EXPECT_EQ(w.begin_ns, 500u);
  EXPECT_EQ(w.end_ns, 900u);
  RangeSpec around;
  around.around = TimePoint{false, 300};
  around.around_width_ns = 100;
  w = resolve_range(around, 1000, 5000);
  EXPECT_EQ(w.begin_ns, 1250u);
  EXPECT_EQ(w.end_ns, 1350u);
}

}  // namespace
