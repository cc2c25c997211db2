#include "dwarf_index.h"

#include <dwarf.h>

#include <algorithm>
#include <cstdlib>

#include "demangle.h"

namespace ringprof::detail {

namespace {

// Frees what dwarf_getscopes* malloc'd.
struct ScopeList {
  Dwarf_Die* dies = nullptr;
  int count = 0;
  ~ScopeList() { std::free(dies); }
};

std::string die_function_name(Dwarf_Die* die) {
  Dwarf_Attribute attr;
  // _integrate follows DW_AT_abstract_origin and DW_AT_specification, where
  // inlined instances and out-of-class definitions keep their names.
  for (int at : {DW_AT_linkage_name, DW_AT_MIPS_linkage_name}) {
    if (dwarf_attr_integrate(die, at, &attr)) {
      if (const char* s = dwarf_formstring(&attr)) return demangle(s);
    }
  }
  if (dwarf_attr_integrate(die, DW_AT_name, &attr)) {
    if (const char* s = dwarf_formstring(&attr)) return s;
  }
  return {};
}

bool die_udata(Dwarf_Die* die, int name, Dwarf_Word* value) {
  Dwarf_Attribute attr;
  return dwarf_attr(die, name, &attr) && dwarf_formudata(&attr, value) == 0;
}

}  // namespace

DwarfIndex::DwarfIndex(Dwarf* dwarf) {
  Dwarf_CU* cu = nullptr;
  Dwarf_Half version = 0;
  uint8_t unit_type = 0;
  Dwarf_Die cudie;
  while (dwarf_get_units(dwarf, cu, &cu, &version, &unit_type, &cudie, nullptr) == 0) {
    if (unit_type != DW_UT_compile && unit_type != DW_UT_partial && unit_type != DW_UT_skeleton) continue;
    Dwarf_Addr base = 0, start = 0, end = 0;
    ptrdiff_t offset = 0;
    while ((offset = dwarf_ranges(&cudie, offset, &base, &start, &end)) > 0) {
      // Ranges at 0 belong to code the linker discarded (COMDAT duplicates,
      // --gc-sections); they would shadow real code at low addresses.
      if (start == 0 || end <= start) continue;
      ranges_.push_back(Range{start, end, 0, cudie});
    }
  }
  std::sort(ranges_.begin(), ranges_.end(), [](const Range& a, const Range& b) { return a.low < b.low; });
  uint64_t max_high = 0;
  for (Range& r : ranges_) {
    max_high = std::max(max_high, r.high);
    r.max_high = max_high;
  }
}

const DwarfIndex::Range* DwarfIndex::find(uint64_t vaddr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), vaddr,
                             [](uint64_t v, const Range& r) { return v < r.low; });
  while (it != ranges_.begin()) {
    --it;
    if (vaddr < it->high) return &*it;
    if (it->max_high <= vaddr) break;  // nothing further back reaches vaddr
  }
  return nullptr;
}

std::vector<DwarfFrame> DwarfIndex::frames(uint64_t vaddr) const {
  std::vector<DwarfFrame> out;
  const Range* range = find(vaddr);
  if (!range) return out;
  Dwarf_Die cudie = range->cu;

  // The innermost position: the line table row of the address.
  std::string file;
  uint32_t line = 0;
  if (Dwarf_Line* row = dwarf_getsrc_die(&cudie, vaddr)) {
    if (const char* src = dwarf_linesrc(row, nullptr, nullptr)) file = src;
    int lineno = 0;
    if (dwarf_lineno(row, &lineno) == 0 && lineno > 0) line = static_cast<uint32_t>(lineno);
  }

  ScopeList pc_scopes;
  pc_scopes.count = dwarf_getscopes(&cudie, vaddr, &pc_scopes.dies);
  ScopeList chain;
  if (pc_scopes.count > 0) {
    // dwarf_getscopes continues past an inlined instance into its abstract
    // definition; the concrete chain (instance inside instance inside the
    // out-of-line function) comes from walking the innermost DIE's parents.
    Dwarf_Die inner = pc_scopes.dies[0];
    chain.count = dwarf_getscopes_die(&inner, &chain.dies);
  }

  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0) files = nullptr;

  for (int i = 0; i < chain.count; ++i) {
    Dwarf_Die* die = &chain.dies[i];
    const int tag = dwarf_tag(die);
    if (tag == DW_TAG_inlined_subroutine) {
      out.push_back(DwarfFrame{die_function_name(die), file, line, true});
      // The next frame out is at this instance's call site.
      Dwarf_Word value = 0;
      file.clear();
      if (files && die_udata(die, DW_AT_call_file, &value) && value < nfiles) {
        if (const char* src = dwarf_filesrc(files, value, nullptr, nullptr)) file = src;
      }
      line = die_udata(die, DW_AT_call_line, &value) && value <= UINT32_MAX ? static_cast<uint32_t>(value) : 0;
    } else if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
      out.push_back(DwarfFrame{die_function_name(die), file, line, false});
      return out;
    }
  }
  // No subprogram around the address (assembly with line info, say): the line
  // alone is still worth having, and inlined frames need an outer one.
  if (!out.empty() || !file.empty() || line != 0) out.push_back(DwarfFrame{{}, file, line, false});
  return out;
}

}  // namespace ringprof::detail
