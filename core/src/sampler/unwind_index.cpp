#include "sampler/unwind_index.h"

#include <elf.h>
#include <link.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cstring>

namespace ringprof::sampler {

namespace {

std::atomic<const UnwindSnapshot*> g_snapshot{nullptr};
std::atomic<uint32_t> g_readers{0};
std::atomic<uint64_t> g_generation{0};

struct Scan {
  std::vector<UnwindModule> found;
  LoaderCounters counters;
};

int collect(dl_phdr_info* info, size_t size, void* arg) {
  auto* s = static_cast<Scan*>(arg);
  if (!s->counters.known) loader_counters_of(info, size, &s->counters);
  UnwindModule m;
  if (unwind_module_from_headers(info->dlpi_addr, info->dlpi_phdr, info->dlpi_phnum, &m)) s->found.push_back(m);
  return 0;
}

}  // namespace

bool unwind_module_from_headers(uint64_t base, const void* phdrs, int phnum, UnwindModule* out) noexcept {
  const auto* ph = static_cast<const ElfW(Phdr)*>(phdrs);
  const ElfW(Phdr)* eh = nullptr;
  bool have_exec = false;
  UnwindModule m;
  for (int i = 0; i < phnum; ++i) {
    if (ph[i].p_type == PT_GNU_EH_FRAME) eh = &ph[i];
    if (ph[i].p_type == PT_LOAD && (ph[i].p_flags & PF_X)) {
      const uint64_t start = base + ph[i].p_vaddr, end = start + ph[i].p_memsz;
      m.start = have_exec ? std::min(m.start, start) : start;
      m.end = have_exec ? std::max(m.end, end) : end;
      have_exec = true;
    }
  }
  if (!eh || !have_exec) return false;
  // The readable segment holding the header bounds every read.
  for (int i = 0; i < phnum; ++i) {
    if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_R)) continue;
    if (eh->p_vaddr >= ph[i].p_vaddr && eh->p_vaddr + eh->p_memsz <= ph[i].p_vaddr + ph[i].p_filesz) {
      m.lo = base + ph[i].p_vaddr;
      m.hi = m.lo + ph[i].p_filesz;
    }
  }
  if (m.hi == 0) return false;
  m.hdr = base + eh->p_vaddr;
  // version 1, eh_frame_ptr encoding, fde_count encoding, table encoding.
  if (m.hdr + 12 > m.hi) return false;
  const auto* h = reinterpret_cast<const uint8_t*>(m.hdr);
  if (h[0] != 1 || h[3] != 0x3b) return false;  // table: DW_EH_PE_datarel | DW_EH_PE_sdata4
  // eh_frame_ptr is 4 bytes in every encoding the linker writes; fde_count
  // is udata4 (0x03).
  if ((h[1] & 0x0f) != 0x0b && (h[1] & 0x0f) != 0x03) return false;
  if (h[2] != 0x03) return false;
  uint32_t count;
  std::memcpy(&count, h + 8, 4);
  m.table = m.hdr + 12;
  if (uint64_t{count} * 8 > m.hi - m.table) return false;
  m.fde_count = count;
  *out = m;
  return true;
}

UnwindView::UnwindView() noexcept {
  g_readers.fetch_add(1, std::memory_order_seq_cst);
  snap_ = g_snapshot.load(std::memory_order_seq_cst);
}

UnwindView::~UnwindView() { g_readers.fetch_sub(1, std::memory_order_seq_cst); }

const UnwindModule* UnwindView::find(uint64_t pc) const noexcept {
  if (!snap_) return nullptr;
  size_t lo = 0, hi = snap_->count;  // first module starting after pc
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (snap_->modules[mid].start <= pc)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return nullptr;
  const UnwindModule& m = snap_->modules[lo - 1];
  return pc < m.end ? &m : nullptr;
}

void UnwindIndex::refresh() {
  if (published_ && read_loader_counters().same_as(counters_)) {
    free_retired(false);
    return;
  }
  Scan s;
  dl_iterate_phdr(collect, &s);
  counters_ = s.counters;
  std::sort(s.found.begin(), s.found.end(),
            [](const UnwindModule& a, const UnwindModule& b) { return a.start < b.start; });
  auto* modules = new UnwindModule[s.found.size() ? s.found.size() : 1];
  std::copy(s.found.begin(), s.found.end(), modules);
  auto* snap = new UnwindSnapshot{g_generation.fetch_add(1, std::memory_order_relaxed) + 1, s.found.size(), modules};
  const UnwindSnapshot* old = g_snapshot.exchange(snap, std::memory_order_seq_cst);
  if (old) retired_.push_back(const_cast<UnwindSnapshot*>(old));  // ours now, whoever published it
  current_ = snap;
  published_ = true;
  count_ = s.found.size();
  free_retired(false);
}

void UnwindIndex::free_retired(bool wait) {
  if (retired_.empty()) return;
  // A handler that entered before the exchange may still read an old array.
  for (int i = 0; g_readers.load(std::memory_order_seq_cst) != 0; ++i) {
    if (!wait || i > 100000) return;  // one stopped in a debugger: keep them
    sched_yield();
  }
  for (UnwindSnapshot* s : retired_) {
    delete[] s->modules;
    delete s;
  }
  retired_.clear();
}

UnwindIndex::~UnwindIndex() {
  // Only our own: another index's snapshot stays published (and is its, or
  // the next refresh's, to free).
  const UnwindSnapshot* mine = current_;
  if (mine && g_snapshot.compare_exchange_strong(mine, nullptr, std::memory_order_seq_cst))
    retired_.push_back(const_cast<UnwindSnapshot*>(current_));
  free_retired(true);
}

}  // namespace ringprof::sampler
