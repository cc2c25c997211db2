// start(config): the one place that joins the core's recorder to the sinks
// ringprof ships, so the core itself never names a file or a codec. Also
// RINGPROF_AUTOSTART, which needs both.
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

void append_stats(const RecorderStats& s) {
  FILE* f = std::fopen(g_stats_path, "a");
  if (!f) return;  // the program must not notice
  std::fprintf(f,
               "{\"pid\":%d,\"events_written\":%llu,\"dropped_ring\":%llu,\"dropped_io\":%llu,"
               "\"samples_written\":%llu,\"samples_lost\":%llu,\"drainer_cpu_ns\":%llu,\"writer_cpu_ns\":%llu}\n",
               static_cast<int>(getpid()), static_cast<unsigned long long>(s.events_written),
               static_cast<unsigned long long>(s.dropped_ring), static_cast<unsigned long long>(s.dropped_io),
               static_cast<unsigned long long>(s.samples_written), static_cast<unsigned long long>(s.samples_lost),
               static_cast<unsigned long long>(s.drainer_cpu_ns), static_cast<unsigned long long>(s.writer_cpu_ns));
  std::fclose(f);
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
    if (v && (std::strcmp(v, "1") == 0 || std::strcmp(v, "true") == 0)) start();
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
