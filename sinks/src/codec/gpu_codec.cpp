// gpu_codec.cpp — GPU records as columns (schemas/gpu.fbs).
//
// Which column holds a value for which kind is decided by the predicates
// below, shared by the encoder and the decoder: a record only pays for what
// its kind has (an API call has no stream, a kernel no byte count). Start
// times are zigzag deltas between consecutive records (CUPTI hands records
// over roughly in time order, so the deltas are small), correlation ids the
// same (they grow by one per API call).
#include "codec/gpu_codec.h"

#include <algorithm>
#include <unordered_map>

#include "codec/varint.h"

namespace ringprof::gpu_codec {
namespace {

// A drainer batch holds a few buffers' worth of records; refusing absurd
// counts keeps a forged segment from making a reader allocate gigabytes.
constexpr uint64_t kMaxRecords = 1u << 24;
constexpr uint64_t kMaxDevices = 1024;

bool has_name(GpuKind k) {
  return k == GpuKind::Kernel || k == GpuKind::RuntimeApi || k == GpuKind::DriverApi || k == GpuKind::Overhead ||
         k == GpuKind::Marker;
}
bool has_place(GpuKind k) {  // device, context, stream
  return k == GpuKind::Kernel || k == GpuKind::Memcpy || k == GpuKind::Memset || k == GpuKind::Sync ||
         k == GpuKind::Memory;
}
bool has_correlation(GpuKind k) { return k != GpuKind::Marker && k != GpuKind::None; }
bool has_tid(GpuKind k) { return k == GpuKind::RuntimeApi || k == GpuKind::DriverApi || k == GpuKind::Marker; }
bool has_bytes(GpuKind k) { return k == GpuKind::Memcpy || k == GpuKind::Memset || k == GpuKind::Memory; }
bool has_value(GpuKind k) {
  return k == GpuKind::RuntimeApi || k == GpuKind::DriverApi || k == GpuKind::Memset ||
         k == GpuKind::ExternalCorrelation || k == GpuKind::Memory || k == GpuKind::Marker;
}
int mem_kind_bytes(GpuKind k) {
  if (k == GpuKind::Memcpy) return 2;
  return k == GpuKind::Memset || k == GpuKind::Memory ? 1 : 0;
}

bool fail(std::string* error, std::string why) {
  if (error) *error = "gpu: " + std::move(why);
  return false;
}

std::span<const uint8_t> column(const flatbuffers::Vector<uint8_t>* v) {
  if (v == nullptr) return {};
  return {v->data(), v->size()};
}

// A varint byte column being read; every get() is bounds-checked.
struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  explicit Reader(std::span<const uint8_t> c) : p(c.data()), end(c.data() + c.size()) {}
  bool get(uint64_t* v) { return varint::get(p, end, v); }
  bool get32(uint32_t* v) {
    uint64_t x = 0;
    if (!varint::get(p, end, &x) || x > UINT32_MAX) return false;
    *v = static_cast<uint32_t>(x);
    return true;
  }
  bool done() const { return p == end; }
};

}  // namespace

void FileState::reset() {
  name_strings.clear();
  devices_written.clear();
  stats_version.reset();
}

void Undo::apply(FileState& file) const {
  for (uint32_t id : names)
    if (id >= 1 && id <= file.name_strings.size()) file.name_strings[id - 1] = 0;
  for (uint32_t id : devices) file.devices_written.erase(id);
  if (stats_changed) file.stats_version = stats_before;
}

Encoded Encoder::encode(const Batch& batch, uint64_t base_ns, bool file_start, FileState& file, Undo& undo,
                        const Intern& intern, flatbuffers::FlatBufferBuilder& fbb) {
  Encoded out;
  namespace fbn = ringprof::fb;

  // Devices: every one the file does not hold yet.
  std::vector<flatbuffers::Offset<fbn::GpuDevice>> devices;
  for (const GpuDevice& d : batch.gpu_devices) {
    if (file.devices_written.count(d.id)) continue;
    file.devices_written.insert(d.id);
    undo.devices.push_back(d.id);
    devices.push_back(fbn::CreateGpuDevice(fbb, d.id, intern(d.name), d.cc_major, d.cc_minor, d.sm_count,
                                           d.max_threads_per_block, d.max_warps_per_sm, d.max_blocks_per_sm,
                                           d.regs_per_sm, d.regs_per_block, d.smem_per_sm, d.smem_per_block,
                                           d.warp_size, d.global_memory_bytes, d.core_clock_khz));
  }
  if (!devices.empty()) out.devices = fbb.CreateVector(devices);

  // Counters: in every file, and again whenever they change.
  if (batch.gpu_stats != nullptr && (file_start || file.stats_version != batch.gpu_stats->version)) {
    undo.stats_changed = true;
    undo.stats_before = file.stats_version;
    file.stats_version = batch.gpu_stats->version;
    const GpuStats& st = *batch.gpu_stats;
    out.stats = fbn::CreateGpuStats(fbb, st.records, st.dropped_records, st.refused_buffers, st.clock_violations,
                                    st.unknown_records);
  }

  if (batch.gpu.empty()) return out;
  for (auto* c : {&kinds_, &subs_, &mem_kinds_, &start_, &duration_, &names_, &places_, &correlation_, &tids_,
                  &bytes_, &values_, &launch_})
    c->clear();
  if (file.name_strings.size() < batch.gpu_names.size()) file.name_strings.resize(batch.gpu_names.size(), 0);

  uint64_t prev_start = base_ns;
  uint32_t prev_corr = 0;
  for (const GpuActivity& a : batch.gpu) {
    const auto kind = static_cast<uint8_t>(a.kind);
    if (kind == 0 || kind >= kGpuKindCount) continue;  // the decoder would reject it
    kinds_.push_back(kind);
    subs_.push_back(a.sub_kind);
    const int mk = mem_kind_bytes(a.kind);
    if (mk >= 1) mem_kinds_.push_back(a.src_kind);
    if (mk == 2) mem_kinds_.push_back(a.dst_kind);
    varint::put(start_, varint::zigzag(static_cast<int64_t>(a.start_ns - prev_start)));
    prev_start = a.start_ns;
    varint::put(duration_, a.end_ns >= a.start_ns ? a.end_ns - a.start_ns : 0);
    if (has_name(a.kind)) {
      uint32_t sid = 0;
      // A name id the batch cannot describe is stored as no name.
      if (a.name >= 1 && a.name <= batch.gpu_names.size()) {
        uint32_t& known = file.name_strings[a.name - 1];
        if (known == 0) {
          known = intern(batch.gpu_names[a.name - 1]);
          undo.names.push_back(a.name);
        }
        sid = known;
      }
      varint::put(names_, sid);
    }
    if (has_place(a.kind)) {
      varint::put(places_, a.device);
      varint::put(places_, a.context);
      varint::put(places_, a.stream);
    }
    if (has_correlation(a.kind)) {
      varint::put(correlation_, varint::zigzag(static_cast<int64_t>(a.correlation) - prev_corr));
      prev_corr = a.correlation;
    }
    if (has_tid(a.kind)) varint::put(tids_, a.tid);
    if (has_bytes(a.kind)) varint::put(bytes_, a.bytes);
    if (has_value(a.kind)) varint::put(values_, a.value);
    if (a.kind == GpuKind::Kernel) {
      for (int i = 0; i < 3; ++i) varint::put(launch_, static_cast<uint32_t>(a.grid[i]));
      for (int i = 0; i < 3; ++i) varint::put(launch_, static_cast<uint32_t>(a.block[i]));
      varint::put(launch_, a.registers);
      varint::put(launch_, a.static_smem);
      varint::put(launch_, a.dynamic_smem);
      varint::put(launch_, a.local_mem);
    }
  }
  if (kinds_.empty()) return out;
  auto bytes = [&](const std::vector<uint8_t>& v) { return v.empty() ? 0 : fbb.CreateVector(v); };
  auto kinds = bytes(kinds_), subs = bytes(subs_), mem = bytes(mem_kinds_), start = bytes(start_),
       dur = bytes(duration_), names = bytes(names_), places = bytes(places_), corr = bytes(correlation_),
       tids = bytes(tids_), nbytes = bytes(bytes_), values = bytes(values_), launch = bytes(launch_);
  out.activities = fbn::CreateGpuActivities(fbb, kinds, subs, mem, start, dur, names, places, corr, tids, nbytes,
                                            values, launch);
  return out;
}

bool decode(const fb::Segment& seg, uint64_t table_size, const Lookup& lookup, DecodedSegment& out,
            std::string* error) {
  if (const auto* devs = seg.gpu_devices()) {
    if (devs->size() > kMaxDevices) return fail(error, "too many devices");
    out.gpu_devices.reserve(devs->size());
    for (const fb::GpuDevice* d : *devs) {
      if (d == nullptr) return fail(error, "null device");
      if (d->name() >= table_size) return fail(error, "device " + std::to_string(d->id()) + ": string id out of range");
      GpuDevice g;
      g.id = d->id();
      g.name = lookup(d->name());
      g.cc_major = d->cc_major();
      g.cc_minor = d->cc_minor();
      g.sm_count = d->sm_count();
      g.max_threads_per_block = d->max_threads_per_block();
      g.max_warps_per_sm = d->max_warps_per_sm();
      g.max_blocks_per_sm = d->max_blocks_per_sm();
      g.regs_per_sm = d->regs_per_sm();
      g.regs_per_block = d->regs_per_block();
      g.smem_per_sm = d->smem_per_sm();
      g.smem_per_block = d->smem_per_block();
      g.warp_size = d->warp_size();
      g.global_memory_bytes = d->global_memory_bytes();
      g.core_clock_khz = d->core_clock_khz();
      out.gpu_devices.push_back(std::move(g));
    }
  }
  if (const fb::GpuStats* s = seg.gpu_stats()) {
    GpuStats st;
    st.records = s->records();
    st.dropped_records = s->dropped_records();
    st.refused_buffers = s->refused_buffers();
    st.clock_violations = s->clock_violations();
    st.unknown_records = s->unknown_records();
    out.gpu_stats = st;
  }

  const fb::GpuActivities* g = seg.gpu();
  if (g == nullptr) return true;
  const auto kinds = column(g->kinds());
  const auto subs = column(g->sub_kinds());
  const auto mem = column(g->mem_kinds());
  if (kinds.size() > kMaxRecords) return fail(error, "too many records");
  if (subs.size() != kinds.size()) return fail(error, "sub-kind column length differs from kinds");
  Reader start(column(g->start())), dur(column(g->duration())), names(column(g->names())),
      places(column(g->places())), corr(column(g->correlation())), tids(column(g->tids())),
      nbytes(column(g->bytes())), values(column(g->values())), launch(column(g->launch()));
  size_t mem_pos = 0;
  std::unordered_map<uint32_t, uint32_t> name_index;  // file string id -> index in out.gpu_names + 1
  out.gpu.reserve(kinds.size());
  uint64_t prev_start = seg.base_ns();
  uint32_t prev_corr = 0;
  for (size_t i = 0; i < kinds.size(); ++i) {
    if (kinds[i] == 0 || kinds[i] >= kGpuKindCount) return fail(error, "bad record kind " + std::to_string(kinds[i]));
    GpuActivity a;
    a.kind = static_cast<GpuKind>(kinds[i]);
    a.sub_kind = subs[i];
    const int mk = mem_kind_bytes(a.kind);
    if (mem.size() - mem_pos < static_cast<size_t>(mk)) return fail(error, "memory-kind column too short");
    if (mk >= 1) a.src_kind = mem[mem_pos++];
    if (mk == 2) a.dst_kind = mem[mem_pos++];
    uint64_t v = 0;
    if (!start.get(&v)) return fail(error, "bad varint in start column");
    prev_start += static_cast<uint64_t>(varint::unzigzag(v));  // unsigned: wraps, never UB
    a.start_ns = prev_start;
    if (!dur.get(&v)) return fail(error, "bad varint in duration column");
    a.end_ns = a.start_ns + v;
    if (has_name(a.kind)) {
      uint32_t sid = 0;
      if (!names.get32(&sid)) return fail(error, "bad varint in names column");
      if (sid >= table_size) return fail(error, "name string id out of range");
      if (sid != 0) {
        auto [it, inserted] = name_index.try_emplace(sid, static_cast<uint32_t>(out.gpu_names.size() + 1));
        if (inserted) out.gpu_names.push_back(lookup(sid));
        a.name = it->second;
      }
    }
    if (has_place(a.kind) && !(places.get32(&a.device) && places.get32(&a.context) && places.get32(&a.stream)))
      return fail(error, "bad varint in places column");
    if (has_correlation(a.kind)) {
      if (!corr.get(&v)) return fail(error, "bad varint in correlation column");
      const int64_t c = static_cast<int64_t>(prev_corr) + varint::unzigzag(v);
      if (c < 0 || c > UINT32_MAX) return fail(error, "correlation id out of range");
      a.correlation = prev_corr = static_cast<uint32_t>(c);
    }
    if (has_tid(a.kind) && !tids.get32(&a.tid)) return fail(error, "bad varint in tids column");
    if (has_bytes(a.kind) && !nbytes.get(&a.bytes)) return fail(error, "bad varint in bytes column");
    if (has_value(a.kind) && !values.get(&a.value)) return fail(error, "bad varint in values column");
    if (a.kind == GpuKind::Kernel) {
      uint32_t f[10];
      for (uint32_t& x : f)
        if (!launch.get32(&x)) return fail(error, "bad varint in launch column");
      for (int k = 0; k < 3; ++k) {
        if (f[k] > INT32_MAX || f[3 + k] > INT32_MAX) return fail(error, "launch dimension out of range");
        a.grid[k] = static_cast<int32_t>(f[k]);
        a.block[k] = static_cast<int32_t>(f[3 + k]);
      }
      a.registers = f[6];
      a.static_smem = f[7];
      a.dynamic_smem = f[8];
      a.local_mem = f[9];
    }
    out.gpu.push_back(a);
  }
  if (mem_pos != mem.size()) return fail(error, "trailing bytes in memory-kind column");
  for (const Reader* r : {&start, &dur, &names, &places, &corr, &tids, &nbytes, &values, &launch})
    if (!r->done()) return fail(error, "trailing bytes in a column");
  return true;
}

}  // namespace ringprof::gpu_codec
