// segment_encoder.cpp — turns one drained Batch into one framed segment.
//
// A segment stores events column by column (schemas/segment.fbs): kinds as
// bytes, timestamps as zigzag varint deltas within each thread's run, location
// ids and values as varints (a counter's double as 8 raw bytes, since its bits
// look random to a varint), memory addresses as zigzag varint deltas within
// each run, like the timestamps. Columns of similar small numbers compress far
// better under zstd than 32-byte rows would.
//
// Strings, locations and thread names are written once per *file*: the
// encoder remembers what the current file already holds and emits only what
// is new, so every file decodes alone and the oldest can be deleted at will.
// Because a sink may fail to store a frame (disk full), the encoder keeps a
// record of what its last encode() added, and rollback_last() forgets it, so
// the next frame restates those items and the file stays self-contained.
//
// Each table of the Segment has one encode_<table> here and one
// decode_<table> in segment_decoder.cpp, defined in the order of
// schemas/segment.fbs; the GPU tables have theirs in gpu_codec.cpp.
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "codec/gpu_codec.h"
#include "ringprof/segment_codec.h"
#include "segment_generated.h"
#include "codec/varint.h"

namespace ringprof {

namespace {

template <typename T>
using VectorOffset = flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<T>>>;

// A byte column of the event loop. Room for a run's worst case is made once
// per run, so each byte is a plain store: a vector's push_back checks its
// capacity per byte, which was a third of the encoder's time per event.
// The room is not initialised (only what is written is touched).
class ByteColumn {
 public:
  void clear() noexcept { size_ = 0; }
  bool empty() const noexcept { return size_ == 0; }
  size_t size() const noexcept { return size_; }
  const uint8_t* data() const noexcept { return buf_.get(); }
  // Room for `n` more bytes; returns where they go. commit() says where
  // the writing ended.
  uint8_t* room(size_t n) {
    if (n > cap_ - size_) {
      const size_t cap = std::max(size_ + n, cap_ * 2);
      auto bigger = std::make_unique_for_overwrite<uint8_t[]>(cap);
      if (size_ != 0) std::memcpy(bigger.get(), buf_.get(), size_);
      buf_ = std::move(bigger);
      cap_ = cap;
    }
    return buf_.get() + size_;
  }
  void commit(const uint8_t* end) noexcept { size_ = static_cast<size_t>(end - buf_.get()); }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0;
  size_t size_ = 0;
};

// Which ids of a per-file table (locations, stacks, modules) the current file
// already states. Ids are dense from 1, so a flag per id answers the
// per-event question with one indexed load, no hashing.
class IdSet {
 public:
  bool count(uint32_t id) const { return id < flags_.size() && flags_[id] != 0; }
  void insert(uint32_t id) {
    if (id >= flags_.size()) flags_.resize(std::max<size_t>(size_t{id} + 1, flags_.size() * 2), 0);
    flags_[id] = 1;
  }
  void erase(uint32_t id) {
    if (id < flags_.size()) flags_[id] = 0;
  }
  void clear() { std::fill(flags_.begin(), flags_.end(), 0); }

 private:
  std::vector<uint8_t> flags_;
};

}  // namespace

struct SegmentEncoder::State {
  int level = 3;
  ZSTD_CCtx* cctx = nullptr;  // reused: creating a context per segment costs ~100 KB of allocations

  SessionInfo session;
  bool pending_file_start = false;  // the next segment opens the file

  // The current file's string table: id -> text (id 0 = "") and back.
  std::vector<std::string> strings{std::string()};
  std::unordered_map<std::string, uint32_t> string_ids{{std::string(), 0}};
  IdSet locations_written;
  std::unordered_map<uint32_t, uint32_t> thread_name_versions;  // index -> name_version written
  static constexpr size_t kMaxThreadNames = 8192;
  IdSet stacks_written;
  IdSet modules_written;
  std::optional<uint32_t> sampler_version;  // SamplerState::version the file holds
  std::optional<uint32_t> rank_version;     // RankInfo::version the file holds
  gpu_codec::FileState gpu;                 // GPU names, devices and counters the file holds

  // What the last successful encode() added, for rollback_last().
  struct Undo {
    bool valid = false;
    bool was_file_start = false;
    size_t strings_before = 0;
    std::vector<uint32_t> locations;
    // (thread index, previously written version or none)
    std::vector<std::pair<uint32_t, std::optional<uint32_t>>> thread_names;
    std::vector<uint32_t> stacks;
    std::vector<uint32_t> modules;
    bool sampler_changed = false;
    std::optional<uint32_t> sampler_before;
    bool rank_changed = false;
    std::optional<uint32_t> rank_before;
    gpu_codec::Undo gpu;
  } undo;

  // A location new in this file, its strings interned.
  struct LocationIds {
    uint32_t id, name, function, file, line;
  };
  // A module new in this file, its path interned.
  struct ModuleIds {
    const ModuleInfo* module;
    uint32_t path;
  };

  // Scratch reused across segments so steady-state encoding does not allocate.
  flatbuffers::FlatBufferBuilder fbb{64 * 1024};
  std::vector<uint32_t> run_thread, run_count;
  ByteColumn kinds, ts, locs, values, addresses;
  std::vector<uint32_t> new_locations;
  std::vector<uint32_t> new_stacks;
  std::vector<uint8_t> frame_bytes;
  gpu_codec::Encoder gpu_encoder;

  uint32_t intern(const std::string& s) {
    auto it = string_ids.find(s);
    if (it != string_ids.end()) return it->second;
    const auto id = static_cast<uint32_t>(strings.size());
    strings.push_back(s);
    string_ids.emplace(s, id);
    return id;
  }

  // The id an event stores for item `id` of a per-file table (locations,
  // stacks). Its first reference in the file queues the item to be stated
  // with this segment; an id the batch cannot describe would leave the file
  // unable to resolve it, so it is stored as 0 ("unknown") instead.
  template <typename Item>
  static uint32_t refer(uint32_t id, std::span<const Item> items, IdSet& written,
                        std::vector<uint32_t>& undo_list, std::vector<uint32_t>& new_list) {
    if (id == 0 || written.count(id)) return id;
    if (id > items.size() || items[id - 1].id != id) return 0;
    written.insert(id);
    undo_list.push_back(id);
    new_list.push_back(id);
    return id;
  }

  void begin_segment();

  // ---- one helper per table, in the order of schemas/segment.fbs ----
  // The metadata helpers run once per segment and are kept out of line
  // (noinline), so they neither bloat encode() nor change how the compiler
  // treats the event loop beside them.
  [[gnu::noinline]] flatbuffers::Offset<fb::Process> encode_process();
  [[gnu::noinline]] flatbuffers::Offset<fb::Clock> encode_clock();
  [[gnu::noinline]] flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>
  encode_strings();
  [[gnu::noinline]] void intern_locations(const Batch& batch, std::vector<LocationIds>& ids);
  [[gnu::noinline]] VectorOffset<fb::Location> encode_locations(const std::vector<LocationIds>& ids);
  [[gnu::noinline]] void encode_threads(const Batch& batch, std::vector<flatbuffers::Offset<fb::Thread>>& tables);
  uint32_t encode_events(const Batch& batch, uint64_t base_ns);
  [[gnu::noinline]] VectorOffset<fb::Stack> encode_stacks(const Batch& batch);
  [[gnu::noinline]] VectorOffset<fb::Module> encode_modules(const Batch& batch);
  [[gnu::noinline]] flatbuffers::Offset<fb::Sampler> encode_sampler(const Batch& batch);
  [[gnu::noinline]] flatbuffers::Offset<fb::Rank> encode_rank(const Batch& batch);

  [[gnu::noinline]] void build_segment(const Batch& batch, uint64_t base_ns);
  size_t compress_and_frame(const Batch& batch, uint32_t event_count, std::vector<uint8_t>& out);
  void undo_changes();
};

// Starts the undo record of a new encode() and empties the scratch columns.
void SegmentEncoder::State::begin_segment() {
  undo = Undo{};
  undo.valid = true;
  undo.was_file_start = pending_file_start;
  undo.strings_before = strings.size();

  run_thread.clear();
  run_count.clear();
  kinds.clear();
  ts.clear();
  locs.clear();
  values.clear();
  addresses.clear();
  new_locations.clear();
  new_stacks.clear();
}

// Process: file start only.
flatbuffers::Offset<fb::Process> SegmentEncoder::State::encode_process() {
  const SessionInfo& si = session;
  auto host = fbb.CreateString(si.hostname);
  auto cmd = fbb.CreateVectorOfStrings(si.command_line);
  auto version = fbb.CreateString(si.ringprof_version);
  return fb::CreateProcess(fbb, si.pid, host, cmd, si.start_monotonic_ns, si.start_realtime_ns, version);
}

// Clock: file start only.
flatbuffers::Offset<fb::Clock> SegmentEncoder::State::encode_clock() {
  const ClockCalibration& c = session.clock;
  return fb::CreateClock(fbb, static_cast<uint8_t>(c.source), c.ticks_per_second, c.tick_base, c.monotonic_base_ns,
                         c.realtime_base_ns);
}

// Strings: those this segment interned, from string_base on.
flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<flatbuffers::String>>>
SegmentEncoder::State::encode_strings() {
  if (strings.size() <= undo.strings_before) return 0;
  std::vector<flatbuffers::Offset<flatbuffers::String>> offs;
  offs.reserve(strings.size() - undo.strings_before);
  for (size_t i = undo.strings_before; i < strings.size(); ++i) offs.push_back(fbb.CreateString(strings[i]));
  return fbb.CreateVector(offs);
}

// Locations the event loop referred to for the first time in this file. Their
// strings are interned before anything else, so they take the lowest new ids.
void SegmentEncoder::State::intern_locations(const Batch& batch, std::vector<LocationIds>& ids) {
  ids.reserve(new_locations.size());
  for (uint32_t id : new_locations) {
    const Location& l = batch.locations[id - 1];
    ids.push_back({id, intern(l.name), intern(l.function), intern(l.file), l.line});
  }
}

VectorOffset<fb::Location> SegmentEncoder::State::encode_locations(const std::vector<LocationIds>& ids) {
  if (ids.empty()) return 0;
  std::vector<flatbuffers::Offset<fb::Location>> offs;
  offs.reserve(ids.size());
  for (const LocationIds& l : ids)
    offs.push_back(fb::CreateLocation(fbb, l.id, l.name, l.function, l.file, l.line));
  return fbb.CreateVector(offs);
}

// Threads: every thread of the batch with its drop counts; the name only when
// the file does not hold this version of it yet. Builds the tables into
// `tables`; build_segment() makes the vector.
void SegmentEncoder::State::encode_threads(const Batch& batch, std::vector<flatbuffers::Offset<fb::Thread>>& tables) {
  // Which names the file holds is only there to write each once: a program
  // that runs thread after thread (200,000 of them) would keep an entry for
  // every one it ever had. Past kMaxThreadNames the table starts again, and
  // the threads still running state their names once more.
  if (thread_name_versions.size() > kMaxThreadNames)
    std::unordered_map<uint32_t, uint32_t>().swap(thread_name_versions);
  tables.reserve(batch.threads.size());
  for (const ThreadInfo& t : batch.threads) {
    flatbuffers::Offset<flatbuffers::String> name;
    auto it = thread_name_versions.find(t.index);
    if (it == thread_name_versions.end() || it->second != t.name_version) {
      name = fbb.CreateString(t.name);
      undo.thread_names.emplace_back(
          t.index, it == thread_name_versions.end() ? std::nullopt : std::optional<uint32_t>(it->second));
      thread_name_versions[t.index] = t.name_version;
    }
    tables.push_back(fb::CreateThread(fbb, t.index, t.tid, name, t.dropped_ring, t.dropped_io, t.samples_lost));
  }
}

// The event columns (run_thread, run_count, kinds, ts, locs, values and
// addresses), filled from the batch's runs; returns the events kept.
// `flatten` inlines every helper it calls (refer, varint, the vectors'
// appends): left to its heuristics, the compiler stopped inlining them
// whenever another column was added (the stack and GPU tables, then the
// address column), and each time encoding fell from ~115 to 70-95 M events/s.
// Its speed also moves by a few percent with where the linker puts it: an
// unused function added to this file has cost 4-6%. Compare builds side by
// side, interleaved, before blaming a change to the code around it.
__attribute__((flatten)) uint32_t SegmentEncoder::State::encode_events(const Batch& batch, uint64_t base_ns) {
  uint32_t event_count = 0;
  for (const EventRun& run : batch.runs) {
    // Runs are meant to cover `events` exactly; clamp anyway rather than read
    // out of bounds if a caller gets that wrong.
    if (run.begin >= batch.events.size()) continue;
    const size_t end = std::min<size_t>(batch.events.size(), size_t{run.begin} + run.count);
    uint32_t written = 0;
    uint64_t prev = base_ns;
    uint64_t prev_address = 0;
    // At most one kind byte and one varint (or 8 raw bytes) per column and event.
    const size_t n = end - run.begin;
    uint8_t* k = kinds.room(n);
    uint8_t* t = ts.room(n * varint::kMaxBytes);
    uint8_t* l = locs.room(n * 5);  // ids are 32-bit: 5 bytes at most
    uint8_t* v = values.room(n * varint::kMaxBytes);
    uint8_t* a = addresses.room(n * varint::kMaxBytes);
    for (size_t i = run.begin; i < end; ++i) {
      const Event& e = batch.events[i];
      // The drainer consumes the others before a batch is formed; a file must
      // never hold them (the decoder rejects them).
      if (!valid_file_kind(static_cast<uint8_t>(e.kind))) continue;
      *k++ = static_cast<uint8_t>(e.kind);
      // Wrapping subtraction, reinterpreted as signed: out-of-order events
      // give a small negative delta, which zigzag keeps short.
      t = varint::put(t, varint::zigzag(static_cast<int64_t>(e.ts - prev)));
      prev = e.ts;
      if (kind_has_location(e.kind)) {
        l = varint::put(l, refer(e.loc, batch.locations, locations_written, undo.locations, new_locations));
      } else if (kind_has_stack(e.kind)) {
        l = varint::put(l, refer(e.loc, batch.stacks, stacks_written, undo.stacks, new_stacks));
      }
      if (e.kind == EventKind::Counter) {
        for (int b = 0; b < 8; ++b) *v++ = static_cast<uint8_t>(e.p1 >> (8 * b));
      } else if (kind_value_is_location(e.kind)) {
        // An argument's text: a second location, stated in the file like the first.
        v = varint::put(
            v, refer(static_cast<uint32_t>(e.p1), batch.locations, locations_written, undo.locations, new_locations));
      } else if (kind_has_value(e.kind)) {
        v = varint::put(v, e.p1);
      }
      if (kind_is_memory(e.kind)) {
        // An allocator hands out neighbouring blocks: deltas stay short.
        a = varint::put(a, varint::zigzag(static_cast<int64_t>(e.p0 - prev_address)));
        prev_address = e.p0;
      }
      ++written;
    }
    kinds.commit(k);
    ts.commit(t);
    locs.commit(l);
    values.commit(v);
    addresses.commit(a);
    if (written == 0) continue;
    run_thread.push_back(run.thread_index);
    run_count.push_back(written);
    event_count += written;
  }
  return event_count;
}

// Stacks the event loop referred to for the first time in this file.
VectorOffset<fb::Stack> SegmentEncoder::State::encode_stacks(const Batch& batch) {
  if (new_stacks.empty()) return 0;
  std::vector<flatbuffers::Offset<fb::Stack>> offs;
  offs.reserve(new_stacks.size());
  for (uint32_t id : new_stacks) {
    frame_bytes.clear();
    uint64_t prev = 0;
    for (uint64_t a : batch.stacks[id - 1].frames) {
      varint::put(frame_bytes, varint::zigzag(static_cast<int64_t>(a - prev)));
      prev = a;
    }
    offs.push_back(fb::CreateStack(fbb, id, fbb.CreateVector(frame_bytes)));
  }
  return fbb.CreateVector(offs);
}

// Modules: every one the file does not hold yet (all of them in a new file).
VectorOffset<fb::Module> SegmentEncoder::State::encode_modules(const Batch& batch) {
  std::vector<ModuleIds> new_modules;
  for (const ModuleInfo& m : batch.modules) {
    if (m.id == 0 || modules_written.count(m.id)) continue;
    modules_written.insert(m.id);
    undo.modules.push_back(m.id);
    new_modules.push_back({&m, intern(m.path)});
  }
  if (new_modules.empty()) return 0;
  std::vector<flatbuffers::Offset<fb::Module>> offs;
  offs.reserve(new_modules.size());
  for (const ModuleIds& mi : new_modules) {
    const ModuleInfo& m = *mi.module;
    offs.push_back(
        fb::CreateModule(fbb, m.id, mi.path, fbb.CreateString(m.build_id), m.base, m.start, m.end, m.file_offset));
  }
  return fbb.CreateVector(offs);
}

// The process's rank: in every file, and again whenever it changes.
flatbuffers::Offset<fb::Rank> SegmentEncoder::State::encode_rank(const Batch& batch) {
  if (batch.rank == nullptr || (!pending_file_start && rank_version == batch.rank->version)) return 0;
  undo.rank_changed = true;
  undo.rank_before = rank_version;
  rank_version = batch.rank->version;
  const RankInfo& r = *batch.rank;
  return fb::CreateRank(fbb, r.rank, r.local_rank, r.world_size, fbb.CreateString(r.job_id),
                        fbb.CreateString(r.source));
}

// The sampler's state: in every file, and again whenever it changes.
flatbuffers::Offset<fb::Sampler> SegmentEncoder::State::encode_sampler(const Batch& batch) {
  if (batch.sampler == nullptr || (!pending_file_start && sampler_version == batch.sampler->version)) return 0;
  undo.sampler_changed = true;
  undo.sampler_before = sampler_version;
  sampler_version = batch.sampler->version;
  return fb::CreateSampler(fbb, fbb.CreateString(batch.sampler->mechanism), fbb.CreateString(batch.sampler->detail),
                           batch.sampler->hz);
}

// Builds the Segment table in fbb from the filled event columns and the
// batch's metadata. FlatBuffers wants children before parents, and string ids
// are handed out in the order strings are interned (locations, then modules,
// then GPU names); the calls below keep the order that format 1's writers
// have always used, so a batch encodes to the same bytes as before.
void SegmentEncoder::State::build_segment(const Batch& batch, uint64_t base_ns) {
  fbb.Clear();
  const bool file_start = pending_file_start;

  // A stack new in this file names its interpreter frames by location: those
  // locations must be stated in the file too.
  for (uint32_t id : new_stacks)
    for (uint64_t f : batch.stacks[id - 1].frames)
      if (f & kInterpreterFrameTag)
        refer(static_cast<uint32_t>(f & 0xffffffffu), batch.locations, locations_written, undo.locations,
              new_locations);
  std::vector<LocationIds> location_ids;
  intern_locations(batch, location_ids);
  std::vector<flatbuffers::Offset<fb::Thread>> thread_tables;
  encode_threads(batch, thread_tables);
  const auto modules = encode_modules(batch);
  const auto stacks = encode_stacks(batch);
  const auto sampler = encode_sampler(batch);
  const auto rank = encode_rank(batch);
  const gpu_codec::Encoded gpu_tables = gpu_encoder.encode(
      batch, base_ns, file_start, gpu, undo.gpu, [&](const std::string& str) { return intern(str); }, fbb);
  const auto process = file_start ? encode_process() : 0;
  const auto clock = file_start ? encode_clock() : 0;
  const auto strings_vec = encode_strings();
  const auto locations = encode_locations(location_ids);
  const auto threads = thread_tables.empty() ? 0 : fbb.CreateVector(thread_tables);
  // Empty columns are left out; the decoder reads an absent vector as empty.
  auto u32s = [&](const std::vector<uint32_t>& v) { return v.empty() ? 0 : fbb.CreateVector(v); };
  auto bytes = [&](const ByteColumn& c) { return c.empty() ? 0 : fbb.CreateVector(c.data(), c.size()); };
  const auto run_thread_vec = u32s(run_thread);
  const auto run_count_vec = u32s(run_count);
  const auto kinds_vec = bytes(kinds);
  const auto ts_vec = bytes(ts);
  const auto locs_vec = bytes(locs);
  const auto values_vec = bytes(values);
  const auto addresses_vec = bytes(addresses);

  fb::SegmentBuilder sb(fbb);
  sb.add_base_ns(base_ns);
  sb.add_string_base(static_cast<uint32_t>(undo.strings_before));
  if (!process.IsNull()) sb.add_process(process);
  if (!clock.IsNull()) sb.add_clock(clock);
  if (!strings_vec.IsNull()) sb.add_strings(strings_vec);
  if (!locations.IsNull()) sb.add_locations(locations);
  if (!threads.IsNull()) sb.add_threads(threads);
  if (!run_thread_vec.IsNull()) sb.add_run_thread(run_thread_vec);
  if (!run_count_vec.IsNull()) sb.add_run_count(run_count_vec);
  if (!kinds_vec.IsNull()) sb.add_kinds(kinds_vec);
  if (!ts_vec.IsNull()) sb.add_ts(ts_vec);
  if (!locs_vec.IsNull()) sb.add_locs(locs_vec);
  if (!values_vec.IsNull()) sb.add_values(values_vec);
  if (!stacks.IsNull()) sb.add_stacks(stacks);
  if (!modules.IsNull()) sb.add_modules(modules);
  if (!sampler.IsNull()) sb.add_sampler(sampler);
  if (!rank.IsNull()) sb.add_rank(rank);
  if (!gpu_tables.activities.IsNull()) sb.add_gpu(gpu_tables.activities);
  if (!gpu_tables.devices.IsNull()) sb.add_gpu_devices(gpu_tables.devices);
  if (!gpu_tables.stats.IsNull()) sb.add_gpu_stats(gpu_tables.stats);
  if (!addresses_vec.IsNull()) sb.add_addresses(addresses_vec);
  fbb.Finish(sb.Finish());
}

// Compresses the built Segment and appends it to `out` as one frame; on
// failure leaves `out` as it was, undoes this encode() and returns 0.
size_t SegmentEncoder::State::compress_and_frame(const Batch& batch, uint32_t event_count, std::vector<uint8_t>& out) {
  const uint8_t* raw = fbb.GetBufferPointer();
  const size_t raw_size = fbb.GetSize();
  const bool file_start = pending_file_start;

  auto fail = [&](size_t keep) -> size_t {
    out.resize(keep);
    undo_changes();
    return 0;
  };
  const size_t start = out.size();
  const bool as_is = level == SegmentEncoder::kStored;
  if (raw_size > format::kMaxPayload || (cctx == nullptr && !as_is)) return fail(start);
  size_t stored = raw_size;
  if (as_is) {
    out.insert(out.end(), format::kHeaderSize, 0);
    out.insert(out.end(), raw, raw + raw_size);
  } else {
    const size_t bound = ZSTD_compressBound(raw_size);
    out.resize(start + format::kHeaderSize + bound);
    // Starts a new frame with the context's parameters (make_cctx); zstd
    // still shrinks its tables for a small segment.
    stored = ZSTD_compress2(cctx, out.data() + start + format::kHeaderSize, bound, raw, raw_size);
    if (ZSTD_isError(stored) || stored > format::kMaxPayload) return fail(start);
    out.resize(start + format::kHeaderSize + stored);
  }

  format::FrameHeader h;
  h.flags = (as_is ? format::kFrameUncompressed : format::kFrameZstd) | (file_start ? format::kFrameFileStart : 0u);
  h.stored_size = static_cast<uint32_t>(stored);
  h.raw_size = static_cast<uint32_t>(raw_size);
  h.event_count = event_count;
  h.sequence = batch.sequence;
  h.first_ns = batch.first_ns;
  h.last_ns = batch.last_ns;
  h.pid = session.pid;
  h.payload_crc32 = format::crc32({out.data() + start + format::kHeaderSize, stored});
  format::write_frame_header(h, out.data() + start);

  pending_file_start = false;
  return format::kHeaderSize + stored;
}

void SegmentEncoder::State::undo_changes() {
  for (size_t i = undo.strings_before; i < strings.size(); ++i) string_ids.erase(strings[i]);
  strings.resize(undo.strings_before);
  for (uint32_t id : undo.locations) locations_written.erase(id);
  for (uint32_t id : undo.stacks) stacks_written.erase(id);
  for (uint32_t id : undo.modules) modules_written.erase(id);
  if (undo.sampler_changed) sampler_version = undo.sampler_before;
  if (undo.rank_changed) rank_version = undo.rank_before;
  undo.gpu.apply(gpu);
  for (const auto& [index, before] : undo.thread_names) {
    if (before)
      thread_name_versions[index] = *before;
    else
      thread_name_versions.erase(index);
  }
  if (undo.was_file_start) pending_file_start = true;
  undo = Undo{};
}

namespace {

// zstd's fast levels (1 to 3, and 0, its default, which is 3: the "fast" and
// "double fast" match finders at every input size) size their hash tables for
// throughput on a warm core: 2^13 to 2^17 entries, at level 3 512 KiB to
// 768 KiB for a segment's 150-300 KB. The writer compresses one segment and
// sleeps, so each segment met those tables cold and its random probes missed
// cache: at 1 M zones/s, zstd cost about twice its warm speed. Tables of 2^13
// entries each (64 KiB in all) stay cached and lose next to nothing on event
// columns, whose repeats lie close together (docs/performance.md: the demo's
// segments 0.1% larger or smaller, the writer 15-20% cheaper). Higher levels
// are asked for by users who want the ratio, and keep zstd's tables; so do
// negative levels (Config allows 1-19; one set in code may say anything),
// whose tables are smaller already. zstd still shrinks the set sizes for a
// small segment.
constexpr int kFastLevelMax = 3;
constexpr int kFastTableLog = 13;

ZSTD_CCtx* make_cctx(int level) {
  ZSTD_CCtx* c = ZSTD_createCCtx();
  if (c == nullptr) return nullptr;
  size_t r = ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level);
  if (!ZSTD_isError(r) && level >= 0 && level <= kFastLevelMax) {
    r = ZSTD_CCtx_setParameter(c, ZSTD_c_hashLog, kFastTableLog);
    if (!ZSTD_isError(r)) r = ZSTD_CCtx_setParameter(c, ZSTD_c_chainLog, kFastTableLog);
  }
  if (ZSTD_isError(r)) {
    ZSTD_freeCCtx(c);
    return nullptr;  // encode() then fails and says so, as with no context at all
  }
  return c;
}

}  // namespace

SegmentEncoder::SegmentEncoder(int zstd_level) : state_(new State) {
  state_->level = zstd_level;
  state_->cctx = zstd_level == kStored ? nullptr : make_cctx(zstd_level);
}

SegmentEncoder::~SegmentEncoder() {
  ZSTD_freeCCtx(state_->cctx);
  delete state_;
}

void SegmentEncoder::start_file(const SessionInfo& session) {
  State& s = *state_;
  s.session = session;
  s.pending_file_start = true;
  s.strings.assign(1, std::string());
  s.string_ids.clear();
  s.string_ids.emplace(std::string(), 0);
  s.locations_written.clear();
  s.thread_name_versions.clear();
  s.stacks_written.clear();
  s.modules_written.clear();
  s.sampler_version.reset();
  s.rank_version.reset();
  s.gpu.reset();
  // What was added to the previous file cannot be rolled back into this one.
  s.undo = State::Undo{};
}

void SegmentEncoder::rollback_last() {
  if (state_->undo.valid) state_->undo_changes();
}

size_t SegmentEncoder::encode(const Batch& batch, std::vector<uint8_t>& out) {
  State& s = *state_;
  s.begin_segment();
  const uint64_t base_ns = batch.first_ns;
  const uint32_t event_count = s.encode_events(batch, base_ns);
  s.build_segment(batch, base_ns);
  return s.compress_and_frame(batch, event_count, out);
}

}  // namespace ringprof
