// perfetto_packets.h (internal) — writes Perfetto trace packets to a stream,
// one at a time, and keeps each packet sequence's state.
//
// Layout of the output: a Perfetto trace is the message Trace, whose only
// field is `repeated TracePacket packet = 1`; on the wire that is each packet
// as a length-delimited field 1, one after another, so the writer appends
// packets and never holds more than one (plus an output buffer of ~1 MiB).
//
// Sequences: every packet names a trusted_packet_sequence_id. Interned
// entries (names, categories, source locations, frames, callstacks) and
// sequence-scoped clocks belong to one sequence, so a Sequence keeps its own
// interning tables and its last timestamp. Two kinds are used:
//   - a thread sequence: the thread's own events, in the thread's recorded
//     order. Its default track is the thread's track and its timestamps are
//     deltas on an incremental clock (kDeltaClock, defined by the sequence's
//     first packets as equal to CLOCK_MONOTONIC), which is what makes the
//     format small: a slice begin or end is 11 to 20 bytes. A timestamp that
//     goes backwards (it happens: a drop gap's begin, a sample) is written
//     absolute, on CLOCK_MONOTONIC, without touching the delta clock.
//   - a process sequence: descriptors, samples, memory and GPU records, in
//     no particular time order, every timestamp absolute (CLOCK_MONOTONIC).
// trace_processor sorts events by time, so sequences may interleave freely.
//
// Packets that occur once per track or per name are built with the classes
// protoc generates from schemas/perfetto_trace.proto; the per-event packets
// (slices, instants, counters, flows) are encoded here by hand with the field
// numbers those classes state, since building a message object per event
// would cost more than the whole JSON writer does.
#pragma once

#include <cstdint>
#include <cstddef>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <unordered_map>

#include "perfetto_trace.pb.h"

namespace ringprof::internal {

namespace pf = ::ringprof::perfetto;

// Perfetto's flow ids are global to the trace, ringprof's are per process
// (and a GPU launch's correlation id per process too): each is mixed with
// its pid and its kind (0 flows, 1 GPU launches) into one 64-bit id.
inline uint64_t process_flow_id(uint32_t pid, uint64_t id, uint64_t kind = 0) {
  uint64_t z = id + 0x9E3779B97F4A7C15ull * (uint64_t{pid} * 2 + kind + 1);  // splitmix64's finalizer
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Sequence-scoped clock ids are 64..127; this one counts ns since the
// previous packet of its sequence.
constexpr uint32_t kDeltaClock = 64;

// Writes protobuf wire-format fields at a pointer into memory the caller
// has made room in (at most 10 bytes per varint, 11 per tag + varint).
struct RawBytes {
  char* p;
  void varint(uint64_t v) {
    while (v >= 0x80) {
      *p++ = static_cast<char>(v | 0x80);
      v >>= 7;
    }
    *p++ = static_cast<char>(v);
  }
  void tag(int field, int wire_type) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type)); }
  void uint(int field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void fixed64(int field, uint64_t v) {
    tag(field, 1);
    for (int i = 0; i < 8; ++i) *p++ = static_cast<char>(v >> (8 * i));
  }
  void append(std::string_view data) {
    if (data.empty()) return;  // (an empty view's data() may be null)
    __builtin_memcpy(p, data.data(), data.size());
    p += data.size();
  }
};

// Appends protobuf wire-format fields to a string (the rarer fields).
class ProtoBytes {
 public:
  explicit ProtoBytes(std::string& out) : out_(out) {}
  void varint(uint64_t v) {
    char tmp[10];
    RawBytes r{tmp};
    r.varint(v);
    out_.append(tmp, static_cast<size_t>(r.p - tmp));
  }
  void tag(int field, int wire_type) { varint(static_cast<uint64_t>(field) << 3 | static_cast<uint64_t>(wire_type)); }
  void uint(int field, uint64_t v) {
    tag(field, 0);
    varint(v);
  }
  void fixed64(int field, uint64_t v) {
    tag(field, 1);
    for (int i = 0; i < 8; ++i) out_.push_back(static_cast<char>(v >> (8 * i)));
  }
  void dbl(int field, double v) {
    uint64_t bits;
    static_assert(sizeof bits == sizeof v);
    __builtin_memcpy(&bits, &v, sizeof bits);
    fixed64(field, bits);
  }
  void bytes(int field, std::string_view data) {
    tag(field, 2);
    varint(data.size());
    out_.append(data);
  }

 private:
  std::string& out_;
};

// string → iid, looked up by string_view without building a string.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const noexcept { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, uint64_t, StringHash, std::equal_to<>>;

struct Sequence {
  uint32_t id = 0;
  bool started = false;      // its first packet (defaults, cleared state) is written
  bool delta_clock = false;  // a thread sequence: timestamps on kDeltaClock
  uint64_t default_track = 0;
  uint64_t last_ns = 0;      // kDeltaClock's value
  // Interning: what this sequence has defined, by key.
  StringMap names;
  StringMap categories;
  StringMap annotation_names;
  // By ringprof location id: its name's iid and its source location's (0: none).
  std::unordered_map<uint32_t, std::pair<uint64_t, uint64_t>> locations;
  uint64_t zone_category = 0;  // "ringprof", the category of every zone, once interned
  uint64_t next_iid = 1;  // one counter for every kind: iids only need to be unique per kind
};

// The interned entries a packet defines, made only when there is one (most
// packets define none, and an InternedData costs to build and to size).
class Interned {
 public:
  pf::InternedData& get() {
    if (!data_) data_ = std::make_unique<pf::InternedData>();
    return *data_;
  }
  const pf::InternedData* data() const { return data_.get(); }

 private:
  std::unique_ptr<pf::InternedData> data_;
};

// The iid of `key` in `table`, interned on `seq` at its first use, when
// `define(iid)` adds the entry to the packet's interned data; 0 once the
// table holds `cap` keys (the entry is then not interned).
template <typename Define>
uint64_t intern(Sequence& seq, StringMap& table, std::string_view key, Define define, size_t cap = SIZE_MAX) {
  auto it = table.find(key);
  if (it != table.end()) return it->second;
  if (table.size() >= cap) return 0;
  const uint64_t iid = seq.next_iid++;
  table.emplace(std::string(key), iid);
  define(iid);
  return iid;
}

// A track event in the making: the fields a hand-encoded event carries.
struct EventFields {
  pf::TrackEvent::Type type = pf::TrackEvent::TYPE_INSTANT;
  uint64_t track_uuid = 0;      // 0: the sequence's default track
  uint64_t name_iid = 0;        // or:
  std::string_view name;        // a name not worth interning (step N)
  uint64_t category_iid = 0;
  uint64_t source_location_iid = 0;
  bool has_double = false;
  double double_value = 0;
  bool has_int = false;
  int64_t int_value = 0;
  uint64_t flow_id = 0;
  bool has_flow = false;
  bool terminating_flow = false;
  // Debug annotations, already encoded (DebugAnnotation messages as field 4).
  std::string_view annotations;
};

class PacketWriter {
 public:
  explicit PacketWriter(std::ostream& out) : out_(out), buffer_(new char[kBufferBytes]) {}
  ~PacketWriter() { flush(); }

  Sequence new_sequence(bool delta_clock, uint64_t default_track);

  // A packet built with the generated classes, on `seq` (its sequence id set here).
  void write(Sequence& seq, pf::TracePacket& packet);
  // A track event at `ts_ns`, with what `interned` holds in the same packet.
  void event(Sequence& seq, uint64_t ts_ns, const EventFields& f, const Interned* interned = nullptr);

  // Interning on `seq`: the iid of a name, a category, a debug annotation
  // name; new entries are added to `interned`, to go out with the packet
  // that first uses them. name_iid() returns 0 once the sequence holds
  // kMaxInternedNames names (names made per event, "batch 17", must not grow
  // memory with the trace): set_name() then writes the name itself.
  uint64_t name_iid(Sequence& seq, std::string_view name, Interned& interned);
  // f.name_iid, or f.name = `name` (which must outlive the event() call).
  void set_name(Sequence& seq, std::string_view name, Interned& interned, EventFields& f);
  static constexpr size_t kMaxInternedNames = 1 << 14;
  uint64_t category_iid(Sequence& seq, std::string_view name, Interned& interned);
  uint64_t annotation_name_iid(Sequence& seq, std::string_view name, Interned& interned);

  // Describes a named track `uuid` under `parent`, on `seq`: a slice track,
  // or a counter track (in bytes or of no unit).
  enum class TrackKind { Slices, Counter, BytesCounter };
  void child_track(Sequence& seq, uint64_t uuid, uint64_t parent, const std::string& name, TrackKind kind);

  void flush();
  uint64_t packets() const { return packets_; }
  uint64_t bytes() const { return bytes_; }

 private:
  static constexpr size_t kBufferBytes = 1 << 20;
  void start(Sequence& seq);
  void append_packet(std::string_view packet);
  // Room for `n` more bytes in the buffer (flushing it first if need be);
  // null when `n` is larger than the whole buffer.
  char* room(size_t n);
  void write_through(std::string_view bytes);
  void timestamp(RawBytes& p, Sequence& seq, uint64_t ts_ns);
  static void event_fields(RawBytes& e, const EventFields& f);

  std::ostream& out_;
  std::unique_ptr<char[]> buffer_;  // packets not yet written, kBufferBytes
  size_t used_ = 0;
  std::string event_;    // scratch: one TrackEvent's bytes, when it is too large for the stack
  std::string message_;  // scratch: a serialized generated message
  uint32_t next_sequence_ = 1;
  uint64_t packets_ = 0;
  uint64_t bytes_ = 0;
};

// Encodes one debug annotation (name interned on `seq`) onto `out`, as field
// TrackEvent.debug_annotations.
class Annotations {
 public:
  Annotations(PacketWriter& w, Sequence& seq, Interned& interned) : w_(w), seq_(seq), interned_(interned) {}
  void add(std::string_view name, uint64_t v);
  void add(std::string_view name, double v);
  void add(std::string_view name, std::string_view v);
  void add_bool(std::string_view name, bool v);
  std::string_view bytes() const { return bytes_; }

 private:
  void begin(std::string_view name);
  void end();
  PacketWriter& w_;
  Sequence& seq_;
  Interned& interned_;
  std::string bytes_;
  std::string one_;
};

}  // namespace ringprof::internal
