#include "sampler/module_table.h"

#include <elf.h>
#include <link.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ringprof::sampler {

namespace {

std::string read_exe_path() {
  char buf[4096];
  const ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : std::string();
}

struct ScanState {
  std::vector<ModuleInfo> found;
};

int collect(dl_phdr_info* info, size_t, void* arg) {
  auto* s = static_cast<ScanState*>(arg);
  ModuleInfo m;
  m.path = info->dlpi_name ? info->dlpi_name : "";
  m.base = info->dlpi_addr;
  bool have_exec = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
      const uint64_t start = info->dlpi_addr + ph.p_vaddr, end = start + ph.p_memsz;
      if (!have_exec || start < m.start) {
        m.start = start;
        m.file_offset = ph.p_offset;
      }
      m.end = have_exec ? std::max(m.end, end) : end;
      have_exec = true;
    } else if (ph.p_type == PT_NOTE && m.build_id.empty()) {
      // Notes of a loaded object lie inside a PT_LOAD segment: readable.
      m.build_id = build_id_from_notes(reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr),
                                       ph.p_memsz);
    }
  }
  if (have_exec) s->found.push_back(std::move(m));
  return 0;
}

}  // namespace

std::string build_id_from_notes(const unsigned char* notes, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  size_t off = 0;
  while (off + sizeof(ElfW(Nhdr)) <= size) {
    ElfW(Nhdr) nh;
    std::memcpy(&nh, notes + off, sizeof nh);
    off += sizeof nh;
    const size_t name_len = (nh.n_namesz + 3) & ~size_t{3}, desc_len = (nh.n_descsz + 3) & ~size_t{3};
    if (name_len > size - off || desc_len > size - off - name_len) break;
    const bool gnu = nh.n_namesz == 4 && std::memcmp(notes + off, "GNU", 4) == 0;
    off += name_len;
    if (gnu && nh.n_type == NT_GNU_BUILD_ID) {
      std::string hex;
      for (size_t i = 0; i < nh.n_descsz; ++i) {
        hex.push_back(kHex[notes[off + i] >> 4]);
        hex.push_back(kHex[notes[off + i] & 15]);
      }
      return hex;
    }
    off += desc_len;
  }
  return {};
}

bool ModuleTable::refresh() {
  const LoaderCounters c = read_loader_counters();
  if (c.same_as(counters_)) return false;
  counters_ = c;
  const size_t before = modules_.size();
  scan();
  return modules_.size() != before;
}

void ModuleTable::scan() {
  ScanState s;
  dl_iterate_phdr(collect, &s);
  for (ModuleInfo& m : s.found) {
    if (m.path.empty()) {  // the main program
      if (exe_path_.empty()) exe_path_ = read_exe_path();
      m.path = exe_path_;
    }
    auto key = std::make_pair(m.path, m.base);
    if (known_.count(key)) continue;
    m.id = static_cast<uint32_t>(modules_.size() + 1);
    known_.emplace(std::move(key), m.id);
    modules_.push_back(std::move(m));
  }
}

}  // namespace ringprof::sampler
