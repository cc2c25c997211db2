/* ringprof/ringprof_c.h — the C API of ringprof, for C programs and for other
 * languages' bindings. Same capabilities as the C++ API: start/stop/flush,
 * zones with static or run-time names, instants, counters, flows, thread
 * names and steps. All calls are no-ops while recording is off. */
#ifndef RINGPROF_RINGPROF_C_H
#define RINGPROF_RINGPROF_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A call site. Must have static storage duration (the macros make one), since
 * events refer to it by address until the drainer has read them. */
typedef struct ringprof_source_location {
  const char* name;
  const char* function;
  const char* file;
  uint32_t line;
} ringprof_source_location;

/* Start with the RINGPROF_* environment (docs/configuration.md). Returns 1 when
 * recording started, 0 otherwise (after one warning). */
int ringprof_start_from_env(void);
/* Start with explicit settings; NULL or 0 fields keep their defaults. */
typedef struct ringprof_c_config {
  const char* dir;
  uint64_t max_bytes;
  uint64_t file_bytes;
  uint32_t ring_bytes;
  int zstd_level;
  const char* sink; /* "file" or "null" */
} ringprof_c_config;
int ringprof_start(const ringprof_c_config* config);
void ringprof_stop(void);
void ringprof_flush(void);
int ringprof_is_recording(void);

/* Returns 0 when the zone is not recorded: then do not call ringprof_zone_end. */
int ringprof_zone_begin(const ringprof_source_location* loc);
int ringprof_zone_begin_name(const char* name, size_t len);
void ringprof_zone_end(void);
/* The process's place in a distributed job (-1, NULL: unknown); see ringprof/rank.h. */
void ringprof_set_rank(int rank, int world_size, int local_rank, const char* job_id);
/* An argument of the innermost open zone: static key, value copied (len bytes). */
void ringprof_zone_arg(const char* static_key, const char* value, size_t len);
/* Marks the innermost open zone as a synchronous collective of `group` (NULL
 * or "": "world"); see mark_collective() in ringprof/recording.h. */
void ringprof_mark_collective(const char* group);
void ringprof_instant(const ringprof_source_location* loc);
void ringprof_instant_name(const char* name, size_t len);
void ringprof_counter(const char* static_name, double value);
void ringprof_counter_name(const char* name, size_t len, double value);
void ringprof_flow_begin(uint64_t id, const char* static_name);
void ringprof_flow_step(uint64_t id);
void ringprof_flow_end(uint64_t id);
/* Async spans (ringprof/recording.h): begin on one thread, end on any;
 * ringprof_async_begin returns 0 when nothing was recorded. */
int ringprof_async_begin(uint64_t id, const char* static_name);
void ringprof_async_end(uint64_t id);
uint64_t ringprof_new_async_id(void);
void ringprof_set_thread_name(const char* name);
uint64_t ringprof_step(void);

/* Detail levels (ringprof/ops.h): 0 off, 1 always_on, 2 detailed. */
void ringprof_set_mode(int mode);
int ringprof_mode(void);
/* An on-demand detailed window (what `ringprof trigger` asks for); its id. */
uint64_t ringprof_request_window(uint64_t steps, uint64_t duration_ns);

/* Memory events (ringprof/memory.h), recorded at the detailed level only.
 * A pool's name must have static storage; pool 0 is "heap". `size` 0 in a
 * free: not known (the tools take it from the matching allocation). */
uint16_t ringprof_memory_pool(const char* static_name);
void ringprof_memory_alloc(const void* p, size_t size, uint16_t pool);
void ringprof_memory_free(const void* p, size_t size, uint16_t pool);

#define RINGPROF_C_LOCATION(var, literal_name) \
  static const ringprof_source_location var = {literal_name, __func__, __FILE__, __LINE__}

#ifdef __cplusplus
}
#endif

#endif /* RINGPROF_RINGPROF_C_H */
