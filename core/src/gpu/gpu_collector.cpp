#include "gpu/gpu_collector.h"

#include <algorithm>

#if RINGPROF_HAVE_CUPTI
#include "gpu/cupti/cupti_records.h"
#include "gpu/cupti/cupti_source.h"
#else
namespace ringprof::cupti {
class Converter {};  // never made without CUPTI; complete so the unique_ptr can be destroyed
}  // namespace ringprof::cupti
#endif

namespace ringprof {

GpuCollector::GpuCollector(const Config& config)
    : flush_ns_(uint64_t{config.flush_interval_ms} * 1000000ull),
      max_pending_(std::max<uint32_t>(config.batch_events, 1024)) {
#if RINGPROF_HAVE_CUPTI
  if (config.gpu && cupti::start(config)) {
    converter_ = std::make_unique<cupti::Converter>(records_, cupti::api());
    active_ = true;
  }
#else
  (void)config;
#endif
}

GpuCollector::~GpuCollector() {
#if RINGPROF_HAVE_CUPTI
  if (active_) cupti::stop();
#endif
}

bool GpuCollector::poll(bool force, uint64_t now_ns) {
#if RINGPROF_HAVE_CUPTI
  if (active_) {
    if (force) cupti::flush();
    cupti::drain_completed(*converter_);
    records_.set_source_counts(cupti::dropped_records(), cupti::refused_buffers());
  }
#else
  (void)force;
#endif
  if (records_.pending().empty()) {
    pending_since_ = 0;
    return false;
  }
  if (pending_since_ == 0) pending_since_ = now_ns;
  return records_.pending().size() >= max_pending_ || now_ns - pending_since_ >= flush_ns_;
}

void GpuCollector::set_level(Level m) {
#if RINGPROF_HAVE_CUPTI
  if (active_) cupti::set_level(m);
#else
  (void)m;
#endif
}

void GpuCollector::attach(Batch& b) {
  if (!active_ && records_.pending().empty() && records_.devices().empty()) return;
  b.gpu = records_.pending();
  b.gpu_names = records_.names();
  b.gpu_devices = records_.devices();
  b.gpu_stats = &records_.stats();
  if (records_.first_ns() != ~0ull) {  // records with a time of their own
    b.first_ns = b.first_ns == 0 ? records_.first_ns() : std::min(b.first_ns, records_.first_ns());
    b.last_ns = std::max(b.last_ns, records_.last_ns());
  }
}

void GpuCollector::written() {
  records_.clear_pending();
  pending_since_ = 0;
}

}  // namespace ringprof
