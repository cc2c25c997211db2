// start(config): the one place that joins the core's recorder to the sinks
// ringprof ships, so the core itself never names a file or a codec. Also
// RINGPROF_AUTOSTART, which needs both.
#include <errno.h>
#include <fcntl.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

#include "ringprof/internal/session_hooks.h"
#include "ringprof/ringprof.h"
#include "ringprof/ringprof_c.h"
#include "ringprof/sinks.h"

namespace ringprof {

namespace {
// RINGPROF_STATS_FILE=PATH: every stop() appends the session's stats to PATH
// as one JSON line, so a tool that ran the program (`ringprof overhead`)
// learns what ringprof cost it after it exited.
char g_stats_path[4096];

// Says once per process why the stats could not be written; the program
// carries on either way.
void warn_stats(const char* why) {
  static std::atomic<bool> warned{false};
  if (warned.exchange(true)) return;
  std::fprintf(stderr, "ringprof: warning: RINGPROF_STATS_FILE=%s: %s; session stats are not written there\n",
               g_stats_path, why);
}

// Never blocks the program (stop() runs this at exit): O_NONBLOCK, so a FIFO
// without a reader fails at once and a full pipe fails the write instead of
// waiting; O_NOFOLLOW, so a link planted at the name is not written through.
void append_stats(const RecorderStats& s) {
  const int fd = ::open(g_stats_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0666);
  if (fd < 0) {
    warn_stats(std::strerror(errno));
    return;
  }
  char line[512];
  const int n = std::snprintf(
      line, sizeof line,
      "{\"pid\":%d,\"events_written\":%llu,\"dropped_ring\":%llu,\"dropped_io\":%llu,"
      "\"samples_written\":%llu,\"samples_lost\":%llu,\"drainer_cpu_ns\":%llu,\"writer_cpu_ns\":%llu}\n",
      static_cast<int>(getpid()), static_cast<unsigned long long>(s.events_written),
      static_cast<unsigned long long>(s.dropped_ring), static_cast<unsigned long long>(s.dropped_io),
      static_cast<unsigned long long>(s.samples_written), static_cast<unsigned long long>(s.samples_lost),
      static_cast<unsigned long long>(s.drainer_cpu_ns), static_cast<unsigned long long>(s.writer_cpu_ns));
  // One write(2) of the whole line: appends from several processes stay whole.
  const ssize_t written = ::write(fd, line, static_cast<size_t>(n));
  if (written < 0)
    warn_stats(std::strerror(errno));
  else if (written != n)
    warn_stats("short write");
  ::close(fd);
}

void observe_stops_if_asked() {
  const char* path = std::getenv("RINGPROF_STATS_FILE");
  if (!path || !*path || std::strlen(path) >= sizeof g_stats_path) return;
  std::memcpy(g_stats_path, path, std::strlen(path) + 1);
  internal::set_stop_observer(&append_stats);
}
}  // namespace

bool start(const Config& config) {
  observe_stops_if_asked();
  std::shared_ptr<Sink> sink;
  try {
    sink = config.sink == "null" ? make_null_sink(config.zstd_level) : make_rolling_file_sink(config);
  } catch (...) {
    std::fprintf(stderr, "ringprof: warning: could not create the %s sink; recording stays off\n",
                 config.sink.c_str());
    return false;
  }
  if (!start(config, std::move(sink))) return false;
  bool (*restart)(const Config&) = &start;
  internal::remember_start_config(&config, restart);  // RINGPROF_FORK=record recreates this sink in a child
  return true;
}

bool start() { return start(config_from_env()); }

namespace {
// RINGPROF_AUTOSTART=1: record from the moment the library loads, so a
// program is profiled by its environment alone; exit() flushes.
struct Autostart {
  Autostart() {
    const char* v = std::getenv("RINGPROF_AUTOSTART");
    if (!v || !*v) return;
    bool on = false;
    if (!internal::parse_switch(v, &on)) {
      std::fprintf(stderr, "ringprof: warning: ignoring RINGPROF_AUTOSTART=%s (expected 1 or 0); not starting\n", v);
      return;
    }
    if (on) start();
  }
};
Autostart g_autostart;
}  // namespace

}  // namespace ringprof

extern "C" {

int ringprof_start_from_env(void) { return ringprof::start() ? 1 : 0; }

int ringprof_start(const ringprof_c_config* c) {
  ringprof::Config config = ringprof::config_from_env();
  if (c) {
    if (c->dir) config.dir = c->dir;
    if (c->max_bytes) config.max_bytes = c->max_bytes;
    if (c->file_bytes) config.file_bytes = c->file_bytes;
    if (c->ring_bytes) config.ring_bytes = c->ring_bytes;
    if (c->zstd_level) config.zstd_level = c->zstd_level;
    if (c->sink) config.sink = c->sink;
  }
  return ringprof::start(config) ? 1 : 0;
}

}  // extern "C"
