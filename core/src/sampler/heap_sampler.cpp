// The heap sampler's slow paths (ringprof/heap.h): where the next sample
// point falls, the picked block's stack and record, and the table of live
// sampled blocks that matches their frees.
//
// These run inside malloc and free (libringprof_malloc.so) on any thread:
// nothing here may recurse into itself (t_busy: what the sample's own work
// allocates passes unsampled) or wait on anything but the table's short lock.
#include "sampler/heap_sampler.h"

#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <new>

#include "draining/drainer_wake.h"
#include "ringprof/heap.h"
#include "ringprof/internal/interpreter_frames.h"
#include "ringprof/memory.h"
#include "sampler/signal_thread_sampler.h"
#include "sampler/stack_unwinder.h"

extern "C" void* __libc_stack_end;  // ld.so's: where the main thread's stack ends

namespace ringprof {

namespace internal {
thread_local constinit int64_t t_heap_left __attribute__((tls_model("initial-exec"))) = 0;
std::atomic<uint8_t> g_heap_filter[1u << kHeapFilterBits];
}  // namespace internal

namespace {

using sampler::kMaxSampleWords;
using sampler::RuleCache;
using sampler::StackReader;
using sampler::UnwindInput;

// While sampling is off, a thread looks again after this many bytes: it
// starts sampling soon after a start(), at a cost of one call per 256 KiB.
constexpr int64_t kOffRecheckBytes = 256 << 10;
constexpr size_t kMaxInterpFrames = kMaxSampleFrames / 2;
// No thread stack is smaller (glibc's minimum is 16 KiB, its default 8 MiB).
constexpr uint64_t kDirectStackBytes = 64 << 10;

std::atomic<uint64_t> g_interval{0};
std::atomic<uint64_t> g_untracked{0};
int g_pid = 0;
StackReader::Mode g_reader_mode = StackReader::Mode::ProcessVmReadv;
// ringprof's own code (libringprof*.so): the frames a sample starts with
// there are the sampler's and the malloc wrapper's, not the program's.
constexpr int kMaxSelfRanges = 4;
uint64_t g_self_lo[kMaxSelfRanges], g_self_hi[kMaxSelfRanges];
int g_self_ranges = 0;

// Initial-exec, as every thread-local the allocation path touches: a
// dynamic TLS block is allocated on first use, with malloc.
#define RINGPROF_TLS thread_local constinit __attribute__((tls_model("initial-exec")))
RINGPROF_TLS bool t_started = false;  // this thread drew its first gap since sampling began
RINGPROF_TLS bool t_busy = false;     // inside heap_sample/heap_unsample
RINGPROF_TLS uint64_t t_rng = 0;
RINGPROF_TLS uint8_t t_main = 0;                   // 0: not known yet, 1: the process's main thread, 2: another
RINGPROF_TLS struct Scratch* t_scratch = nullptr;  // freed by g_scratch_key's destructor at thread exit
#undef RINGPROF_TLS

struct Scratch {
  unsigned char window[StackReader::kWindowBytes];
  uint64_t words[kMaxSampleWords + 1];  // the stack, then the interval
  internal::CapturedFrame interp[kMaxInterpFrames];
  RuleCache rules;
};
// A key only for its destructor: a thread_local with one would register it
// through __cxa_thread_atexit, which takes the loader's lock and allocates,
// from inside malloc.
pthread_key_t g_scratch_key;
bool g_scratch_key_made = false;

void free_scratch(void* p) {
  delete static_cast<Scratch*>(p);
  t_scratch = nullptr;
}

// The live sampled blocks: open addressing on the address, linear probing,
// deletion by backward shift; guarded by g_lock. Only samples and filter
// hits take it.
constexpr unsigned kTableBits = 16;
constexpr size_t kTableSize = size_t{1} << kTableBits;
constexpr size_t kTableMax = kTableSize / 4 * 3;
uint64_t g_table[kTableSize];
size_t g_table_count = 0;
std::atomic_flag g_lock = ATOMIC_FLAG_INIT;

class TableLock {
 public:
  TableLock() noexcept {
    for (int spins = 0; g_lock.test_and_set(std::memory_order_acquire); ++spins) {
      if (spins > 64) sched_yield();
    }
  }
  ~TableLock() { g_lock.clear(std::memory_order_release); }
};

size_t home(uint64_t a) noexcept {
  return static_cast<size_t>(((a >> 4) * 0x9E3779B97F4A7C15ull) >> (64 - kTableBits));
}

// A table key: the block's address and its pool. One block can be reported
// by two allocators (a PyTorch CPU tensor's memory by c10's hook in
// "torch:cpu" and by libringprof_malloc.so in "heap"), picked by each, and
// freed by each; the tools match a free by address and pool too. User-space
// addresses on x86-64 and arm64 fit in the low 48 bits.
constexpr int kPoolShift = 48;
uint64_t table_key(const void* p, uint16_t pool) noexcept {
  const uint64_t address = reinterpret_cast<uintptr_t>(p) & ((uint64_t{1} << kPoolShift) - 1);  // tag bits off
  return address | (uint64_t{pool} << kPoolShift);
}
const void* key_address(uint64_t key) noexcept {
  return reinterpret_cast<const void*>(static_cast<uintptr_t>(key & ((uint64_t{1} << kPoolShift) - 1)));
}

enum class Added { Yes, AlreadyThere, Full };

Added table_insert(uint64_t a) noexcept {
  size_t i = home(a);
  while (g_table[i] != 0) {
    if (g_table[i] == a) return Added::AlreadyThere;  // its free was missed; the new sample replaces it
    i = (i + 1) & (kTableSize - 1);
  }
  if (g_table_count >= kTableMax) return Added::Full;
  g_table[i] = a;
  ++g_table_count;
  return Added::Yes;
}

bool table_erase(uint64_t a) noexcept {
  size_t i = home(a);
  while (g_table[i] != a) {
    if (g_table[i] == 0) return false;
    i = (i + 1) & (kTableSize - 1);
  }
  // Backward shift: entries after the hole that may live in it move up, so
  // every lookup's probe run stays unbroken.
  for (size_t j = i;;) {
    j = (j + 1) & (kTableSize - 1);
    if (g_table[j] == 0) break;
    const size_t h = home(g_table[j]);
    const bool stays = i <= j ? (h > i && h <= j) : (h > i || h <= j);
    if (!stays) {
      g_table[i] = g_table[j];
      i = j;
    }
  }
  g_table[i] = 0;
  --g_table_count;
  return true;
}

void filter_add(const void* p, int delta) noexcept {
  std::atomic<uint8_t>& c = internal::g_heap_filter[internal::heap_filter_index(p)];
  const uint8_t v = c.load(std::memory_order_relaxed);
  if (v == 255) return;  // saturated: stays set for good (a little slower, never wrong)
  c.store(static_cast<uint8_t>(v + delta), std::memory_order_relaxed);
}

// An exponential gap with the given mean, at least one byte.
int64_t draw(uint64_t mean) noexcept {
  if (t_rng == 0) t_rng = (reinterpret_cast<uintptr_t>(&t_rng) ^ internal::monotonic_ns()) | 1;
  t_rng ^= t_rng >> 12;  // xorshift64*
  t_rng ^= t_rng << 25;
  t_rng ^= t_rng >> 27;
  const uint64_t x = t_rng * 0x2545F4914F6CDD1Dull;
  const double u = (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53;  // in (0, 1)
  const double gap = -std::log(u) * static_cast<double>(mean);
  return gap < 1.0 ? 1 : gap > 9.0e18 ? INT64_MAX / 2 : static_cast<int64_t>(gap);
}

int note_self(dl_phdr_info* info, size_t, void*) {
  if (info->dlpi_name == nullptr || std::strstr(info->dlpi_name, "libringprof") == nullptr) return 0;
  for (int i = 0; i < info->dlpi_phnum && g_self_ranges < kMaxSelfRanges; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
    g_self_lo[g_self_ranges] = info->dlpi_addr + ph.p_vaddr;
    g_self_hi[g_self_ranges] = info->dlpi_addr + ph.p_vaddr + ph.p_memsz;
    ++g_self_ranges;
  }
  return 0;
}

bool in_self(uint64_t pc) noexcept {
  for (int i = 0; i < g_self_ranges; ++i)
    if (pc >= g_self_lo[i] && pc < g_self_hi[i]) return true;
  return false;
}

Scratch* scratch() noexcept {
  if (!t_scratch && g_scratch_key_made) {
    t_scratch = new (std::nothrow) Scratch;
    if (t_scratch && pthread_setspecific(g_scratch_key, t_scratch) != 0) {
      delete t_scratch;
      t_scratch = nullptr;
    }
  }
  return t_scratch;
}

// The top of the calling thread's stack, without asking the thread library
// (pthread_getattr_np holds the thread's lock while it allocates: a sample
// taken inside it would wait on itself). glibc puts a thread's descriptor
// just above its stack; the main thread's stack ends at __libc_stack_end.
uint64_t stack_top() noexcept {
  if (t_main == 0) t_main = syscall(SYS_gettid) == getpid() ? 1 : 2;
  return t_main == 1 ? reinterpret_cast<uintptr_t>(__libc_stack_end) : static_cast<uint64_t>(pthread_self());
}

// The calling thread's stack, leaf first, without ringprof's own frames.
__attribute__((noinline)) size_t capture(Scratch& x) noexcept {
#if defined(__x86_64__)
  UnwindInput in;
  asm volatile("leaq 0(%%rip), %0\n\tmovq %%rsp, %1\n\tmovq %%rbp, %2" : "=r"(in.pc), "=r"(in.sp), "=r"(in.fp));
  // Interpreter frames where the hooks can read them in place (CPython's).
  if (const internal::InterpreterFrameHooks* h = internal::interpreter_frame_hooks(); h && h->capture_self) {
    in.interp_count = h->capture_self(x.interp, kMaxInterpFrames);
    in.interp = x.interp;
    in.eval_begin = h->eval_begin;
    in.eval_end = h->eval_end;
  }
  StackReader reader(g_pid, x.window, g_reader_mode);
  // This thread's own stack from here up stays mapped while we read it:
  // plain loads, where sp is close enough below its top that it cannot be
  // another stack (a coroutine's, an alternate one). Deeper, or elsewhere,
  // the reads are guarded.
  const uint64_t top = stack_top();
  if (in.sp < top && top - in.sp <= kDirectStackBytes) reader.set_direct_range(in.sp, top);
  const size_t n = sampler::unwind_stack(in, reader, &x.rules, x.words, kMaxSampleWords).words;
  size_t skip = 0;
  while (skip < n && !(x.words[skip] & internal::kInterpreterFrameTag) && in_self(x.words[skip])) ++skip;
  if (skip == n) skip = 0;  // all ours (a static build): keep it whole rather than empty
  if (skip) std::memmove(x.words, x.words + skip, (n - skip) * sizeof(uint64_t));
  return n - skip;
#else
  (void)x;
  return 0;
#endif
}

void record(const void* p, std::size_t size, uint16_t pool, uint64_t interval) noexcept {
  const uint32_t session = internal::g_session.load(std::memory_order_relaxed);
  Ring* r = internal::ring_for(session);
  if (!r) return;
  Scratch* x = scratch();
  if (!x) return;
  size_t n = capture(*x);
  x->words[n++] = interval;
  const uint32_t slots = sample_frame_slots(n);
  uint64_t pos;
  if (!Ring::claim(r, 1 + slots, &pos)) return;  // full: the ring counts the drop
  Event* e = r->slot_at(pos);
  e->ts = internal::now_ticks(session);
  e->kind = EventKind::HeapAlloc;
  e->ref = NameRef::None;
  e->extra = pool;
  e->loc = static_cast<uint32_t>(n);
  e->p0 = reinterpret_cast<uintptr_t>(p);
  e->p1 = size;
  for (uint32_t k = 0; k < slots; ++k) {
    const size_t first = size_t{k} * 4, count = n - first < 4 ? n - first : 4;
    std::memcpy(r->slot_at(pos + 1 + k), x->words + first, count * sizeof(uint64_t));
  }
  r->publish(pos + 1 + slots);
  drainer_wake::wake_if_idle();  // its Python frames are named while their code lives, as a CPU sample's
  TableLock lock;
  switch (table_insert(table_key(p, pool))) {
    case Added::Yes: filter_add(p, 1); break;
    case Added::AlreadyThere: break;
    case Added::Full:
      if (g_untracked.fetch_add(1, std::memory_order_relaxed) == 0) {
        // write(2): no formatting, no allocation, inside malloc.
        static const char kLine[] =
            "ringprof: warning: heap sampler: 49152 sampled blocks are live; the frees of further samples are not "
            "matched (they stay in use in the profile): raise RINGPROF_HEAP_INTERVAL\n";
        [[maybe_unused]] const ssize_t w = write(2, kLine, sizeof kLine - 1);
      }
      break;
  }
}

}  // namespace

namespace internal {

void heap_sample(const void* p, std::size_t size, uint16_t pool) noexcept {
  const uint64_t interval = g_interval.load(std::memory_order_relaxed);
  if (interval == 0) {
    t_heap_left = kOffRecheckBytes;
    t_started = false;
    return;
  }
  if (!t_started) {
    // The first look since sampling began: where the first point lies,
    // counted from the start of this block.
    t_started = true;
    const int64_t gap = draw(interval);
    if (gap > static_cast<int64_t>(size)) {
      t_heap_left = gap - static_cast<int64_t>(size);
      return;
    }
  }
  // A sample point fell inside this block. The next is drawn from its end:
  // the gaps are memoryless, so each block is still picked with probability
  // 1 - exp(-size / interval), independently of the others.
  t_heap_left = draw(interval);
  if (p == nullptr || t_busy || t_ringprof_thread) return;
  t_busy = true;
  record(p, size, pool, interval);
  t_busy = false;
}

void heap_unsample(const void* p, std::size_t size, uint16_t pool) noexcept {
  if (t_busy) return;
  t_busy = true;  // a signal handler's free on this thread must not wait on the lock held here
  bool found;
  {
    TableLock lock;
    found = table_erase(table_key(p, pool));
    if (found) {
      filter_add(p, -1);
    }
  }
  if (found && !t_ringprof_thread) emit_memory(EventKind::HeapFree, p, size, pool);
  t_busy = false;
}

}  // namespace internal

uint64_t heap_sampling_interval() noexcept { return g_interval.load(std::memory_order_relaxed); }

namespace sampler {

void set_heap_interval(uint64_t interval) noexcept {
  if (interval != 0) {
    if (!g_scratch_key_made) g_scratch_key_made = pthread_key_create(&g_scratch_key, free_scratch) == 0;
    g_pid = static_cast<int>(getpid());
    g_reader_mode = StackReader::probe_mode();
    if (g_self_ranges == 0) dl_iterate_phdr(note_self, nullptr);
    TableLock lock;
    for (size_t i = 0; i < kTableSize; ++i) {
      if (g_table[i] == 0) continue;
      filter_add(key_address(g_table[i]), -1);
      g_table[i] = 0;
    }
    g_table_count = 0;
  }
  g_interval.store(interval, std::memory_order_relaxed);
}

void reset_heap_after_fork() noexcept {
  g_lock.clear(std::memory_order_relaxed);
  g_pid = static_cast<int>(getpid());
}

}  // namespace sampler

}  // namespace ringprof
