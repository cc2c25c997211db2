// py_frames.cpp — CPython 3.11 and 3.12 frames for CPU samples (py_frames.h).
//
// The frame layout is CPython's internal one, so its internal headers come
// first, here and nowhere else (Py_BUILD_CORE changes what Python.h declares;
// the pybind11 translation units must not see that). Everything below is
// compiled against the headers of the interpreter the extension is built for:
// the offsets and sizes are that version's own, never written down here.
#define Py_BUILD_CORE 1
#include <Python.h>
#if PY_VERSION_HEX >= 0x030B0000 && PY_VERSION_HEX < 0x030D0000
#define RINGPROF_PY_FRAMES 1
#include <internal/pycore_frame.h>
#else
#define RINGPROF_PY_FRAMES 0
#endif

#include "py_frames.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "line_table.h"
#include "ringprof/internal/interpreter_frames.h"

namespace ringprof::python {

namespace {

using internal::CapturedFrame;
using internal::FrameName;
using internal::InterpreterFrameHooks;
using internal::MemoryReader;

#if RINGPROF_PY_FRAMES

constexpr uint64_t kUserTop = 1ull << 56;  // no user-space address lies above
constexpr size_t kMaxSteps = 1024;         // a longer chain is a corrupt one
constexpr size_t kMaxChars = 4096;         // of a name or a file, in code points
constexpr size_t kMaxLineTable = 1u << 20;
constexpr size_t kMaxCachedCodes = 4096;
// The fixed part of a code object (its bytecode follows) and of a frame (its
// locals and stack follow): each read in one piece.
constexpr size_t kCodeHeaderBytes = offsetof(PyCodeObject, co_code_adaptive);
constexpr size_t kFrameBytes = offsetof(_PyInterpreterFrame, localsplus);

template <class T>
uint64_t address(T* p) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p));
}

bool plausible(uint64_t addr) { return addr != 0 && addr < kUserTop; }

// The code object's fixed part; false unless it is a code object now.
bool read_code(const MemoryReader& mem, uint64_t addr, PyCodeObject* out) noexcept {
  return plausible(addr) && mem.read(addr, out, kCodeHeaderBytes) && out->ob_base.ob_base.ob_type == &PyCode_Type;
}

uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// Which code object this is: a new one at a dead one's address has other
// name or file objects, or another first line (the objects are compared by
// address, so the fingerprint is taken without reading them).
uint32_t fingerprint(const PyCodeObject& c) {
  const uint64_t h =
      mix(address(c.co_qualname) ^ mix(address(c.co_filename) ^ mix(static_cast<uint32_t>(c.co_firstlineno))));
  return static_cast<uint32_t>(h ^ (h >> 32));
}

// The first code unit of the code object at `code` (_PyCode_CODE).
uint64_t code_start(uint64_t code) { return code + kCodeHeaderBytes; }

// prev_instr as a byte offset into the bytecode. A new frame's points one
// unit before the start, and a half-written one anywhere: those count as the
// first instruction rather than losing the frame.
uint32_t instr_offset(uint64_t code, const PyCodeObject& c, uint64_t prev_instr) {
  const Py_ssize_t units = c.ob_base.ob_size;
  const uint64_t start = code_start(code);
  if (units <= 0 || prev_instr < start) return 0;
  const uint64_t offset = prev_instr - start;
  return offset < static_cast<uint64_t>(units) * sizeof(_Py_CODEUNIT) && offset <= UINT32_MAX
             ? static_cast<uint32_t>(offset)
             : 0;
}

// _PyFrame_IsIncomplete on the copy: a frame not yet at its first RESUME
// (cells and free variables still being set up) is not a Python frame yet.
bool incomplete(char owner, uint64_t prev_instr, uint64_t code, const PyCodeObject& c) {
  const uint64_t first_traceable =
      code_start(code) + static_cast<uint64_t>(static_cast<int64_t>(c._co_firsttraceable)) * sizeof(_Py_CODEUNIT);
  return owner != FRAME_OWNED_BY_GENERATOR && prev_instr < first_traceable;
}

// The frames of one C-level run of the evaluation loop so far.
struct Run {
  size_t first = 0;      // index in the output of its innermost frame
  bool skipped = false;  // an incomplete frame of it was left out
  CapturedFrame last_skipped;
};

// Ends a run: its outermost frame is marked `entry`, which is how the sampler
// pairs runs with the native frames of the evaluation loop. A run is never
// left empty, or every run after it would be paired with the wrong native
// frame: where all its frames were incomplete (a call that had not reached
// its first instruction), the outermost of them stands for it.
void end_run(CapturedFrame* out, size_t* n, size_t max, Run* run) noexcept {
  if (*n == run->first && run->skipped && *n < max) out[(*n)++] = run->last_skipped;
  if (*n > run->first) out[*n - 1].entry = true;
  run->first = *n;
  run->skipped = false;
}

// One frame of the chain as read, before its code object is.
struct Pending {
  uint64_t code = 0;
  uint64_t prev_instr = 0;
  char owner = 0;
  bool is_entry = false;  // 3.11: the outermost frame of a run
  bool shim = false;      // 3.12: a run's shim frame (no code)
  uint32_t request = 0;   // which read holds its code object (one per distinct code object)
};

// Bytes of scratch each frame needs: its Pending, a copy of its code
// object's fixed part and the request that reads it.
constexpr size_t kScratchPerFrame = sizeof(Pending) + kCodeHeaderBytes + sizeof(internal::ReadRequest);

size_t walk(const MemoryReader& mem, CapturedFrame* out, size_t max) noexcept {
  // This thread's state from the GIL-state TSS slot (pthread_getspecific):
  // set whether or not the thread holds the GIL now, which is the point, as
  // a thread inside a long native call has released it.
  PyThreadState* ts = PyGILState_GetThisThreadState();
  uint64_t cframe = 0, frame = 0;
  if (!ts || max == 0 || !mem.read(address(ts) + offsetof(PyThreadState, cframe), &cframe) || !plausible(cframe) ||
      !mem.read(cframe + offsetof(_PyCFrame, current_frame), &frame))
    return 0;
  // The scratch holds the chain, then the code objects' copies, then the
  // batch that reads those: the chain costs a read per frame (they lie
  // together in the thread's frame stack, so mostly one window), the code
  // objects one system call for all.
  const size_t cap = std::min(max, mem.scratch_bytes / kScratchPerFrame);
  if (cap == 0) return 0;
  auto* pending = reinterpret_cast<Pending*>(mem.scratch);
  auto* codes = reinterpret_cast<unsigned char*>(pending + cap);
  auto* requests = reinterpret_cast<internal::ReadRequest*>(codes + cap * kCodeHeaderBytes);
  size_t count = 0;
  uint64_t last = 0;
  for (size_t step = 0; step < kMaxSteps && plausible(frame) && frame != last && count < cap; ++step) {
    _PyInterpreterFrame f;
    if (!mem.read(frame, &f, kFrameBytes)) break;
    last = frame;
    frame = address(f.previous);
    Pending& p = pending[count];
    p = Pending{};
#if PY_VERSION_HEX >= 0x030C0000
    // 3.12: each C-level run starts with a shim frame of its own on the C
    // stack (no Python code): the frame before it was the run's outermost.
    if (f.owner == FRAME_OWNED_BY_CSTACK) {
      p.shim = true;
      ++count;
      continue;
    }
#else
    p.is_entry = f.is_entry;
#endif
    p.code = address(f.f_code);
    if (!plausible(p.code)) break;
    p.prev_instr = address(f.prev_instr);
    p.owner = f.owner;
    ++count;
  }
  // One read per distinct code object (a recursion, or nn.Module's
  // _call_impl at every layer, repeats them): each costs the kernel a page
  // lookup.
  size_t nreq = 0;
  for (size_t i = 0; i < count; ++i) {
    if (pending[i].shim) continue;
    size_t k = 0;
    while (k < nreq && requests[k].addr != pending[i].code) ++k;
    if (k == nreq) requests[nreq++] = {pending[i].code, codes + k * kCodeHeaderBytes, kCodeHeaderBytes};
    pending[i].request = static_cast<uint32_t>(k);
  }
  // A frame whose code object cannot be read ends the walk there, as a
  // failed read of the frame itself does.
  const size_t readable = mem.read_many(requests, nreq);

  size_t n = 0;
  Run run;
  for (size_t i = 0; i < count && n < max; ++i) {
    const Pending& p = pending[i];
    if (p.shim) {
      end_run(out, &n, max, &run);
      continue;
    }
    if (p.request >= readable) break;
    PyCodeObject c;
    std::memcpy(static_cast<void*>(&c), codes + size_t{p.request} * kCodeHeaderBytes, kCodeHeaderBytes);
    if (c.ob_base.ob_base.ob_type != &PyCode_Type) break;
    CapturedFrame cf;
    cf.code = p.code;
    cf.check = fingerprint(c);
    cf.instr = instr_offset(p.code, c, p.prev_instr);
    if (!incomplete(p.owner, p.prev_instr, p.code, c)) {
      out[n++] = cf;
    } else {
      run.skipped = true;
      run.last_skipped = cf;
    }
    if (p.is_entry) end_run(out, &n, max, &run);
  }
  return n;
}

// The calling thread's own frames (InterpreterFrameHooks::capture_self):
// outside a signal handler, the chain is whole and stays put while this
// thread runs this code, and its frames keep their code objects alive, so the
// fields are read in place. Frames as walk() gives them, without run marks
// (nothing pairs these with native frames).
size_t capture_self(CapturedFrame* out, size_t max) noexcept {
  PyThreadState* ts = PyGILState_GetThisThreadState();
  if (!ts || !ts->cframe) return 0;
  size_t n = 0, steps = 0;
  for (_PyInterpreterFrame* f = ts->cframe->current_frame; f && n < max && steps < kMaxSteps;
       f = f->previous, ++steps) {
#if PY_VERSION_HEX >= 0x030C0000
    if (f->owner == FRAME_OWNED_BY_CSTACK) continue;  // a run's shim frame
#endif
    const PyCodeObject& c = *f->f_code;
    const uint64_t code = address(f->f_code), prev_instr = address(f->prev_instr);
    if (incomplete(f->owner, prev_instr, code, c)) continue;
    CapturedFrame& cf = out[n++];
    cf = CapturedFrame{};
    cf.code = code;
    cf.check = fingerprint(c);
    cf.instr = instr_offset(code, c, prev_instr);
  }
  return n;
}

size_t capture(const MemoryReader& mem, CapturedFrame* out, size_t max) noexcept {
  const int saved = errno;  // a failed read sets it; the interrupted code may be reading it
  const size_t n = walk(mem, out, max);
  errno = saved;
  return n;
}

void append_utf8(uint32_t cp, std::string* out) {
  if (cp >= 0xd800 && cp < 0xe000) cp = 0xfffd;  // a lone surrogate (surrogateescape'd bytes of a path)
  if (cp < 0x80) {
    out->push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (cp >> 6)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else if (cp < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (cp >> 12)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (cp >> 18)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (cp & 0x3f)));
  }
}

// A str object as UTF-8 (its first kMaxChars code points). Only compact
// strings, the form every name and file of a code object has: the characters
// follow the header, 1, 2 or 4 bytes each.
bool read_text(const MemoryReader& mem, uint64_t addr, std::string* out) {
  PyASCIIObject head;
  if (!plausible(addr) || !mem.read(addr, &head) || head.ob_base.ob_type != &PyUnicode_Type) return false;
  const unsigned kind = head.state.kind, ascii = head.state.ascii;
  if (!head.state.compact || head.length < 0 || (kind != 1 && kind != 2 && kind != 4) || (ascii && kind != 1))
    return false;
  const size_t chars = std::min(static_cast<size_t>(head.length), kMaxChars);
  const uint64_t data = addr + (ascii ? sizeof(PyASCIIObject) : sizeof(PyCompactUnicodeObject));
  std::string raw(chars * kind, '\0');
  if (!raw.empty() && !mem.read(data, raw.data(), raw.size())) return false;
  if (ascii) {
    // A byte past 0x7f means the memory stopped being this string between
    // the two reads (the object died and its memory was reused): refuse it
    // rather than pass on bytes that are not text.
    for (const char ch : raw)
      if (static_cast<unsigned char>(ch) >= 0x80) return false;
    *out = std::move(raw);
    return true;
  }
  out->clear();
  for (size_t i = 0; i < chars; ++i) {
    uint32_t cp = 0;
    if (kind == 1) {
      cp = static_cast<unsigned char>(raw[i]);
    } else if (kind == 2) {
      uint16_t u;
      std::memcpy(&u, raw.data() + 2 * i, 2);
      cp = u;
    } else {
      std::memcpy(&cp, raw.data() + 4 * i, 4);
      if (cp > 0x10ffff) cp = 0xfffd;
    }
    append_utf8(cp, out);
  }
  return true;
}

// A bytes object's contents (the location table; its first kMaxLineTable bytes).
bool read_bytes(const MemoryReader& mem, uint64_t addr, std::vector<uint8_t>* out) {
  PyBytesObject head;
  if (!plausible(addr) || !mem.read(addr, &head, offsetof(PyBytesObject, ob_sval)) ||
      head.ob_base.ob_base.ob_type != &PyBytes_Type || head.ob_base.ob_size < 0)
    return false;
  out->resize(std::min(static_cast<size_t>(head.ob_base.ob_size), kMaxLineTable));
  return out->empty() || mem.read(addr + offsetof(PyBytesObject, ob_sval), out->data(), out->size());
}

// What describe needs of one code object, read once: its samples usually
// come back many times, at different instructions.
struct CodeNames {
  uint32_t check = 0;
  std::string function, file;
  int32_t first_line = 0;
  std::vector<uint8_t> lines;
};
struct NameCache {
  std::mutex mutex;  // the drainer's thread, and the test helper's
  std::unordered_map<uint64_t, CodeNames> by_code;
};
NameCache& name_cache() {
  static auto* c = new NameCache();  // never destroyed: the drainer may name frames during exit
  return *c;
}

bool describe(const MemoryReader& mem, const CapturedFrame& frame, FrameName* out) {
  // Read again, even for a cached code object: it may have died since.
  PyCodeObject c;
  if (!read_code(mem, frame.code, &c) || fingerprint(c) != frame.check) return false;
  NameCache& cache = name_cache();
  std::lock_guard<std::mutex> lock(cache.mutex);
  auto it = cache.by_code.find(frame.code);
  if (it == cache.by_code.end() || it->second.check != frame.check) {
    CodeNames fresh;
    fresh.check = frame.check;
    fresh.first_line = c.co_firstlineno;
    if (!read_text(mem, address(c.co_qualname), &fresh.function) ||
        !read_text(mem, address(c.co_filename), &fresh.file) || !read_bytes(mem, address(c.co_linetable), &fresh.lines))
      return false;
    // The code object holds its name, file and line table: if it is still
    // the same one after they were read, they were alive while being read.
    // If it died meanwhile, what was read may be another object's memory.
    PyCodeObject after;
    if (!read_code(mem, frame.code, &after) || fingerprint(after) != frame.check) return false;
    if (cache.by_code.size() >= kMaxCachedCodes) cache.by_code.clear();
    it = cache.by_code.insert_or_assign(frame.code, std::move(fresh)).first;
  }
  const CodeNames& names = it->second;
  out->function = names.function;
  out->file = names.file;
  out->line = line_for_code_unit(names.lines.data(), names.lines.size(), names.first_line,
                                 frame.instr / static_cast<uint32_t>(sizeof(_Py_CODEUNIT)));
  return true;
}

// Where the evaluation loop's machine code lies. Its dynamic symbol gives the
// start and size (the interpreter exports it for extensions, so it is there
// even in a stripped binary). GCC's profile-guided builds (Debian's among
// them) move its rarely run blocks into a separate `.cold` part that no
// dynamic symbol covers; a sample taken in a call made from there does not
// see that run of the loop.
bool eval_loop_range(uint64_t* begin, uint64_t* end, std::string* why) {
  void* fn = reinterpret_cast<void*>(&_PyEval_EvalFrameDefault);
  Dl_info info{};
  void* entry = nullptr;  // the symbol's ElfW(Sym)
  if (!dladdr1(fn, &info, &entry, RTLD_DL_SYMENT) || !entry || info.dli_saddr != fn ||
      static_cast<const ElfW(Sym)*>(entry)->st_size == 0) {
    *why =
        "Python frames in samples need the extent of _PyEval_EvalFrameDefault, which this interpreter's dynamic "
        "symbols do not give; samples keep native frames only";
    return false;
  }
  *begin = address(fn);
  *end = *begin + static_cast<const ElfW(Sym)*>(entry)->st_size;
  return true;
}

InterpreterFrameHooks g_hooks;

// The test helper's reader: process_vm_readv like the sampler's, or a plain
// copy where a container's seccomp profile refuses it (the frames read here
// are the calling thread's own, alive while it waits in this call).
bool read_self(void*, uint64_t addr, void* out, size_t n) noexcept {
  if (n == 0) return true;
  iovec local{out, n}, remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr)), n};
  return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == static_cast<ssize_t>(n);
}
size_t read_self_many(void*, const internal::ReadRequest* requests, size_t n) noexcept {
  std::vector<iovec> local(n), remote(n);
  size_t want = 0;
  for (size_t i = 0; i < n; ++i) {
    local[i] = {requests[i].out, requests[i].n};
    remote[i] = {reinterpret_cast<void*>(static_cast<uintptr_t>(requests[i].addr)), requests[i].n};
    want += requests[i].n;
  }
  const ssize_t got = n ? process_vm_readv(getpid(), local.data(), n, remote.data(), n, 0) : 0;
  if (got < 0) return 0;
  size_t left = static_cast<size_t>(got), done = 0;
  while (done < n && left >= requests[done].n) left -= requests[done++].n;
  return static_cast<size_t>(got) == want ? n : done;
}
bool copy_self(void*, uint64_t addr, void* out, size_t n) noexcept {
  if (addr == 0) return false;
  std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), n);
  return true;
}
// The test helper's faults (FrameFault): a reader around test_reader() that
// changes what one read returns, as if the object had died in between.
struct FaultyReader {
  MemoryReader inner;
  FrameFault fault = FrameFault::kNone;
  uint64_t code = 0;  // the frame's code object (alive: the caller holds it)
  uint64_t text = 0;  // its name's characters
  int code_reads = 0;
};
bool read_faulty(void* self, uint64_t addr, void* out, size_t n) noexcept {
  auto* r = static_cast<FaultyReader*>(self);
  if (!r->inner.read(addr, out, n)) return false;
  if (r->fault == FrameFault::kNameChanges && addr == r->text && n > 0) static_cast<unsigned char*>(out)[0] |= 0x80;
  if (r->fault == FrameFault::kCodeDies && addr == r->code && ++r->code_reads > 1 && n >= kCodeHeaderBytes)
    ++static_cast<PyCodeObject*>(out)->co_firstlineno;  // another code object's fingerprint
  return true;
}

MemoryReader test_reader() {
  int probe = 0, copy = 1;
  // The capture's working memory, as the sampler gives each thread.
  thread_local std::vector<unsigned char> scratch(512 * kScratchPerFrame);
  MemoryReader r;
  const bool vm = read_self(nullptr, address(&probe), &copy, sizeof copy);
  r.read_fn = vm ? read_self : copy_self;
  r.read_many_fn = vm ? read_self_many : nullptr;
  r.scratch = scratch.data();
  r.scratch_bytes = scratch.size();
  return r;
}

#else

constexpr const char* kUnsupported =
    "Python frames in samples need CPython 3.11 or 3.12; samples keep native frames only";

#endif  // RINGPROF_PY_FRAMES

}  // namespace

bool register_python_frame_hooks(std::string* why) {
#if RINGPROF_PY_FRAMES
  static std::string failure;
  static const bool registered = [] {
    InterpreterFrameHooks h;
    h.name = PY_VERSION_HEX >= 0x030C0000 ? "CPython 3.12" : "CPython 3.11";
    if (!eval_loop_range(&h.eval_begin, &h.eval_end, &failure)) return false;
    h.capture = capture;
    h.capture_self = capture_self;
    h.describe = describe;
    g_hooks = h;
    internal::set_interpreter_frame_hooks(&g_hooks);
    return true;
  }();
  if (!registered) *why = failure;
  return registered;
#else
  *why = kUnsupported;
  return false;
#endif
}

std::vector<CapturedFrame> capture_frames_for_test(bool in_place) {
#if RINGPROF_PY_FRAMES
  CapturedFrame frames[512];
  const size_t n =
      in_place ? capture_self(frames, std::size(frames)) : capture(test_reader(), frames, std::size(frames));
  return std::vector<CapturedFrame>(frames, frames + n);
#else
  (void)in_place;
  return {};
#endif
}

bool describe_frame_for_test(const CapturedFrame& frame, FrameName* out, FrameFault fault) {
#if RINGPROF_PY_FRAMES
  FaultyReader r;
  r.inner = test_reader();
  PyCodeObject c;
  // Read as describe reads it: an address that is not a code object is
  // refused there, fault or none.
  if (fault == FrameFault::kNone || !read_code(r.inner, frame.code, &c)) return describe(r.inner, frame, out);
  r.fault = fault;
  r.code = frame.code;
  r.text = address(c.co_qualname) + sizeof(PyASCIIObject);
  MemoryReader mem;
  mem.read_fn = read_faulty;
  mem.self = &r;
  return describe(mem, frame, out);
#else
  (void)frame;
  (void)out;
  (void)fault;
  return false;
#endif
}

}  // namespace ringprof::python
