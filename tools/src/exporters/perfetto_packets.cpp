#include "exporters/perfetto_packets.h"

namespace ringprof::internal {

namespace {
constexpr int kLengthDelimited = 2;
constexpr int kTracePacketField = pf::Trace::kPacketFieldNumber;
constexpr uint32_t kMonotonic = pf::BUILTIN_CLOCK_MONOTONIC;
}  // namespace

Sequence PacketWriter::new_sequence(bool delta_clock, uint64_t default_track) {
  Sequence s;
  s.id = next_sequence_++;
  s.delta_clock = delta_clock;
  s.default_track = default_track;
  return s;
}

void PacketWriter::start(Sequence& seq) {
  // The sequence's first packet: its interning state starts empty, and its
  // defaults say which clock its timestamps are on and which track its
  // events go to when they name none.
  seq.started = true;
  pf::TracePacket p;
  p.set_trusted_packet_sequence_id(seq.id);
  p.set_sequence_flags(pf::TracePacket::SEQ_INCREMENTAL_STATE_CLEARED);
  p.set_first_packet_on_sequence(true);
  pf::TracePacketDefaults* d = p.mutable_trace_packet_defaults();
  d->set_timestamp_clock_id(seq.delta_clock ? kDeltaClock : kMonotonic);
  if (seq.default_track) d->mutable_track_event_defaults()->set_track_uuid(seq.default_track);
  if (seq.delta_clock) {
    // kDeltaClock starts at 0 and so equals CLOCK_MONOTONIC throughout.
    pf::ClockSnapshot* c = p.mutable_clock_snapshot();
    pf::ClockSnapshot::Clock* delta = c->add_clocks();
    delta->set_clock_id(kDeltaClock);
    delta->set_timestamp(0);
    delta->set_is_incremental(true);
    pf::ClockSnapshot::Clock* mono = c->add_clocks();
    mono->set_clock_id(kMonotonic);
    mono->set_timestamp(0);
  }
  message_.clear();
  p.AppendToString(&message_);
  append_packet(message_);
}

void PacketWriter::write(Sequence& seq, pf::TracePacket& packet) {
  if (!seq.started) start(seq);
  packet.set_trusted_packet_sequence_id(seq.id);
  if (packet.has_timestamp() && seq.delta_clock) {
    // Generated packets with a time are written on the absolute clock.
    packet.set_timestamp_clock_id(kMonotonic);
  }
  message_.clear();
  packet.AppendToString(&message_);
  append_packet(message_);
}

void PacketWriter::timestamp(ProtoBytes& p, Sequence& seq, uint64_t ts_ns) {
  if (seq.delta_clock && ts_ns >= seq.last_ns) {
    p.uint(pf::TracePacket::kTimestampFieldNumber, ts_ns - seq.last_ns);
    seq.last_ns = ts_ns;
    return;
  }
  p.uint(pf::TracePacket::kTimestampFieldNumber, ts_ns);
  if (seq.delta_clock) p.uint(pf::TracePacket::kTimestampClockIdFieldNumber, kMonotonic);
}

void PacketWriter::event(Sequence& seq, uint64_t ts_ns, const EventFields& f, const pf::InternedData* interned) {
  if (!seq.started) start(seq);
  event_.clear();
  ProtoBytes e(event_);
  if (f.category_iid) e.uint(pf::TrackEvent::kCategoryIidsFieldNumber, f.category_iid);
  if (!f.annotations.empty()) event_.append(f.annotations);
  e.uint(pf::TrackEvent::kTypeFieldNumber, static_cast<uint64_t>(f.type));
  if (f.name_iid) e.uint(pf::TrackEvent::kNameIidFieldNumber, f.name_iid);
  else if (!f.name.empty()) e.bytes(pf::TrackEvent::kNameFieldNumber, f.name);
  if (f.track_uuid) e.uint(pf::TrackEvent::kTrackUuidFieldNumber, f.track_uuid);
  if (f.has_int) e.sint64_as_int(pf::TrackEvent::kCounterValueFieldNumber, f.int_value);
  else if (f.has_double) e.dbl(pf::TrackEvent::kDoubleCounterValueFieldNumber, f.double_value);
  if (f.source_location_iid) e.uint(pf::TrackEvent::kSourceLocationIidFieldNumber, f.source_location_iid);
  if (f.has_flow) {
    e.fixed64(f.terminating_flow ? pf::TrackEvent::kTerminatingFlowIdsFieldNumber : pf::TrackEvent::kFlowIdsFieldNumber,
              f.flow_id);
  }

  packet_.clear();
  ProtoBytes p(packet_);
  timestamp(p, seq, ts_ns);
  p.uint(pf::TracePacket::kTrustedPacketSequenceIdFieldNumber, seq.id);
  if (interned && interned->ByteSizeLong() != 0) {
    message_.clear();
    interned->AppendToString(&message_);
    p.bytes(pf::TracePacket::kInternedDataFieldNumber, message_);
    // Interned entries are incremental state: a reader that lost the
    // sequence's start must not trust them.
    p.uint(pf::TracePacket::kSequenceFlagsFieldNumber, pf::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  }
  p.bytes(pf::TracePacket::kTrackEventFieldNumber, event_);
  append_packet(packet_);
}

uint64_t PacketWriter::name_iid(Sequence& seq, std::string_view name, pf::InternedData& interned) {
  auto it = seq.names.find(name);
  if (it != seq.names.end()) return it->second;
  const uint64_t iid = seq.next_iid++;
  seq.names.emplace(std::string(name), iid);
  pf::EventName* n = interned.add_event_names();
  n->set_iid(iid);
  n->set_name(std::string(name));
  return iid;
}

uint64_t PacketWriter::category_iid(Sequence& seq, std::string_view name, pf::InternedData& interned) {
  auto it = seq.categories.find(name);
  if (it != seq.categories.end()) return it->second;
  const uint64_t iid = seq.next_iid++;
  seq.categories.emplace(std::string(name), iid);
  pf::EventCategory* c = interned.add_event_categories();
  c->set_iid(iid);
  c->set_name(std::string(name));
  return iid;
}

uint64_t PacketWriter::annotation_name_iid(Sequence& seq, std::string_view name, pf::InternedData& interned) {
  auto it = seq.annotation_names.find(name);
  if (it != seq.annotation_names.end()) return it->second;
  const uint64_t iid = seq.next_iid++;
  seq.annotation_names.emplace(std::string(name), iid);
  pf::DebugAnnotationName* n = interned.add_debug_annotation_names();
  n->set_iid(iid);
  n->set_name(std::string(name));
  return iid;
}

void PacketWriter::append_packet(std::string_view packet) {
  ProtoBytes b(buffer_);
  b.tag(kTracePacketField, kLengthDelimited);
  b.varint(packet.size());
  buffer_.append(packet);
  ++packets_;
  if (buffer_.size() >= kFlushBytes) flush();
}

void PacketWriter::flush() {
  if (buffer_.empty()) return;
  out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
  bytes_ += buffer_.size();
  buffer_.clear();
}

void Annotations::begin(std::string_view name) {
  one_.clear();
  ProtoBytes(one_).uint(pf::DebugAnnotation::kNameIidFieldNumber, w_.annotation_name_iid(seq_, name, interned_));
}

void Annotations::end() {
  ProtoBytes(bytes_).bytes(pf::TrackEvent::kDebugAnnotationsFieldNumber, one_);
}

void Annotations::add(std::string_view name, uint64_t v) {
  begin(name);
  ProtoBytes(one_).uint(pf::DebugAnnotation::kUintValueFieldNumber, v);
  end();
}

void Annotations::add_int(std::string_view name, int64_t v) {
  begin(name);
  ProtoBytes(one_).sint64_as_int(pf::DebugAnnotation::kIntValueFieldNumber, v);
  end();
}

void Annotations::add(std::string_view name, double v) {
  begin(name);
  ProtoBytes(one_).dbl(pf::DebugAnnotation::kDoubleValueFieldNumber, v);
  end();
}

void Annotations::add(std::string_view name, std::string_view v) {
  begin(name);
  ProtoBytes(one_).bytes(pf::DebugAnnotation::kStringValueFieldNumber, v);
  end();
}

void Annotations::add_bool(std::string_view name, bool v) {
  begin(name);
  ProtoBytes(one_).uint(pf::DebugAnnotation::kBoolValueFieldNumber, v ? 1 : 0);
  end();
}

}  // namespace ringprof::internal
