#include "symbols/dwarf_index.h"

#include <dwarf.h>

#include <algorithm>

#include "symbols/demangle.h"

namespace ringprof::internal {

namespace {

// Deep enough for any real nesting of namespaces, classes, inlines and
// blocks; a bound on what a hostile file can make the walk recurse through.
constexpr int kMaxScopeDepth = 256;

bool is_code_scope(int tag) {
  return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block ||
         tag == DW_TAG_entry_point || tag == DW_TAG_try_block || tag == DW_TAG_catch_block;
}

// DIEs without addresses of their own that may hold function definitions
// (clang nests them in namespaces and classes).
bool may_hold_code(int tag) {
  return tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
         tag == DW_TAG_union_type || tag == DW_TAG_module;
}

// Appends the chain of code scopes under `parent` that contain `pc`, outermost
// first; true when one was found. This is what dwarf_getscopes does, walked
// here because libdw 0.188's dwarf_getscopes gives up on a whole clang 14
// unit ("no address value") where dwarf_haspc answers for each DIE; a DIE
// whose ranges cannot be read is passed over instead.
bool collect_scopes(Dwarf_Die* parent, uint64_t pc, std::vector<Dwarf_Die>& chain, int depth) {
  if (depth > kMaxScopeDepth) return false;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return false;
  do {
    const int tag = dwarf_tag(&child);
    if (is_code_scope(tag)) {
      if (dwarf_haspc(&child, pc) == 1) {
        chain.push_back(child);  // a copy: the vector may move as the walk goes deeper
        collect_scopes(&child, pc, chain, depth + 1);
        return true;
      }
    } else if (may_hold_code(tag)) {
      if (collect_scopes(&child, pc, chain, depth + 1)) return true;
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

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

  std::vector<Dwarf_Die> chain;  // outermost first
  collect_scopes(&cudie, vaddr, chain, 0);

  Dwarf_Files* files = nullptr;
  size_t nfiles = 0;
  if (dwarf_getsrcfiles(&cudie, &files, &nfiles) != 0) files = nullptr;

  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    Dwarf_Die* die = &*it;
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

}  // namespace ringprof::internal
