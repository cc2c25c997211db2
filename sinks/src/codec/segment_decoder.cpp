// segment_decoder.cpp — turns one frame's payload back into events.
//
// Every byte here may be hostile: files are read after crashes, from full
// disks, or by a fuzzer. So the decoder checks before it trusts: the payload
// checksum, the decompressed size (capped before allocating), the FlatBuffers
// verifier, then every column length and every varint. A bad input returns
// false with a short reason; it never reads out of bounds and never aborts.
// Nothing is written to the caller's string table unless the whole segment
// decodes.
//
// Each table of the Segment has one decode_<table> here and one
// encode_<table> in segment_encoder.cpp, defined in the order of
// schemas/segment.fbs; the GPU tables have theirs in gpu_codec.cpp.
#include <zstd.h>

#include <memory>
#include <string>
#include <vector>

#include "codec/gpu_codec.h"
#include "ringprof/segment_codec.h"
#include "codec/crash_segment.h"
#include "segment_generated.h"
#include "codec/varint.h"

namespace ringprof {
namespace {

// A drainer batch holds 64K events by default. Refusing absurd counts keeps a
// small "decompression bomb" from making a reader allocate gigabytes.
constexpr uint64_t kMaxSegmentEvents = 1u << 24;
// A reader that skipped a corrupt segment sees the next one's string ids
// start past its table; it pads the gap with "" so the rest of the file still
// decodes. Bounded, so a forged string_base cannot exhaust memory.
constexpr uint64_t kMaxStringGap = 1u << 20;

struct DCtxDeleter {
  void operator()(ZSTD_DCtx* d) const noexcept { ZSTD_freeDCtx(d); }
};

ZSTD_DCtx* thread_dctx() {
  // One per thread: decoding stays reentrant without paying for a context per call.
  thread_local std::unique_ptr<ZSTD_DCtx, DCtxDeleter> dctx(ZSTD_createDCtx());
  return dctx.get();
}

bool fail(std::string* error, std::string why) {
  if (error) *error = std::move(why);
  return false;
}

template <typename T>
std::span<const T> column(const flatbuffers::Vector<T>* v) {
  if (v == nullptr) return {};
  return {v->data(), v->size()};
}

// Checks the payload (checksum, sizes, encoding) and decompresses it into
// `raw`, our own buffer: the caller's bytes may sit at any alignment, and
// FlatBuffers reads scalars in place.
bool decode_payload(const format::FrameHeader& header, std::span<const uint8_t> payload, std::vector<uint8_t>& raw,
                    std::string* error) {
  if (payload.size() < header.stored_size) return fail(error, "truncated payload");
  payload = payload.first(header.stored_size);
  if (format::crc32(payload) != header.payload_crc32) return fail(error, "payload checksum mismatch");
  if (header.raw_size > format::kMaxPayload) return fail(error, "raw size too large");

  const bool zstd = (header.flags & format::kFrameZstd) != 0;
  const bool uncompressed = (header.flags & format::kFrameUncompressed) != 0;
  if (zstd == uncompressed) return fail(error, "unknown payload encoding");

  if (zstd) {
    const unsigned long long content = ZSTD_getFrameContentSize(payload.data(), payload.size());
    if (content != header.raw_size) return fail(error, "zstd frame size does not match raw size");
    ZSTD_DCtx* dctx = thread_dctx();
    if (dctx == nullptr) return fail(error, "zstd: out of memory");
    raw.resize(header.raw_size);
    const size_t n = ZSTD_decompressDCtx(dctx, raw.data(), raw.size(), payload.data(), payload.size());
    if (ZSTD_isError(n)) return fail(error, std::string("zstd: ") + ZSTD_getErrorName(n));
    if (n != header.raw_size) return fail(error, "decompressed size does not match raw size");
  } else {
    if (header.stored_size != header.raw_size) return fail(error, "uncompressed payload size mismatch");
    raw.assign(payload.begin(), payload.end());
  }
  return true;
}

// The file's string table as this segment sees it: the caller's table so far
// (or a fresh one), then the strings this segment adds. Nothing reaches the
// caller's table before commit().
class FileStrings {
 public:
  FileStrings(const format::FrameHeader& header, std::vector<std::string>& so_far)
      // A file start begins a fresh table; so does an empty one (id 0 = "").
      : so_far_(so_far),
        fresh_((header.flags & format::kFrameFileStart) != 0 || so_far.empty()),
        known_(fresh_ ? 1 : so_far.size()) {}

  uint64_t known() const { return known_; }
  uint64_t size() const { return known_ + added_.size(); }
  std::vector<std::string>& added() { return added_; }  // ids known().. : gap padding, then new strings
  const std::string& lookup(uint32_t id) const {
    static const std::string empty;
    if (id >= known_) return added_[id - known_];
    return fresh_ ? empty : so_far_[id];
  }
  void commit() {
    if (fresh_) so_far_.assign(1, std::string());
    for (std::string& s : added_) so_far_.push_back(std::move(s));
  }

 private:
  std::vector<std::string>& so_far_;
  const bool fresh_;
  const uint64_t known_;
  std::vector<std::string> added_;
};

// ---- one helper per table, in the order of schemas/segment.fbs ----

void decode_process(const fb::Segment& seg, DecodedSegment& out) {
  const fb::Process* p = seg.process();
  if (p == nullptr) return;
  DecodedProcess dp;
  dp.pid = p->pid();
  if (p->hostname()) dp.hostname = p->hostname()->str();
  if (p->command_line())
    for (const flatbuffers::String* arg : *p->command_line()) dp.command_line.push_back(arg ? arg->str() : "");
  dp.start_monotonic_ns = p->start_monotonic_ns();
  dp.start_realtime_ns = p->start_realtime_ns();
  if (p->ringprof_version()) dp.ringprof_version = p->ringprof_version()->str();
  out.process = std::move(dp);
}

void decode_clock(const fb::Segment& seg, DecodedSegment& out) {
  const fb::Clock* c = seg.clock();
  if (c == nullptr) return;
  ClockCalibration cc;
  cc.source = static_cast<ClockSource>(c->source());
  cc.ticks_per_second = c->ticks_per_second();
  cc.tick_base = c->tick_base();
  cc.monotonic_base_ns = c->monotonic_base_ns();
  cc.realtime_base_ns = c->realtime_base_ns();
  out.clock = cc;
}

// This segment's strings, from string_base on, into `table` and out.strings.
bool decode_strings(const fb::Segment& seg, FileStrings& table, DecodedSegment& out, std::string* error) {
  const auto* fb_strings = seg.strings();
  if (fb_strings == nullptr || fb_strings->size() == 0) return true;
  const uint64_t known = table.known();
  const uint64_t base = seg.string_base();
  if (base < known) return fail(error, "string_base " + std::to_string(base) + " overlaps the string table");
  if (base - known > kMaxStringGap) return fail(error, "string_base " + std::to_string(base) + " out of range");
  std::vector<std::string>& added = table.added();
  added.resize(base - known);
  added.reserve(added.size() + fb_strings->size());
  for (const flatbuffers::String* str : *fb_strings) {
    out.strings.emplace_back(static_cast<uint32_t>(known + added.size()), str ? str->str() : "");
    added.push_back(out.strings.back().second);
  }
  if (known + added.size() > UINT32_MAX) return fail(error, "too many strings");
  return true;
}

bool decode_locations(const fb::Segment& seg, const FileStrings& table, DecodedSegment& out, std::string* error) {
  const auto* locs = seg.locations();
  if (locs == nullptr) return true;
  const uint64_t table_size = table.size();
  out.locations.reserve(locs->size());
  for (const fb::Location* l : *locs) {
    if (l == nullptr) return fail(error, "null location");
    if (l->id() == 0) return fail(error, "location id 0");
    if (l->name() >= table_size || l->function() >= table_size || l->file() >= table_size)
      return fail(error, "location " + std::to_string(l->id()) + ": string id out of range");
    out.locations.push_back(
        Location{l->id(), table.lookup(l->name()), table.lookup(l->function()), table.lookup(l->file()), l->line()});
  }
  return true;
}

bool decode_threads(const fb::Segment& seg, DecodedSegment& out, std::string* error) {
  const auto* threads = seg.threads();
  if (threads == nullptr) return true;
  out.threads.reserve(threads->size());
  for (const fb::Thread* t : *threads) {
    if (t == nullptr) return fail(error, "null thread");
    DecodedThread dt;
    dt.index = t->index();
    dt.tid = t->tid();
    if (t->name()) {
      dt.name = t->name()->str();
      dt.has_name = true;
    }
    dt.dropped_ring = t->dropped_ring();
    dt.dropped_io = t->dropped_io();
    dt.samples_lost = t->samples_lost();
    out.threads.push_back(std::move(dt));
  }
  return true;
}

// The event columns: run_thread, run_count, kinds, ts, locs, values and
// addresses, each checked for length and trailing bytes.
bool decode_events(const fb::Segment& seg, const format::FrameHeader& header, DecodedSegment& out,
                   std::string* error) {
  const auto run_thread = column(seg.run_thread());
  const auto run_count = column(seg.run_count());
  const auto kinds = column(seg.kinds());
  const auto ts = column(seg.ts());
  const auto locs = column(seg.locs());
  const auto values = column(seg.values());
  const auto addresses = column(seg.addresses());
  if (run_thread.size() != run_count.size()) return fail(error, "run columns differ in length");
  uint64_t total = 0;
  for (uint32_t c : run_count) total += c;  // at most 2^32 runs * 2^32: no overflow
  if (total != kinds.size()) return fail(error, "run counts do not match the kinds column");
  if (total != header.event_count) return fail(error, "event count does not match the header");
  if (total > kMaxSegmentEvents) return fail(error, "too many events");
  if (ts.size() < total) return fail(error, "ts column too short");

  out.events.reserve(total);
  const uint8_t* tp = ts.data();
  const uint8_t* const tend = tp + ts.size();
  const uint8_t* lp = locs.data();
  const uint8_t* const lend = lp + locs.size();
  const uint8_t* vp = values.data();
  const uint8_t* const vend = vp + values.size();
  const uint8_t* ap = addresses.data();
  const uint8_t* const aend = ap + addresses.size();
  size_t i = 0;
  for (size_t r = 0; r < run_count.size(); ++r) {
    uint64_t prev = seg.base_ns();
    uint64_t prev_address = 0;
    for (uint32_t k = 0; k < run_count[r]; ++k, ++i) {
      DecodedEvent e;
      const uint8_t kind = kinds[i];
      if (!valid_file_kind(kind)) return fail(error, "bad event kind " + std::to_string(kind));
      e.kind = static_cast<EventKind>(kind);
      e.thread_index = run_thread[r];
      uint64_t v = 0;
      if (!varint::get(tp, tend, &v)) return fail(error, "bad varint in ts column");
      prev += static_cast<uint64_t>(varint::unzigzag(v));  // unsigned: wraps, never UB
      e.ts_ns = prev;
      if (kind_has_location(e.kind)) {
        if (!varint::get(lp, lend, &v)) return fail(error, "bad varint in locs column");
        if (v > UINT32_MAX) return fail(error, "location id out of range");
        e.loc = static_cast<uint32_t>(v);
      } else if (kind_has_stack(e.kind)) {
        if (!varint::get(lp, lend, &v)) return fail(error, "bad varint in locs column");
        if (v > UINT32_MAX) return fail(error, "stack id out of range");
        e.loc = static_cast<uint32_t>(v);
      }
      if (e.kind == EventKind::Counter) {
        if (vend - vp < 8) return fail(error, "values column too short");
        for (int b = 0; b < 8; ++b) e.value |= static_cast<uint64_t>(vp[b]) << (8 * b);
        vp += 8;
      } else if (kind_has_value(e.kind)) {
        if (!varint::get(vp, vend, &e.value)) return fail(error, "bad varint in values column");
        if (kind_value_is_location(e.kind) && e.value > UINT32_MAX)
          return fail(error, "argument value id out of range");
      }
      if (kind_is_memory(e.kind)) {
        if (!varint::get(ap, aend, &v)) return fail(error, "bad varint in addresses column");
        prev_address += static_cast<uint64_t>(varint::unzigzag(v));
        e.address = prev_address;
      }
      out.events.push_back(e);
    }
  }
  if (tp != tend) return fail(error, "trailing bytes in ts column");
  if (lp != lend) return fail(error, "trailing bytes in locs column");
  if (vp != vend) return fail(error, "trailing bytes in values column");
  if (ap != aend) return fail(error, "trailing bytes in addresses column");
  return true;
}

bool decode_stacks(const fb::Segment& seg, DecodedSegment& out, std::string* error) {
  const auto* stacks = seg.stacks();
  if (stacks == nullptr) return true;
  out.stacks.reserve(stacks->size());
  for (const fb::Stack* st : *stacks) {
    if (st == nullptr) return fail(error, "null stack");
    if (st->id() == 0) return fail(error, "stack id 0");
    StackTrace trace;
    trace.id = st->id();
    const auto bytes = column(st->frames());
    const uint8_t* p = bytes.data();
    const uint8_t* const end = p + bytes.size();
    uint64_t prev = 0;
    while (p != end) {
      uint64_t v = 0;
      if (!varint::get(p, end, &v)) return fail(error, "stack " + std::to_string(trace.id) + ": bad varint");
      if (trace.frames.size() >= kMaxSampleFrames) return fail(error, "stack " + std::to_string(trace.id) + ": too deep");
      prev += static_cast<uint64_t>(varint::unzigzag(v));
      trace.frames.push_back(prev);
    }
    out.stacks.push_back(std::move(trace));
  }
  return true;
}

bool decode_modules(const fb::Segment& seg, const FileStrings& table, DecodedSegment& out, std::string* error) {
  const auto* mods = seg.modules();
  if (mods == nullptr) return true;
  out.modules.reserve(mods->size());
  for (const fb::Module* m : *mods) {
    if (m == nullptr) return fail(error, "null module");
    if (m->id() == 0) return fail(error, "module id 0");
    if (m->path() >= table.size()) return fail(error, "module " + std::to_string(m->id()) + ": string id out of range");
    ModuleInfo mi;
    mi.id = m->id();
    mi.path = table.lookup(m->path());
    if (m->build_id()) mi.build_id = m->build_id()->str();
    mi.base = m->base();
    mi.start = m->start();
    mi.end = m->end();
    mi.file_offset = m->file_offset();
    out.modules.push_back(std::move(mi));
  }
  return true;
}

void decode_sampler(const fb::Segment& seg, DecodedSegment& out) {
  const fb::Sampler* sm = seg.sampler();
  if (sm == nullptr) return;
  SamplerState st;
  if (sm->mechanism()) st.mechanism = sm->mechanism()->str();
  if (sm->detail()) st.detail = sm->detail()->str();
  st.hz = sm->hz();
  out.sampler = std::move(st);
}

void decode_rank(const fb::Segment& seg, DecodedSegment& out) {
  const fb::Rank* r = seg.rank();
  if (r == nullptr) return;
  RankInfo info;
  info.rank = r->rank() < 0 ? -1 : r->rank();
  info.local_rank = r->local_rank() < 0 ? -1 : r->local_rank();
  info.world_size = r->world_size() < 0 ? -1 : r->world_size();
  if (r->job_id()) info.job_id = r->job_id()->str();
  if (r->source()) info.source = r->source()->str();
  out.rank = std::move(info);
}

}  // namespace

bool decode_segment(const format::FrameHeader& header, std::span<const uint8_t> payload,
                    std::vector<std::string>& strings_so_far, DecodedSegment& out, std::string* error) {
  out = DecodedSegment{};
  out.header = header;

  std::vector<uint8_t> raw;
  if (!decode_payload(header, payload, raw, error)) return false;
  out.raw_bytes = raw.size();
  if (header.flags & format::kFrameCrash) {
    // Written by the fatal-signal handler: a payload of its own (format.h).
    if (header.flags & format::kFrameZstd) return fail(error, "compressed crash segment");
    return crash_segment::decode(raw, out, error);
  }

  flatbuffers::Verifier verifier(raw.data(), raw.size());
  if (!fb::VerifySegmentBuffer(verifier)) return fail(error, "flatbuffers verification failed");
  const fb::Segment& seg = *fb::GetSegment(raw.data());

  // The tables that name strings come after the strings; the rest in the
  // order a reader has always checked them, so a segment with several faults
  // reports the same one.
  FileStrings strings(header, strings_so_far);
  decode_process(seg, out);
  decode_clock(seg, out);
  if (!decode_strings(seg, strings, out, error)) return false;
  if (!decode_locations(seg, strings, out, error)) return false;
  if (!decode_threads(seg, out, error)) return false;
  if (!decode_modules(seg, strings, out, error)) return false;
  if (!decode_stacks(seg, out, error)) return false;
  decode_sampler(seg, out);
  decode_rank(seg, out);
  if (!gpu_codec::decode(seg, strings.size(), [&](uint32_t id) -> const std::string& { return strings.lookup(id); },
                         out, error))
    return false;
  if (!decode_events(seg, header, out, error)) return false;

  // Commit the string table only now that everything checked out.
  strings.commit();
  return true;
}

}  // namespace ringprof
