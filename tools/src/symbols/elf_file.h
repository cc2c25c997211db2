// elf_file.h (internal) — one ELF file opened read-only for the symbolizer.
//
// The file is mapped through libelf and its descriptor closed at once, so a
// profile with thousands of modules never runs out of descriptors. Opening
// refuses anything that is not a regular ELF file (a FIFO or device would block
// or never end) and says why. libelf and libdw bound every read by the file's
// size, so a truncated file yields errors here, never a fault.
#pragma once

#include <elfutils/libdw.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringprof::internal {

class ElfFile {
 public:
  // nullptr with *why set ("No such file or directory", "not an ELF file", ...).
  static std::unique_ptr<ElfFile> open(const std::string& path, std::string* why);
  // An ELF image held in memory (a decompressed MiniDebugInfo), named `label`
  // in messages; the object keeps the bytes.
  static std::unique_ptr<ElfFile> from_memory(std::string label, std::vector<char> image, std::string* why);
  ~ElfFile();
  ElfFile(const ElfFile&) = delete;
  ElfFile& operator=(const ElfFile&) = delete;

  const std::string& path() const { return path_; }
  Elf* elf() const { return elf_; }
  // GNU build ID in lowercase hex, "" when the file has none.
  const std::string& build_id() const { return build_id_; }
  bool has_symtab() const { return has_symtab_; }
  bool has_dynsym() const { return has_dynsym_; }
  bool has_debug_info() const { return has_debug_info_; }
  // A .gnu_debugdata section (MiniDebugInfo: an xz-compressed ELF with the
  // .symtab of the functions .dynsym leaves out), read by mini_debuginfo.h.
  bool has_mini_debuginfo() const { return has_mini_debuginfo_; }
  // The .gnu_debuglink file name ("" if none) and the CRC-32 it records.
  const std::string& debuglink() const { return debuglink_; }
  uint32_t debuglink_crc() const { return debuglink_crc_; }

  // libdw's view of the file, opened on first use; nullptr when it has no
  // usable DWARF. Owned by this object.
  Dwarf* dwarf();

 private:
  ElfFile(std::string path, Elf* elf);
  static std::unique_ptr<ElfFile> checked(std::string path, Elf* elf, std::string* why);

  std::string path_;
  Elf* elf_ = nullptr;
  std::string build_id_;
  bool has_symtab_ = false;
  bool has_dynsym_ = false;
  bool has_debug_info_ = false;
  bool has_mini_debuginfo_ = false;
  std::vector<char> image_;  // from_memory's bytes, which elf_ reads
  std::string debuglink_;
  uint32_t debuglink_crc_ = 0;
  bool dwarf_tried_ = false;
  Dwarf* dwarf_ = nullptr;
};

// The CRC-32 that .gnu_debuglink records (zlib's), of a whole file; false when
// it cannot be read.
bool file_crc32(const std::string& path, uint32_t* crc);

}  // namespace ringprof::internal
