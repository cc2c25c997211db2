// The drainer's second copy of a batch: its events as a segment's columns
// (BatchColumns in ringprof/sink.h), written beside the 32-byte events as
// each event is drained.
//
// Why: the writer thread runs on another core, and reading a batch's 32-byte
// events there cost it about as much per event as the drainer's own reading
// of the rings (docs/performance.md, "Background threads"). The columns take
// 3-5 bytes an event, and the drainer writes them from registers it already
// holds. The events stay: the crash flush names them through p0, and a
// user's sink may read them.
//
// Ownership as for the events: the drainer fills a BatchColumnData, moves it
// into the WriteJob with the batch, and gets an emptied one back (capacity
// kept). ColumnIds stays with the drainer: which ids the current batch has
// listed already.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "ringprof/event.h"
#include "ringprof/internal/varint.h"
#include "ringprof/sink.h"

namespace ringprof {

// One growable byte column. Room for a whole drain's worst case is made
// once, so each byte is a plain store, and the room is not initialised: only
// what is written is touched (a process that records slowly keeps few pages).
class ColumnBytes {
 public:
  ColumnBytes() = default;
  ColumnBytes(ColumnBytes&& o) noexcept
      : buf_(std::move(o.buf_)), cap_(std::exchange(o.cap_, 0)), size_(std::exchange(o.size_, 0)) {}
  ColumnBytes& operator=(ColumnBytes&& o) noexcept {
    buf_ = std::move(o.buf_);
    cap_ = std::exchange(o.cap_, 0);
    size_ = std::exchange(o.size_, 0);
    return *this;
  }

  size_t size() const noexcept { return size_; }
  const uint8_t* data() const noexcept { return buf_.get(); }
  void clear() noexcept { size_ = 0; }
  // Room for n more bytes; returns where they go (commit() says where the
  // writing ended).
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
  std::span<const uint8_t> span() const noexcept { return {buf_.get(), size_}; }

 private:
  std::unique_ptr<uint8_t[]> buf_;
  size_t cap_ = 0;
  size_t size_ = 0;
};

// Where the next event's bytes go in each column, and the run's previous
// time and address (the deltas' bases): kept in registers by the drain loop.
struct ColumnCursor {
  uint8_t* kinds;
  uint8_t* ts;
  uint8_t* locs;
  uint8_t* values;
  uint8_t* addresses;
  uint64_t prev_ts;
  uint64_t prev_address;
};

// Which ids the current batch has listed (BatchColumns::location_ids,
// stack_ids): a stamp per id, so asking costs one load and a compare.
class IdStamps {
 public:
  bool first_use(uint32_t id) {
    if (id < stamps_.size() && stamps_[id] == stamp_) return false;
    mark(id);
    return true;
  }
  void next_batch() {
    if (++stamp_ == 0) {  // after 2^32 batches: every stamp is stale again
      std::fill(stamps_.begin(), stamps_.end(), 0);
      stamp_ = 1;
    }
  }

 private:
  [[gnu::noinline]] void mark(uint32_t id) {
    if (id >= stamps_.size()) stamps_.resize(std::max<size_t>({size_t{id} + 1, stamps_.size() * 2, 1024}), 0);
    stamps_[id] = stamp_;
  }
  std::vector<uint32_t> stamps_;
  uint32_t stamp_ = 1;
};

class BatchColumnData {
 public:
  // Varint bytes an id (32 bits) or a 64-bit value can take at most.
  static constexpr size_t kIdBytes = 5;

  std::vector<uint32_t> location_ids;
  std::vector<uint32_t> stack_ids;

  size_t events() const noexcept { return kinds_.size(); }
  size_t runs() const noexcept { return run_ts_.size(); }

  // A run begins (the batch's runs gained one): the deltas start again.
  void open_run() {
    run_ts_.push_back(static_cast<uint32_t>(ts_.size()));
    prev_ts_ = prev_address_ = 0;
  }
  // The run just opened stayed empty and is taken back.
  void drop_run() noexcept { run_ts_.pop_back(); }

  // Room for n more events of the current run in every column.
  ColumnCursor reserve(size_t n) {
    return ColumnCursor{kinds_.room(n),
                        ts_.room(n * varint::kMaxBytes),
                        locs_.room(n * kIdBytes),
                        values_.room(n * varint::kMaxBytes),
                        addresses_.room(n * varint::kMaxBytes),
                        prev_ts_,
                        prev_address_};
  }
  // The events written through c are the batch's.
  void commit(const ColumnCursor& c) noexcept {
    kinds_.commit(c.kinds);
    ts_.commit(c.ts);
    locs_.commit(c.locs);
    values_.commit(c.values);
    addresses_.commit(c.addresses);
    prev_ts_ = c.prev_ts;
    prev_address_ = c.prev_address;
  }

  void clear() noexcept {
    kinds_.clear();
    ts_.clear();
    locs_.clear();
    values_.clear();
    addresses_.clear();
    run_ts_.clear();
    location_ids.clear();
    stack_ids.clear();
    prev_ts_ = prev_address_ = 0;
  }

  BatchColumns view() const noexcept {
    BatchColumns c;
    c.kinds = kinds_.span();
    c.ts = ts_.span();
    c.run_ts = run_ts_;
    c.locs = locs_.span();
    c.values = values_.span();
    c.addresses = addresses_.span();
    c.location_ids = location_ids;
    c.stack_ids = stack_ids;
    return c;
  }

 private:
  ColumnBytes kinds_, ts_, locs_, values_, addresses_;
  std::vector<uint32_t> run_ts_;
  uint64_t prev_ts_ = 0, prev_address_ = 0;
};

// The drainer's side: which ids its current batch has listed.
struct ColumnIds {
  IdStamps locations, stacks;
  void next_batch() {
    locations.next_batch();
    stacks.next_batch();
  }
};

// Writes one drained event (ts in ns, loc resolved, p0 and p1 as the batch's
// Event has them) at the cursor, as SegmentEncoder's event loop would write
// it, and lists its ids. Room for it was made by reserve().
inline void put_event(ColumnCursor& c, uint8_t kind, uint64_t ts, uint32_t loc, uint64_t p0, uint64_t p1,
                      ColumnIds& ids, BatchColumnData& data) {
  using namespace internal;
  const uint8_t f = kEventKindFlags.of[kind];
  *c.kinds++ = kind;
  // Wrapping subtraction, as the encoder's: a run's first delta is from 0.
  c.ts = varint::put(c.ts, varint::zigzag(static_cast<int64_t>(ts - c.prev_ts)));
  c.prev_ts = ts;
  if (f & kKindLocation) {
    c.locs = varint::put(c.locs, loc);
    if (loc != 0 && ids.locations.first_use(loc)) data.location_ids.push_back(loc);
  } else if (f & kKindStack) {
    c.locs = varint::put(c.locs, loc);
    if (loc != 0 && ids.stacks.first_use(loc)) data.stack_ids.push_back(loc);
  }
  if (kind == static_cast<uint8_t>(EventKind::Counter)) {
    std::memcpy(c.values, &p1, 8);  // little-endian (drainer.cpp asserts it): the encoder's byte order
    c.values += 8;
  } else if (f & kKindValueLocation) {
    const auto id = static_cast<uint32_t>(p1);
    c.values = varint::put(c.values, id);
    if (id != 0 && ids.locations.first_use(id)) data.location_ids.push_back(id);
  } else if (f & kKindValue) {
    c.values = varint::put(c.values, p1);
  }
  if (f & kKindMemory) {
    c.addresses = varint::put(c.addresses, varint::zigzag(static_cast<int64_t>(p0 - c.prev_address)));
    c.prev_address = p0;
  }
}

// One event through the slower paths (anything but drain_plain's loop).
inline void append_event(BatchColumnData& data, ColumnIds& ids, const Event& e) {
  ColumnCursor c = data.reserve(1);
  put_event(c, static_cast<uint8_t>(e.kind), e.ts, e.loc, e.p0, e.p1, ids, data);
  data.commit(c);
}

}  // namespace ringprof
