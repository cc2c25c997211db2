// The operations hooks the recorder and the drainer call (ops_hooks.h).
#include "operation/ops_hooks.h"

#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <mutex>

#include "crash/crash_state.h"
#include "operation/detail_level.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"
#include "operation/level_windows.h"

namespace ringprof {
namespace {

// The Config of the last session started through start(Config) (rolling
// files or null sink), for RINGPROF_FORK=record. Immortal; replaced, never freed
// (a forked child may be reading it).
constinit std::atomic<Config*> g_fork_config{nullptr};
constinit std::atomic<bool (*)(const Config&)> g_fork_restart{nullptr};

}  // namespace

namespace internal {
void remember_start_config(const Config* config, bool (*restart)(const Config&)) noexcept {
  Config* copy = nullptr;
  if (config) {
    try {
      copy = new Config(*config);
    } catch (...) {
      copy = nullptr;
    }
  }
  g_fork_restart.store(restart, std::memory_order_relaxed);
  g_fork_config.store(copy, std::memory_order_release);
}
}  // namespace internal

namespace ops {

uint32_t session_starting(uint32_t session, const Config& config) noexcept {
  if (config.ops.crash_flush) crash::expect_session();
  return level::session_starting(session, config.ops.mode);
}

void session_started(const Config& config) {
  crash::install_handlers(config.ops.crash_flush, config.ops.signal_flush);
  level::session_started();
  windows::session_started(config.ops);
}

void session_stopping() noexcept {
  crash::expect_session(false);
  windows::session_stopping();
  level::session_stopping();
}

void on_step() noexcept { windows::on_step(); }

void after_fork_child() noexcept {
  crash::reset_after_fork();
  level::reset_after_fork();
  windows::reset_after_fork();
}

void fork_child_policy() noexcept {
  const Config* c = g_fork_config.load(std::memory_order_acquire);
  bool (*restart)(const Config&) = g_fork_restart.load(std::memory_order_relaxed);
  if (c == nullptr || restart == nullptr || c->ops.fork != ForkPolicy::Record) return;
  try {
    const Config copy = *c;
    restart(copy);  // files named after this child's pid; start(config) remembers it again
  } catch (...) {
  }
}

void drainer_begin(DrainerOps& ops, Sink& sink, uint32_t session, const ClockCalibration& clock) {
  crash::publish_clock(clock);
  crash::publish_session(&sink, session, static_cast<pid_t>(syscall(SYS_gettid)));
  level::notify_if_changed(&ops.mode_version_seen);
}

void poll_trigger(Sink& sink) {
  TriggerRequest request;
  if (sink.poll_trigger(&request)) {
    const uint64_t id = request_window(request.steps, request.duration_ns);
    sink.acknowledge_trigger(id);
  }
}

bool drainer_level_pending(const DrainerOps& ops) noexcept { return level::version() != ops.mode_version_seen; }

bool drainer_round(DrainerOps& ops, uint64_t now_ns) {
  windows::check_deadlines(now_ns);
  level::notify_if_changed(&ops.mode_version_seen);
  ops.n_completed += windows::take_completed(ops.completed + ops.n_completed, 64 - ops.n_completed);
  if (const int sig = crash::termination_signal()) {
    static std::atomic<bool> marked{false};
    if (!marked.exchange(true)) mark(kMarkSignal, static_cast<uint64_t>(sig));
  }
  return ops.n_completed != 0;
}

void drainer_after_write(DrainerOps& ops) {
  const size_t n = ops.n_completed;
  ops.n_completed = 0;
  for (size_t i = 0; i < n; ++i) windows::run_callbacks(ops.completed[i]);
}

bool drainer_should_stop() noexcept { return crash::termination_signal() != 0; }

void drainer_clock(const ClockCalibration& clock) noexcept { crash::publish_clock(clock); }

void drainer_end(DrainerOps& ops) {
  crash::clear_session();
  ops.n_completed += windows::take_completed(ops.completed + ops.n_completed, 64 - ops.n_completed);
  drainer_after_write(ops);  // windows closed by stop() still get their callbacks
  if (crash::termination_signal() != 0) crash::termination_finish();
}

}  // namespace ops
}  // namespace ringprof
