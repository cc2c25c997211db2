#include "exporters/perfetto_packets.h"
#include "common/json_text.h"

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

void PacketWriter::child_track(Sequence& seq, uint64_t uuid, uint64_t parent, const std::string& name,
                               TrackKind kind) {
  pf::TracePacket p;
  pf::TrackDescriptor* d = p.mutable_track_descriptor();
  d->set_uuid(uuid);
  d->set_parent_uuid(parent);
  d->set_name(internal::valid_utf8(name));
  if (kind != TrackKind::Slices) {
    pf::CounterDescriptor* c = d->mutable_counter();
    if (kind == TrackKind::BytesCounter) c->set_unit(pf::CounterDescriptor::UNIT_SIZE_BYTES);
  }
  write(seq, p);
}

void PacketWriter::timestamp(RawBytes& p, Sequence& seq, uint64_t ts_ns) {
  if (seq.delta_clock && ts_ns >= seq.last_ns) {
    p.uint(pf::TracePacket::kTimestampFieldNumber, ts_ns - seq.last_ns);
    seq.last_ns = ts_ns;
    return;
  }
  p.uint(pf::TracePacket::kTimestampFieldNumber, ts_ns);
  if (seq.delta_clock) p.uint(pf::TracePacket::kTimestampClockIdFieldNumber, kMonotonic);
}

// The TrackEvent's fields but the annotations and a name not interned.
void PacketWriter::event_fields(RawBytes& e, const EventFields& f) {
  if (f.category_iid) e.uint(pf::TrackEvent::kCategoryIidsFieldNumber, f.category_iid);
  e.append(f.annotations);
  e.uint(pf::TrackEvent::kTypeFieldNumber, static_cast<uint64_t>(f.type));
  if (f.name_iid) {
    e.uint(pf::TrackEvent::kNameIidFieldNumber, f.name_iid);
  } else if (!f.name.empty()) {
    e.tag(pf::TrackEvent::kNameFieldNumber, kLengthDelimited);
    e.varint(f.name.size());
    e.append(f.name);
  }
  if (f.track_uuid) e.uint(pf::TrackEvent::kTrackUuidFieldNumber, f.track_uuid);
  if (f.has_int) {
    e.uint(pf::TrackEvent::kCounterValueFieldNumber, static_cast<uint64_t>(f.int_value));  // int64: two's complement
  } else if (f.has_double) {
    uint64_t bits;
    __builtin_memcpy(&bits, &f.double_value, sizeof bits);
    e.fixed64(pf::TrackEvent::kDoubleCounterValueFieldNumber, bits);
  }
  if (f.source_location_iid) e.uint(pf::TrackEvent::kSourceLocationIidFieldNumber, f.source_location_iid);
  if (f.has_flow) {
    e.fixed64(f.terminating_flow ? pf::TrackEvent::kTerminatingFlowIdsFieldNumber : pf::TrackEvent::kFlowIdsFieldNumber,
              f.flow_id);
  }
}

void PacketWriter::event(Sequence& seq, uint64_t ts_ns, const EventFields& f, const Interned* interned) {
  if (!f.name.empty() && !internal::is_valid_utf8(f.name)) {
    // A name not interned goes out as it is: it must be valid UTF-8 too.
    const std::string valid = internal::valid_utf8(f.name);
    EventFields g = f;
    g.name = valid;
    return event(seq, ts_ns, g, interned);
  }
  if (!seq.started) start(seq);
  if (f.annotations.empty() && f.name.empty() && !(interned && interned->data())) {
    // Most events (slice begins and ends, counters): the packet is at most
    // 91 bytes (head 22: timestamp 11, clock 3, sequence 6, event tag and
    // length 2; event 69: category 11, type 2, name 11, track 11, counter
    // 12, source location 12, flow 10), so each length is one byte and
    // everything is written in place.
    char* const at = room(128);
    RawBytes p{at + 2};
    timestamp(p, seq, ts_ns);
    p.uint(pf::TracePacket::kTrustedPacketSequenceIdFieldNumber, seq.id);
    p.tag(pf::TracePacket::kTrackEventFieldNumber, kLengthDelimited);
    char* const event_length = p.p++;
    event_fields(p, f);
    *event_length = static_cast<char>(p.p - event_length - 1);
    at[0] = static_cast<char>(kTracePacketField << 3 | kLengthDelimited);
    at[1] = static_cast<char>(p.p - at - 2);
    used_ += static_cast<size_t>(p.p - at);
    ++packets_;
    return;
  }
  // The TrackEvent: a handful of small fields, the annotations and a name
  // not interned; 11 bytes per tag + varint at most.
  char local[256];
  const size_t most = 12 * 11 + f.annotations.size() + f.name.size();
  char* event = local;
  if (most > sizeof local) {
    event_.resize(most);
    event = event_.data();
  }
  RawBytes e{event};
  event_fields(e, f);
  const size_t event_size = static_cast<size_t>(e.p - event);

  // The packet's own fields before the event.
  char head[64];
  RawBytes h{head};
  timestamp(h, seq, ts_ns);
  h.uint(pf::TracePacket::kTrustedPacketSequenceIdFieldNumber, seq.id);
  std::string_view defined;
  if (interned && interned->data()) {
    message_.clear();
    interned->data()->AppendToString(&message_);
    defined = message_;
    h.tag(pf::TracePacket::kInternedDataFieldNumber, kLengthDelimited);
    h.varint(defined.size());
  }
  const size_t head_size = static_cast<size_t>(h.p - head);
  char tail[32];  // after the interned entries: the flags, then the event's tag and length
  RawBytes t{tail};
  if (!defined.empty()) {
    // Interned entries are incremental state: a reader that lost the
    // sequence's start must not trust them.
    t.uint(pf::TracePacket::kSequenceFlagsFieldNumber, pf::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  }
  t.tag(pf::TracePacket::kTrackEventFieldNumber, kLengthDelimited);
  t.varint(event_size);
  const size_t tail_size = static_cast<size_t>(t.p - tail);
  const size_t packet_size = head_size + defined.size() + tail_size + event_size;

  char frame[16];
  RawBytes fr{frame};
  fr.tag(kTracePacketField, kLengthDelimited);
  fr.varint(packet_size);
  const size_t frame_size = static_cast<size_t>(fr.p - frame);
  ++packets_;
  if (char* at = room(frame_size + packet_size)) {
    RawBytes out{at};
    out.append({frame, frame_size});
    out.append({head, head_size});
    out.append(defined);
    out.append({tail, tail_size});
    out.append({event, event_size});
    used_ += frame_size + packet_size;
    return;
  }
  for (std::string_view part : {std::string_view(frame, frame_size), std::string_view(head, head_size), defined,
                                std::string_view(tail, tail_size), std::string_view(event, event_size)})
    write_through(part);
}

char* PacketWriter::room(size_t n) {
  if (used_ + n > kBufferBytes) flush();
  return n <= kBufferBytes ? buffer_.get() + used_ : nullptr;
}

void PacketWriter::write_through(std::string_view bytes) {
  out_.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes_ += bytes.size();
}

void PacketWriter::set_name(Sequence& seq, std::string_view name, Interned& interned, EventFields& f) {
  f.name_iid = name_iid(seq, name, interned);
  if (!f.name_iid) f.name = name;
}

uint64_t PacketWriter::name_iid(Sequence& seq, std::string_view name, Interned& interned) {
  return intern(
      seq, seq.names, name,
      [&](uint64_t iid) {
        pf::EventName* n = interned.get().add_event_names();
        n->set_iid(iid);
        n->set_name(internal::valid_utf8(name));
      },
      kMaxInternedNames);
}

uint64_t PacketWriter::category_iid(Sequence& seq, std::string_view name, Interned& interned) {
  return intern(seq, seq.categories, name, [&](uint64_t iid) {
    pf::EventCategory* c = interned.get().add_event_categories();
    c->set_iid(iid);
    c->set_name(internal::valid_utf8(name));
  });
}

uint64_t PacketWriter::annotation_name_iid(Sequence& seq, std::string_view name, Interned& interned) {
  return intern(seq, seq.annotation_names, name, [&](uint64_t iid) {
    pf::DebugAnnotationName* n = interned.get().add_debug_annotation_names();
    n->set_iid(iid);
    n->set_name(internal::valid_utf8(name));
  });
}

void PacketWriter::append_packet(std::string_view packet) {
  char frame[16];
  RawBytes fr{frame};
  fr.tag(kTracePacketField, kLengthDelimited);
  fr.varint(packet.size());
  const size_t frame_size = static_cast<size_t>(fr.p - frame);
  ++packets_;
  if (char* at = room(frame_size + packet.size())) {
    RawBytes out{at};
    out.append({frame, frame_size});
    out.append(packet);
    used_ += frame_size + packet.size();
    return;
  }
  write_through({frame, frame_size});
  write_through(packet);
}

void PacketWriter::flush() {
  if (used_ == 0) return;
  write_through({buffer_.get(), used_});
  used_ = 0;
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

void Annotations::add(std::string_view name, double v) {
  begin(name);
  ProtoBytes(one_).dbl(pf::DebugAnnotation::kDoubleValueFieldNumber, v);
  end();
}

void Annotations::add(std::string_view name, std::string_view v) {
  begin(name);
  ProtoBytes(one_).bytes(pf::DebugAnnotation::kStringValueFieldNumber, internal::valid_utf8(v));
  end();
}

void Annotations::add_bool(std::string_view name, bool v) {
  begin(name);
  ProtoBytes(one_).uint(pf::DebugAnnotation::kBoolValueFieldNumber, v ? 1 : 0);
  end();
}

}  // namespace ringprof::internal
