// The crash segment: written inside a signal handler, read like any segment.
#include "codec/crash_segment.h"

#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>

#include "ringprof/format.h"

namespace ringprof::crash_segment {
namespace {

// One pass of the encoder: either measuring (crc, size, counts) or writing.
struct Pass {
  Scratch& scratch;
  bool writing = false;
  int fd = -1;
  bool failed = false;
  size_t used = 0;        // bytes in scratch.buffer not yet written
  uint64_t bytes = 0;     // payload bytes produced
  uLong crc = 0;
  uint32_t events = 0;
  uint64_t first_ns = 0, last_ns = 0;
  uint32_t next_location = 1;

  void flush() noexcept {
    if (!writing || used == 0 || failed) {
      used = 0;
      return;
    }
    const uint8_t* p = scratch.buffer;
    size_t left = used;
    while (left > 0) {
      const ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        failed = true;
        break;
      }
      p += n;
      left -= static_cast<size_t>(n);
    }
    used = 0;
  }
  void put(const void* data, size_t n) noexcept {
    const auto* p = static_cast<const uint8_t*>(data);
    crc = crc32(crc, p, static_cast<uInt>(n));
    bytes += n;
    if (!writing) return;
    while (n > 0) {
      if (used == Scratch::kBufferBytes) flush();
      const size_t take = n < Scratch::kBufferBytes - used ? n : Scratch::kBufferBytes - used;
      std::memcpy(scratch.buffer + used, p, take);
      used += take;
      p += take;
      n -= take;
    }
  }
  template <typename T>
  void put_le(T v) noexcept {
    uint8_t b[sizeof(T)];
    for (size_t i = 0; i < sizeof(T); ++i) b[i] = static_cast<uint8_t>(static_cast<uint64_t>(v) >> (8 * i));
    put(b, sizeof b);
  }
  void put_string(const char* s, size_t n) noexcept {
    if (s && n) put(s, n);
  }

  // The location id for an event's name, writing its record the first time.
  uint32_t location(const CrashEvent& e) noexcept {
    if (e.name == nullptr && e.function == nullptr) return 0;
    Scratch::Entry* slot = nullptr;
    if (e.key != nullptr) {
      size_t h = (reinterpret_cast<uintptr_t>(e.key) >> 3) * 0x9E3779B97F4A7C15ull;
      for (size_t probe = 0; probe < Scratch::kLocationSlots; ++probe) {
        Scratch::Entry& c = scratch.locations[(h + probe) & (Scratch::kLocationSlots - 1)];
        if (c.key == e.key) return c.id;
        if (c.key == nullptr) {
          slot = &c;
          break;
        }
      }
    }
    const uint32_t id = format::kCrashLocationBase | next_location++;
    if (slot) *slot = {e.key, id};  // a full table only costs repeated records
    const size_t fn_len = e.function ? std::strlen(e.function) : 0;
    const size_t file_len = e.file ? std::strlen(e.file) : 0;
    auto cap = [](size_t n) { return static_cast<uint16_t>(n > 0xffff ? 0xffff : n); };
    put_le<uint8_t>(format::kCrashTagLocation);
    put_le<uint32_t>(id);
    put_le<uint16_t>(cap(e.name_len));
    put_le<uint16_t>(cap(fn_len));
    put_le<uint16_t>(cap(file_len));
    put_le<uint32_t>(e.line);
    put_string(e.name, cap(e.name_len));
    put_string(e.function, cap(fn_len));
    put_string(e.file, cap(file_len));
    return id;
  }
};

void encode(Pass& pass, const CrashInfo& info, const CrashEventSource& source) noexcept {
  std::memset(pass.scratch.locations, 0, sizeof pass.scratch.locations);
  pass.put_le<uint32_t>(format::kCrashMagic);
  pass.put_le<uint32_t>(format::kCrashVersion);
  pass.put_le<uint32_t>(static_cast<uint32_t>(info.signo));
  pass.put_le<uint32_t>(static_cast<uint32_t>(info.code));
  pass.put_le<uint32_t>(info.tid);
  pass.put_le<uint32_t>(info.thread_index);
  pass.put_le<uint64_t>(info.fault_address);
  pass.put_le<uint64_t>(info.ts_ns);
  source.for_each_thread(
      [](void* ctx, const CrashThread& t) {
        Pass& p = *static_cast<Pass*>(ctx);
        const size_t len = t.name_len > 0xffff ? 0xffff : t.name_len;
        p.put_le<uint8_t>(format::kCrashTagThread);
        p.put_le<uint32_t>(t.index);
        p.put_le<uint32_t>(t.tid);
        p.put_le<uint8_t>(t.name_from_rename ? 1 : 0);
        p.put_le<uint16_t>(static_cast<uint16_t>(len));
        p.put_string(t.name, len);
      },
      &pass);
  source.for_each_event(
      [](void* ctx, const CrashEvent& e) {
        Pass& p = *static_cast<Pass*>(ctx);
        const uint32_t loc = kind_has_location(e.kind) ? p.location(e) : 0;
        p.put_le<uint8_t>(format::kCrashTagEvent);
        p.put_le<uint8_t>(static_cast<uint8_t>(e.kind));
        p.put_le<uint32_t>(e.thread_index);
        p.put_le<uint64_t>(e.ts_ns);
        p.put_le<uint32_t>(loc);
        p.put_le<uint64_t>(e.value);
        ++p.events;
        if (p.first_ns == 0 || e.ts_ns < p.first_ns) p.first_ns = e.ts_ns;
        if (e.ts_ns > p.last_ns) p.last_ns = e.ts_ns;
      },
      &pass);
}

// ---- decoding ----

struct Reader {
  const uint8_t* p;
  const uint8_t* end;
  bool ok = true;
  template <typename T>
  T get() {
    if (static_cast<size_t>(end - p) < sizeof(T)) {
      ok = false;
      return T{};
    }
    uint64_t v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
    p += sizeof(T);
    return static_cast<T>(v);
  }
  std::string bytes(size_t n) {
    if (static_cast<size_t>(end - p) < n) {
      ok = false;
      return {};
    }
    std::string s(reinterpret_cast<const char*>(p), n);
    p += n;
    return s;
  }
};

}  // namespace

bool write(int fd, const CrashInfo& info, const CrashEventSource& source, uint32_t pid, uint64_t sequence,
           Scratch& scratch) noexcept {
  Pass measure{scratch};
  measure.crc = crc32(0L, Z_NULL, 0);
  encode(measure, info, source);
  if (measure.bytes > format::kMaxPayload) return false;

  format::FrameHeader h;
  h.flags = format::kFrameCrash | format::kFrameUncompressed;
  h.stored_size = static_cast<uint32_t>(measure.bytes);
  h.raw_size = h.stored_size;
  h.event_count = measure.events;
  h.sequence = sequence;
  h.first_ns = measure.first_ns;
  h.last_ns = measure.last_ns;
  h.pid = pid;
  h.payload_crc32 = static_cast<uint32_t>(measure.crc);

  Pass out{scratch};
  out.writing = true;
  out.fd = fd;
  out.crc = crc32(0L, Z_NULL, 0);
  uint8_t header[format::kHeaderSize];
  format::write_frame_header(h, header);
  std::memcpy(scratch.buffer, header, sizeof header);  // goes out with the payload's first bytes
  out.used = sizeof header;
  encode(out, info, source);
  out.flush();
  // The same bytes both times, or the frame would fail its checksum.
  return !out.failed && out.bytes == measure.bytes && out.crc == measure.crc;
}

bool decode(std::span<const uint8_t> payload, DecodedSegment& out, std::string* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = "crash segment: " + why;
    return false;
  };
  Reader r{payload.data(), payload.data() + payload.size()};
  if (r.get<uint32_t>() != format::kCrashMagic || !r.ok) return fail("bad magic");
  const uint32_t version = r.get<uint32_t>();
  if (version < 1 || version > format::kCrashVersion) return fail("unsupported version " + std::to_string(version));
  CrashInfo ci;
  ci.signo = static_cast<int>(r.get<uint32_t>());
  ci.code = static_cast<int>(r.get<uint32_t>());
  ci.tid = r.get<uint32_t>();
  ci.thread_index = r.get<uint32_t>();
  ci.fault_address = r.get<uint64_t>();
  ci.ts_ns = r.get<uint64_t>();
  if (!r.ok) return fail("short header");
  while (r.p != r.end) {
    const uint8_t tag = r.get<uint8_t>();
    if (tag == format::kCrashTagThread) {
      DecodedThread t;
      t.index = r.get<uint32_t>();
      t.tid = r.get<uint32_t>();
      const uint8_t flags = r.get<uint8_t>();
      const uint16_t len = r.get<uint16_t>();
      t.name = r.bytes(len);
      // Only a rename seen in the ring is newer than what the files hold; a
      // kernel name is offered without overriding (the reader takes it only
      // for a thread it knows no name of).
      t.has_name = (flags & 1) != 0 && !t.name.empty();
      out.threads.push_back(std::move(t));
    } else if (tag == format::kCrashTagLocation) {
      Location l;
      l.id = r.get<uint32_t>();
      const uint16_t nl = r.get<uint16_t>(), fl = r.get<uint16_t>(), il = r.get<uint16_t>();
      l.line = r.get<uint32_t>();
      l.name = r.bytes(nl);
      l.function = r.bytes(fl);
      l.file = r.bytes(il);
      if (l.id < format::kCrashLocationBase) return fail("location id out of range");
      out.locations.push_back(std::move(l));
    } else if (tag == format::kCrashTagEvent) {
      DecodedEvent e;
      const uint8_t kind = r.get<uint8_t>();
      if (!valid_crash_kind(kind)) return fail("bad event kind " + std::to_string(kind));
      e.kind = static_cast<EventKind>(kind);
      e.thread_index = r.get<uint32_t>();
      e.ts_ns = r.get<uint64_t>();
      e.loc = r.get<uint32_t>();
      e.value = r.get<uint64_t>();
      if (!kind_has_location(e.kind)) e.loc = 0;
      if (!kind_has_value(e.kind)) e.value = 0;
      out.events.push_back(e);
    } else {
      return fail("unknown record tag " + std::to_string(tag));
    }
    if (!r.ok) return fail("truncated record");
  }
  if (out.events.size() != out.header.event_count) return fail("event count does not match the header");
  out.crash = ci;
  return true;
}

}  // namespace ringprof::crash_segment
