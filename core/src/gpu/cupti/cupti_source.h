// The CUPTI activity source: loads libcupti at run time, hands CUPTI buffers
// from a bounded pool, and passes completed buffers to the drainer through a
// lock-free queue.
//
// CUPTI's callbacks are process-wide, so this state is too: one source per
// process, started with each recording session and stopped with it. Who
// touches what:
//   - CUPTI's threads (and any thread that calls cuptiActivityFlushAll) run
//     buffer_requested / buffer_completed: they take buffers from the free
//     queue and put completed ones on the completed queue. Neither blocks.
//   - The drainer thread alone takes completed buffers, converts them and
//     puts them back on the free queue.
// The pool holds at most RINGPROF_CUPTI_BUFFERS buffers of
// RINGPROF_CUPTI_BUFFER_SIZE bytes; when all are out, CUPTI gets no buffer,
// drops records and counts them, and ringprof counts the refusal.
#pragma once

#include <cstdint>
#include <string>

#include "gpu/cupti/cupti_api.h"
#include "gpu/cupti/cupti_records.h"
#include "ringprof/config.h"
#include "ringprof/ops.h"

namespace ringprof::cupti {

// Loads libcupti (unless a fake table is installed), registers the buffer
// and timestamp callbacks and enables the activity kinds of the starting
// level (config.ops.mode; see set_level). On failure prints
// one warning that says what to do, and returns false: GPU tracing is off
// for this session, everything else records normally.
bool start(const Config& config);
// Disables the activity kinds (records still in CUPTI's buffers are handed
// over by the next forced flush).
void stop();
// Follows the detail level (drainer thread, from its level subscription).
// AlwaysOn and Off keep only what kernel timing and launch correlation need
// (kAlwaysOnKinds, DEVICE among them), Detailed also enables kDetailedKinds;
// start() enables the kinds of the session's starting level. A kind this CUPTI refuses is left out. Nothing when
// the source is not running.
void set_level(Level m);
// Which kinds each level adds, in the order they are enabled.
extern const CUpti_ActivityKind kAlwaysOnKinds[6];
extern const CUpti_ActivityKind kDetailedKinds[6];

// CUPTI serves one client: another one (torch.profiler's Kineto, Nsight)
// registers its own buffer callbacks in place of ringprof's. hand_over()
// first takes back every buffer ringprof has in CUPTI (a forced flush), then
// disables ringprof's kinds and its timestamp callback, and prints one
// warning naming `client`; take_back() registers ringprof's callbacks and
// clock again and enables the kinds of the current level. Both return false
// when there was nothing to do (not running, or not handed over).
bool hand_over(const char* client);
bool take_back(const char* client);

// At exit, before CUPTI's own exit handling (start() registers it with
// atexit once CUPTI has initialised, so it runs first): a last forced flush
// into ringprof's queue, then nothing calls CUPTI again (flush, stop,
// set_level, hand_over and take_back leave it alone) while the drainer's last
// round converts what is queued.
void close_at_exit();

// Asks CUPTI to complete every buffer now, even partly filled ones (not
// while handed over: the buffers in CUPTI are then the other client's).
void flush();
// Converts and recycles every completed buffer (drainer thread only).
void drain_completed(Converter& converter);

const Api& api();
uint64_t dropped_records();
uint64_t refused_buffers();

// The one line ringprof prints for a CUPTI error: what it means and what to do.
std::string explain(CUptiResult result, const char* what);

// Tests: use `fake` instead of loading libcupti (null: load it again). Its
// functions are called exactly as libcupti's would be.
void use_api_for_testing(const Api* fake);
// Tests: the callbacks CUPTI would call.
void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records);
void buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t size, size_t valid);
// ringprof's clock as CUPTI gets it: CLOCK_MONOTONIC ns.
uint64_t timestamp();

}  // namespace ringprof::cupti
