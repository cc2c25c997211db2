// elf_symbols.h (internal) — the function symbols of one ELF file, sorted by
// address, for "which function holds this address".
//
// .symtab is used when the file has one (it names static functions too), else
// .dynsym (what a stripped library still exports), plus the .symtab of its
// MiniDebugInfo when it has one (add_symtab). Names point into the files'
// mappings and stay valid while their ElfFiles live.
#pragma once

#include <libelf.h>

#include <cstdint>
#include <vector>

namespace ringprof::internal {

class SymbolTable {
 public:
  SymbolTable() = default;
  // Reads the function symbols of `elf` (.symtab, else .dynsym); an unreadable
  // table leaves this empty.
  explicit SymbolTable(Elf* elf);
  // Adds the function symbols of `elf`'s .symtab (a MiniDebugInfo image's:
  // the static functions a stripped file's .dynsym leaves out). False when it
  // has none.
  bool add_symtab(Elf* elf);

  bool empty() const { return entries_.empty(); }
  size_t size() const { return entries_.size(); }
  // The raw (mangled) name of the function containing `vaddr`, or nullptr.
  // *sized is false when the name is only the nearest symbol below in the same
  // section, one without a size (hand-written assembly): a guess.
  const char* find(uint64_t vaddr, bool* sized = nullptr) const;

 private:
  struct Entry {
    uint64_t addr = 0;
    uint64_t size = 0;
    uint64_t section_end = 0;  // end of the symbol's section: the farthest a size-less symbol reaches
    uint64_t max_end = 0;      // the largest addr + size of this entry and all before it
    const char* name = nullptr;
    bool global = false;
  };
  // Appends the function symbols of `elf`'s sections of `section_type`;
  // false when there were none. finish() then sorts the table.
  bool append(Elf* elf, uint32_t section_type);
  void finish();

  std::vector<Entry> entries_;
};

}  // namespace ringprof::internal
