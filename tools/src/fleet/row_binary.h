// fleet/row_binary.h (internal) — rows in ClickHouse's RowBinary format:
// integers little-endian, strings and arrays prefixed by a LEB128 length,
// Date as days since the epoch in a UInt16. Compact and unambiguous: no text
// escaping of names a program chose.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace ringprof::internal {

class RowBinary {
 public:
  void u8(uint8_t v) { out_.push_back(static_cast<char>(v)); }
  void u16(uint16_t v) { raw(&v, sizeof v); }
  void u32(uint32_t v) { raw(&v, sizeof v); }
  void i32(int32_t v) { raw(&v, sizeof v); }
  void u64(uint64_t v) { raw(&v, sizeof v); }
  void f64(double v) { raw(&v, sizeof v); }
  // The UTC day of a time in ns since the epoch.
  void date_of(uint64_t ns) { u16(static_cast<uint16_t>(ns / 86'400'000'000'000ull)); }
  void str(std::string_view s) {
    length(s.size());
    out_.append(s.data(), s.size());
  }
  void strings(const std::vector<std::string>& v) {
    length(v.size());
    for (const std::string& s : v) str(s);
  }
  void length(uint64_t n) {
    do {
      uint8_t b = n & 0x7f;
      n >>= 7;
      if (n) b |= 0x80;
      u8(b);
    } while (n);
  }
  void end_row() { ++rows_; }

  const std::string& bytes() const { return out_; }
  uint64_t rows() const { return rows_; }
  void clear() {
    out_.clear();
    rows_ = 0;
  }

 private:
  void raw(const void* p, size_t n) { out_.append(static_cast<const char*>(p), n); }  // x86-64, aarch64: little-endian
  std::string out_;
  uint64_t rows_ = 0;
};

}  // namespace ringprof::internal
