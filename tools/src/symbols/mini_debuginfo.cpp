// MiniDebugInfo (mini_debuginfo.h): find .gnu_debugdata, decompress it with
// liblzma, open the result as an ELF image.
#include "symbols/mini_debuginfo.h"

#include <gelf.h>
#include <lzma.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace ringprof::internal {

namespace {

// Fedora's images are a few hundred KiB; a bound keeps a hostile section
// from taking the machine's memory.
constexpr size_t kMaxImageBytes = size_t{256} << 20;
constexpr uint64_t kDecoderMemoryLimit = uint64_t{256} << 20;

bool section_bytes(Elf* elf, const char* wanted, const unsigned char** bytes, size_t* size) {
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(elf, &shstrndx) != 0) return false;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_PROGBITS) continue;
    const char* name = elf_strptr(elf, shstrndx, shdr.sh_name);
    if (!name || std::strcmp(name, wanted) != 0) continue;
    // elf_rawdata: the bytes as stored (libelf bounds them by the file).
    Elf_Data* data = elf_rawdata(scn, nullptr);
    if (!data || !data->d_buf || data->d_size == 0) return false;
    *bytes = static_cast<const unsigned char*>(data->d_buf);
    *size = data->d_size;
    return true;
  }
  return false;
}

// xz → bytes, at most kMaxImageBytes; false with *why set.
bool decompress_xz(const unsigned char* in, size_t in_size, std::vector<char>* out, std::string* why) {
  lzma_stream strm = LZMA_STREAM_INIT;
  if (lzma_stream_decoder(&strm, kDecoderMemoryLimit, 0) != LZMA_OK) {
    *why = "cannot start the xz decoder";
    return false;
  }
  strm.next_in = in;
  strm.avail_in = in_size;
  out->resize(std::min(std::max<size_t>(in_size * 4, 1 << 16), kMaxImageBytes));
  size_t used = 0;
  lzma_ret ret = LZMA_OK;
  for (;;) {
    if (used == out->size()) {
      if (out->size() >= kMaxImageBytes) {
        ret = LZMA_MEMLIMIT_ERROR;
        break;
      }
      out->resize(std::min(out->size() * 2, kMaxImageBytes));
    }
    strm.next_out = reinterpret_cast<uint8_t*>(out->data() + used);
    strm.avail_out = out->size() - used;
    ret = lzma_code(&strm, LZMA_FINISH);
    used = out->size() - strm.avail_out;
    if (ret != LZMA_OK) break;
  }
  lzma_end(&strm);
  if (ret != LZMA_STREAM_END) {
    *why = ret == LZMA_MEMLIMIT_ERROR ? "larger than 256 MiB decompressed"
           : ret == LZMA_FORMAT_ERROR ? "not xz data"
                                      : "damaged xz data";
    return false;
  }
  out->resize(used);
  return true;
}

}  // namespace

std::unique_ptr<ElfFile> open_mini_debuginfo(const ElfFile& owner, std::string* why) {
  const unsigned char* bytes = nullptr;
  size_t size = 0;
  if (!section_bytes(owner.elf(), ".gnu_debugdata", &bytes, &size)) {
    *why = "no .gnu_debugdata section";
    return nullptr;
  }
  std::vector<char> image;
  if (!decompress_xz(bytes, size, &image, why)) return nullptr;
  return ElfFile::from_memory(owner.path() + " (.gnu_debugdata)", std::move(image), why);
}

}  // namespace ringprof::internal
