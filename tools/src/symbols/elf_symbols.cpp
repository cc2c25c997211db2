#include "symbols/elf_symbols.h"

#include <gelf.h>

#include <algorithm>
#include <climits>

namespace ringprof::internal {

SymbolTable::SymbolTable(Elf* elf) {
  if (!append(elf, SHT_SYMTAB)) append(elf, SHT_DYNSYM);
  finish();
}

bool SymbolTable::add_symtab(Elf* elf) {
  if (!append(elf, SHT_SYMTAB)) return false;
  finish();
  return true;
}

bool SymbolTable::append(Elf* elf, uint32_t section_type) {
  const size_t before = entries_.size();
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != section_type || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    // libelf bounds the data by the file; count from what it actually gave.
    const size_t count = std::min<size_t>(data->d_size / shdr.sh_entsize, INT_MAX);
    for (size_t i = 0; i < count; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym)) break;
      const int type = GELF_ST_TYPE(sym.st_info);
      if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF || sym.st_value == 0) continue;
      const char* name = elf_strptr(elf, shdr.sh_link, sym.st_name);
      if (!name || !*name) continue;
      Entry e;
      if (sym.st_size == 0) {
        GElf_Shdr home;
        Elf_Scn* home_scn = sym.st_shndx < SHN_LORESERVE ? elf_getscn(elf, sym.st_shndx) : nullptr;
        if (!home_scn || !gelf_getshdr(home_scn, &home)) continue;
        e.section_end = home.sh_addr + home.sh_size;
      }
      e.addr = sym.st_value;
      e.size = sym.st_size;
      e.name = name;
      e.global = GELF_ST_BIND(sym.st_info) != STB_LOCAL;
      entries_.push_back(e);
    }
  }
  return entries_.size() > before;
}

void SymbolTable::finish() {
  // At one address (aliases), a sized global symbol is the better name: it is
  // the one a user wrote, not a local alias or an assembler label.
  std::sort(entries_.begin(), entries_.end(), [](const Entry& a, const Entry& b) {
    if (a.addr != b.addr) return a.addr < b.addr;
    if ((a.size != 0) != (b.size != 0)) return a.size != 0;
    return a.global && !b.global;
  });
  entries_.erase(std::unique(entries_.begin(), entries_.end(),
                             [](const Entry& a, const Entry& b) { return a.addr == b.addr; }),
                 entries_.end());
  uint64_t max_end = 0;
  for (Entry& e : entries_) {
    max_end = std::max(max_end, e.addr + e.size);
    e.max_end = max_end;
  }
}

const char* SymbolTable::find(uint64_t vaddr, bool* sized) const {
  if (sized) *sized = true;
  auto it = std::upper_bound(entries_.begin(), entries_.end(), vaddr,
                             [](uint64_t v, const Entry& e) { return v < e.addr; });
  if (it == entries_.begin()) return nullptr;
  const auto nearest = it - 1;
  // Walk back while an earlier symbol could still reach vaddr: sized symbols
  // may nest (a function and a local label inside it).
  for (auto p = nearest;; --p) {
    if (p->size != 0 && vaddr < p->addr + p->size) return p->name;
    if (p == entries_.begin() || (p - 1)->max_end <= vaddr) break;
  }
  // Hand-written assembly often has no sizes: then the nearest symbol below is
  // the best guess there is.
  if (nearest->size != 0 || vaddr >= nearest->section_end) return nullptr;
  if (sized) *sized = false;
  return nearest->name;
}

}  // namespace ringprof::internal
