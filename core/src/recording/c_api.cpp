// The C API: thin wrappers over the C++ API, with the same guarantees.
#include <cstring>

#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"
#include "ringprof/ringprof_c.h"

extern "C" {

// ringprof_start() and ringprof_start_from_env() live beside start(config)
// in sinks/src/session_start.cpp: they pick a sink.

void ringprof_stop(void) { ringprof::stop(); }
void ringprof_flush(void) { ringprof::flush(); }
int ringprof_is_recording(void) { return ringprof::is_recording() ? 1 : 0; }

int ringprof_zone_begin(const ringprof_source_location* loc) { return ringprof::zone_begin(loc) ? 1 : 0; }
int ringprof_zone_begin_name(const char* name, size_t len) {
  return ringprof::zone_begin(std::string_view(name ? name : "", name ? len : 0)) ? 1 : 0;
}
void ringprof_zone_end(void) { ringprof::zone_end(); }
void ringprof_set_rank(int rank, int world_size, int local_rank, const char* job_id) {
  ringprof::set_rank(rank, world_size, local_rank, job_id ? std::string_view(job_id) : std::string_view());
}
void ringprof_zone_arg(const char* static_key, const char* value, size_t len) {
  ringprof::zone_arg(static_key, std::string_view(value ? value : "", value ? len : 0));
}
void ringprof_mark_collective(const char* group) {
  if (group && *group)
    ringprof::mark_collective(group);
  else
    ringprof::mark_collective();  // its default group, "world"
}
void ringprof_instant(const ringprof_source_location* loc) { ringprof::instant(loc); }
void ringprof_instant_name(const char* name, size_t len) {
  ringprof::instant(std::string_view(name ? name : "", name ? len : 0));
}
void ringprof_counter(const char* static_name, double value) { ringprof::counter(static_name, value); }
void ringprof_counter_name(const char* name, size_t len, double value) {
  ringprof::counter(std::string_view(name ? name : "", name ? len : 0), value);
}
void ringprof_flow_begin(uint64_t id, const char* static_name) { ringprof::flow_begin(id, static_name); }
void ringprof_flow_step(uint64_t id) { ringprof::flow_step(id); }
uint16_t ringprof_memory_pool(const char* static_name) { return ringprof::memory_pool(static_name); }
void ringprof_memory_alloc(const void* p, size_t size, uint16_t pool) { ringprof::memory_alloc(p, size, pool); }
void ringprof_memory_free(const void* p, size_t size, uint16_t pool) { ringprof::memory_free(p, size, pool); }
void ringprof_flow_end(uint64_t id) { ringprof::flow_end(id); }
int ringprof_async_begin(uint64_t id, const char* static_name) {
  return ringprof::async_begin(id, static_name ? static_name : "async") ? 1 : 0;
}
void ringprof_async_end(uint64_t id) { ringprof::async_end(id); }
uint64_t ringprof_new_async_id(void) { return ringprof::new_async_id(); }
void ringprof_set_thread_name(const char* name) { ringprof::set_thread_name(name ? name : ""); }
uint64_t ringprof_step(void) { return ringprof::step(); }

void ringprof_set_mode(int mode) {
  if (mode >= 0 && mode <= 2) ringprof::set_mode(static_cast<ringprof::Level>(mode));
}
int ringprof_mode(void) { return static_cast<int>(ringprof::mode()); }
uint64_t ringprof_request_window(uint64_t steps, uint64_t duration_ns) {
  return ringprof::request_window(steps, duration_ns);
}

}  // extern "C"
