#include "symbols/elf_file.h"

#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <mutex>
#include <vector>

namespace ringprof::internal {

namespace {

void init_libelf() {
  static std::once_flag once;
  std::call_once(once, [] { elf_version(EV_CURRENT); });
}

std::string to_hex(const void* bytes, size_t n) {
  static const char kDigits[] = "0123456789abcdef";
  const auto* p = static_cast<const unsigned char*>(bytes);
  std::string s;
  s.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    s += kDigits[p[i] >> 4];
    s += kDigits[p[i] & 15];
  }
  return s;
}

}  // namespace

std::unique_ptr<ElfFile> ElfFile::open(const std::string& path, std::string* why) {
  init_libelf();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    *why = std::strerror(errno);
    return nullptr;
  }
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = "not a regular file";
    return nullptr;
  }
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  // Everything is mapped (or read, if mapping failed): the descriptor can go.
  if (elf && elf_cntl(elf, ELF_C_FDREAD) != 0) {
    elf_end(elf);
    elf = nullptr;
  }
  ::close(fd);
  return checked(path, elf, why);
}

std::unique_ptr<ElfFile> ElfFile::from_memory(std::string label, std::vector<char> image, std::string* why) {
  init_libelf();
  Elf* elf = elf_memory(image.data(), image.size());
  std::unique_ptr<ElfFile> file = checked(std::move(label), elf, why);
  // elf_ points into the vector's buffer, which a move leaves where it is.
  if (file) file->image_ = std::move(image);
  return file;
}

std::unique_ptr<ElfFile> ElfFile::checked(std::string path, Elf* elf, std::string* why) {
  if (!elf) {
    *why = std::string("cannot read: ") + elf_errmsg(-1);
    return nullptr;
  }
  if (elf_kind(elf) != ELF_K_ELF) {
    elf_end(elf);
    *why = "not an ELF file";
    return nullptr;
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(elf, &ehdr)) {
    *why = std::string("bad ELF header: ") + elf_errmsg(-1);
    elf_end(elf);
    return nullptr;
  }
  return std::unique_ptr<ElfFile>(new ElfFile(std::move(path), elf));
}

ElfFile::ElfFile(std::string path, Elf* elf) : path_(std::move(path)), elf_(elf) {
  const void* id = nullptr;
  const ssize_t n = dwelf_elf_gnu_build_id(elf_, &id);
  if (n > 0 && id) build_id_ = to_hex(id, static_cast<size_t>(n));

  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf_, &shstrndx) == 0) {
    for (Elf_Scn* scn = elf_nextscn(elf_, nullptr); scn; scn = elf_nextscn(elf_, scn)) {
      GElf_Shdr shdr;
      if (!gelf_getshdr(scn, &shdr)) continue;
      if (shdr.sh_type == SHT_SYMTAB) has_symtab_ = true;
      if (shdr.sh_type == SHT_DYNSYM) has_dynsym_ = true;
      // A stripped file may keep the section headers of debug sections as
      // NOBITS; only real contents count.
      const char* name = elf_strptr(elf_, shstrndx, shdr.sh_name);
      if (name && shdr.sh_type != SHT_NOBITS &&
          (std::strcmp(name, ".debug_info") == 0 || std::strcmp(name, ".zdebug_info") == 0)) {
        has_debug_info_ = true;
      }
      if (name && shdr.sh_type == SHT_PROGBITS && shdr.sh_size > 0 && std::strcmp(name, ".gnu_debugdata") == 0) {
        has_mini_debuginfo_ = true;
      }
    }
  }

  GElf_Word crc = 0;
  if (const char* link = dwelf_elf_gnu_debuglink(elf_, &crc)) {
    // A name with a slash could climb out of the dirs it is looked up in.
    if (*link && !std::strchr(link, '/')) {
      debuglink_ = link;
      debuglink_crc_ = crc;
    }
  }
}

ElfFile::~ElfFile() {
  if (dwarf_) dwarf_end(dwarf_);
  elf_end(elf_);
}

Dwarf* ElfFile::dwarf() {
  if (!dwarf_tried_) {
    dwarf_tried_ = true;
    if (has_debug_info_) dwarf_ = dwarf_begin_elf(elf_, DWARF_C_READ, nullptr);
  }
  return dwarf_;
}

bool file_crc32(const std::string& path, uint32_t* crc) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return false;
  uLong c = crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 16);
  bool ok = true;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    c = crc32(c, buf.data(), static_cast<uInt>(n));
  }
  ::close(fd);
  *crc = static_cast<uint32_t>(c);
  return ok;
}

}  // namespace ringprof::internal
