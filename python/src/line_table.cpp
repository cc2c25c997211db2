// line_table.cpp — CPython 3.11/3.12 location-table decoding (line_table.h).
//
// Each entry starts with a byte whose top bit is set: bits 3..6 are the entry's
// form, bits 0..2 its length in code units less one. The forms that move the
// line: 13 (no columns) and 14 (long) start with a signed varint line delta;
// 10..12 add 0..2 lines; 15 means "no line" for its instructions and leaves
// the running line alone; 0..9 keep the line. Column data follows and is
// skipped, as CPython does, by looking for the next byte with the top bit set.
#include "line_table.h"

namespace ringprof::python {

namespace {

constexpr int kNoColumns = 13, kLong = 14, kNoLocation = 15, kOneLine0 = 10, kOneLine2 = 12;

// 6-bit little-endian groups, 0x40 set on every group but the last. Bounded:
// a malformed table gives a wrong line, never a read past its end.
uint32_t read_varint(const uint8_t* t, size_t size, size_t* i) noexcept {
  uint32_t value = 0;
  for (unsigned shift = 0; *i < size && shift < 32; shift += 6) {
    const uint8_t b = t[(*i)++];
    value |= uint32_t{b & 63u} << shift;
    if (!(b & 64)) break;
  }
  return value;
}

int64_t read_signed_varint(const uint8_t* t, size_t size, size_t* i) noexcept {
  const uint32_t u = read_varint(t, size, i);
  return (u & 1) ? -static_cast<int64_t>(u >> 1) : static_cast<int64_t>(u >> 1);
}

}  // namespace

uint32_t line_for_code_unit(const uint8_t* table, size_t size, int32_t first_line, uint32_t unit) noexcept {
  int64_t line = first_line;
  uint64_t start = 0;  // first code unit of the entry at `i`
  size_t i = 0;
  while (i < size) {
    const uint8_t head = table[i];
    if (!(head & 0x80)) return 0;  // not an entry's first byte: the table is not what we think
    const int form = (head >> 3) & 15;
    const uint64_t length = (head & 7u) + 1;
    size_t at = i + 1;
    if (form == kNoColumns || form == kLong) {
      line += read_signed_varint(table, size, &at);
    } else if (form >= kOneLine0 && form <= kOneLine2) {
      line += form - kOneLine0;
    }
    if (unit < start + length) {
      return form == kNoLocation || line <= 0 || line > UINT32_MAX ? 0 : static_cast<uint32_t>(line);
    }
    start += length;
    for (i = i + 1; i < size && !(table[i] & 0x80); ++i) {
    }
  }
  return 0;
}

}  // namespace ringprof::python
