// dwarf_index.h (internal) — source lines and inline chains for addresses of
// one module, from its DWARF through libdw.
//
// The address → compile unit map is built here, once per module, from every
// unit's DW_AT_low_pc/high_pc or DW_AT_ranges, rather than through
// dwarf_addrdie: that one relies on .debug_aranges, which clang does not emit
// by default. Within a unit, a walk down the DIEs that contain the address
// (dwarf_haspc) gives the concrete chain of inlined subroutines inside the
// out-of-line function, as eu-addr2line -i reports it, and dwarf_getsrc_die
// the line of the address.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof::internal {

struct DwarfFrame {
  std::string function;  // demangled linkage name, else DW_AT_name; "" if neither
  std::string file;
  uint32_t line = 0;
  bool inlined = false;
};

class DwarfIndex {
 public:
  // `dwarf` stays owned by its ElfFile, which must outlive this index.
  explicit DwarfIndex(Dwarf* dwarf);

  // Innermost first; every frame but the last is inlined into the next. Empty
  // when no unit covers `vaddr`. The last frame may have an empty function when
  // the address has a line but no enclosing subprogram.
  std::vector<DwarfFrame> frames(uint64_t vaddr) const;
  size_t ranges() const { return ranges_.size(); }

 private:
  struct Range {
    uint64_t low = 0;
    uint64_t high = 0;     // exclusive
    uint64_t max_high = 0; // the largest high of this range and all before it
    Dwarf_Die cu;
  };
  const Range* find(uint64_t vaddr) const;

  std::vector<Range> ranges_;
};

}  // namespace ringprof::internal
