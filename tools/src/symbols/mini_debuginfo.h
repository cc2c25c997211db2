// mini_debuginfo.h (internal) — MiniDebugInfo: the .gnu_debugdata section
// some distributions (Fedora, RHEL, CentOS) leave in stripped binaries. It
// holds an xz-compressed ELF file whose .symtab names the functions .dynsym
// leaves out (static and hidden ones), with no DWARF: enough to name every
// function of a stripped interpreter or library without its debug package.
#pragma once

#include <memory>
#include <string>

#include "symbols/elf_file.h"

namespace ringprof::internal {

// The decompressed image of `owner`'s .gnu_debugdata as an ElfFile, or
// nullptr with *why set (no section, not xz, larger than 256 MiB once
// decompressed, not an ELF file). Hostile data ends in an error, never a fault.
std::unique_ptr<ElfFile> open_mini_debuginfo(const ElfFile& owner, std::string* why);

}  // namespace ringprof::internal
