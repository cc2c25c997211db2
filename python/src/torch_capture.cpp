// torch_capture.cpp — the RecordFunction callbacks (torch_capture.h).
#include "torch_capture.h"

#include <ATen/record_function.h>

#include <atomic>
#include <cstdint>
#include <charconv>
#include <mutex>
#include <new>
#include <string>
#include <pthread.h>
#include <string_view>
#include <type_traits>
#include <unordered_set>

#include "ringprof/internal/interpreter_frames.h"
#include "ringprof/ringprof.h"
#include "torch_collectives.h"
#include "torch_flops.h"
#include "torch_names.h"
#include "zone_bits.h"

namespace ringprof::torch_operators {
namespace {

std::atomic<int> g_level{kSampled};
std::atomic<double> g_sampling{0.01};
std::atomic<bool> g_shapes{true};
std::atomic<bool> g_stacks{false};
std::atomic<bool> g_flops{false};
// What the registered inputs callback records: shapes and types, FLOPs.
// Set under g_mu whenever the registration is looked at, read by the
// callback (an operator running meanwhile may see the old pair).
std::atomic<bool> g_cb_shapes{false};
std::atomic<bool> g_cb_flops{false};

// Registration state, under g_mu.
std::mutex g_mu;
at::CallbackHandle g_handle = at::INVALID_CALLBACK_HANDLE;
double g_registered = 0;    // the registered callback's probability; 0: none
bool g_registered_inputs = false;  // ... and whether it records input shapes
bool g_registered_stacks = false;  // ... and Python stacks
bool g_following = false;   // enable()d: recording, following the level
int g_level_subscription = -1;
at::CallbackHandle g_noop_handle = at::INVALID_CALLBACK_HANDLE;

constexpr const char* kSamplingMark = "ringprof.torch.sampling";

// What torch.profiler records: operators, autograd's backward functions,
// record_function() labels and TorchScript functions.
const std::unordered_set<at::RecordScope, std::hash<at::RecordScope>> kScopes{
    at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION, at::RecordScope::USER_SCOPE,
    at::RecordScope::TORCHSCRIPT_FUNCTION};

constexpr const char* kFlowName = "fwdbwd";
// The argument keys torch.profiler's traces use for the same facts.
constexpr const char* kInputDims = "Input Dims";
constexpr const char* kInputType = "Input type";
// FLOPs of the operators torch.profiler counts (with_flops; torch_flops.h).
constexpr const char* kFlops = "flops";

// Per thread: which open operators were recorded (a bit per nesting depth, so
// an end is recorded only after a recorded begin) and the last forward
// sequence number that began a flow.
// One thread-local block, so a callback pays for one TLS lookup (a call, in
// a library loaded with dlopen) instead of several.
struct ThreadOps {
  python::ZoneBits open;
  int64_t last_forward_seq = -1;
  NameCacheEntry names[kNameCacheSlots] = {};
};
// Constant-initialised and trivially destructible: no guard on each access.
thread_local constinit ThreadOps t_ops;
static_assert(std::is_trivially_destructible_v<ThreadOps>);

// Input shapes and types as text (detailed level only), built in buffers
// that keep their capacity, so a thread stops allocating once it has seen
// its longest. Apart from t_ops, whose accesses they would make pay for a
// constructor guard.
struct InputText {
  std::string dims, types;
};
thread_local InputText t_inputs;

// The flow id linking forward operator `seq` of PyTorch's logical thread
// `thread` to its backward operator. Kept below 2^53, so the Chrome trace's
// JSON numbers stay exact in a browser; bit 52 keeps these ids apart from
// the small ids applications usually give their own flows.
uint64_t flow_id(uint64_t thread, int64_t seq) {
  return (1ull << 52) | ((thread & 0xffull) << 44) | (static_cast<uint64_t>(seq) & ((1ull << 44) - 1));
}

// Whether PyTorch marked the record as ending on another thread (c10d's
// work, RPC): on_async_start's, not an operator's. Only record_function()
// scope has such records, and isAsync() is a call into libtorch: operators
// are told apart by their scope first, inline.
bool is_async(const at::RecordFunction& fn) { return fn.scope() == at::RecordScope::USER_SCOPE && fn.isAsync(); }

// The operator's ZoneBegin and flow; whether the zone was recorded.
bool begin_op(const at::RecordFunction& fn, ThreadOps& t) {
  bool on = false;
  {
    const char* raw = fn.name();
    const char* name = op_name(t.names, raw);
    on = name ? zone_begin_static(name) : zone_begin(std::string_view(raw));
    if (on) {
      const int64_t seq = fn.seqNr();
      if (seq >= 0) {
        if (fn.scope() == at::RecordScope::BACKWARD_FUNCTION) {
          flow_end(flow_id(fn.forwardThreadId(), seq));
        } else if (fn.scope() == at::RecordScope::FUNCTION && seq != t.last_forward_seq) {
          t.last_forward_seq = seq;
          flow_begin(flow_id(at::RecordFunction::currentThreadId(), seq), kFlowName);
        }
      }
    }
  }
  t.open.push(on);
  return on;
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  if (is_async(fn)) return nullptr;  // on_async_start's
  begin_op(fn, t_ops);
  return nullptr;
}

// The operator's inputs as torch.profiler's record_shapes shows them: one
// entry per input, a tensor's sizes and dtype ("[[64, 16], [16]]", "[float,
// float]"), [] and "Scalar" for a number, [] and "TensorList" for a list of
// tensors, [] and nothing for anything else (an undefined tensor, a string).
void record_shapes(const at::RecordFunction& fn) {
  std::string& dims = t_inputs.dims;
  std::string& types = t_inputs.types;
  dims.assign(1, '[');
  types.assign(1, '[');
  bool first = true;
  char number[24];
  for (const c10::IValue& v : fn.inputs()) {
    if (!first) {
      dims += ", ";
      types += ", ";
    }
    first = false;
    dims += '[';
    if (v.isTensor() && v.toTensor().defined()) {
      const at::Tensor& x = v.toTensor();
      // Nested and some sparse tensors have no sizes(): their entry stays [].
      if (!x.is_nested()) {
        bool first_size = true;
        for (const int64_t s : x.sizes()) {
          if (!first_size) dims += ", ";
          first_size = false;
          const auto [end, ec] = std::to_chars(number, number + sizeof number, s);
          (void)ec;
          dims.append(number, end);
        }
      }
      const auto dtype = x.dtype().name();  // c10::string_view in some PyTorch versions
      types.append(dtype.data(), dtype.size());
    } else if (v.isScalar()) {
      types += "Scalar";
    } else if (v.isTensorList()) {
      types += "TensorList";
    }
    dims += ']';
  }
  dims += ']';
  types += ']';
  zone_arg(kInputDims, dims);
  zone_arg(kInputType, types);
}

// What the detailed level records of the operator's inputs: shapes and
// types, and its FLOPs where torch.profiler counts them.
void record_inputs(const at::RecordFunction& fn) {
  if (g_cb_shapes.load(std::memory_order_relaxed)) record_shapes(fn);
  if (g_cb_flops.load(std::memory_order_relaxed)) {
    if (const auto flops = op_flops(fn.name(), fn.inputs())) zone_arg(kFlops, static_cast<int64_t>(*flops));
  }
}

// As on_start, and the operator's input shapes and types as its arguments
// (registered with needsInputs at the detailed level).
std::unique_ptr<at::ObserverContext> on_start_inputs(const at::RecordFunction& fn) {
  if (is_async(fn)) return nullptr;
  ThreadOps& t = t_ops;
  if (begin_op(fn, t)) {
    // A tensor whose sizes cannot be read (a custom or symbolic size policy)
    // throws: the operator keeps its zone, without arguments.
    try {
      record_inputs(fn);
    } catch (...) {
    }
  }
  return nullptr;
}

// As on_start, and the Python stack that called the operator (with_stack).
// Autograd's backward operators run on threads with no Python frames: they
// record none.
std::unique_ptr<at::ObserverContext> on_start_stack(const at::RecordFunction& fn) {
  if (is_async(fn)) return nullptr;
  if (begin_op(fn, t_ops)) internal::record_zone_stack();
  return nullptr;
}

std::unique_ptr<at::ObserverContext> on_start_inputs_stack(const at::RecordFunction& fn) {
  if (is_async(fn)) return nullptr;
  ThreadOps& t = t_ops;
  if (begin_op(fn, t)) {
    internal::record_zone_stack();
    try {
      record_inputs(fn);
    } catch (...) {
    }
  }
  return nullptr;
}

void on_end(const at::RecordFunction& fn, at::ObserverContext*) {
  // Async records are on_async_end's. A synchronous one that ended on
  // another thread than its begin's cannot end its zone there, and must not
  // pop this thread's stack: it is left open.
  if (is_async(fn) || fn.threadId() != at::RecordFunction::currentThreadId()) return;
  ThreadOps& t = t_ops;
  if (t.open.pop()) zone_end();  // (nothing open: it began before the callbacks were registered)
}

// Async records: work that PyTorch marks as ending on another thread than
// its begin (c10d's collectives, whose work completes on the backend's
// thread; RPC). Each becomes an async span with its own id, whatever the
// operator level: collectives are rare, and the tools match them across
// ranks. The id travels from begin to end in the record's observer context.
struct AsyncSpan final : at::ObserverContext {
  explicit AsyncSpan(uint64_t span_id) : id(span_id) {}
  uint64_t id;
};

constexpr const char* kSeqArg = "seq";
constexpr const char* kQueuedArg = "queued_ns";

// The data address of the record's first tensor; 0 when it has none (or one
// without storage).
uintptr_t first_tensor(const at::RecordFunction& fn) {
  try {
    for (const c10::IValue& v : fn.inputs()) {
      if (v.isTensor()) {
        const at::Tensor& t = v.toTensor();
        return t.defined() && t.has_storage() ? reinterpret_cast<uintptr_t>(t.data_ptr()) : 0;
      }
      if (v.isTensorList()) {
        const c10::List<at::Tensor> list = v.toTensorList();
        if (list.empty()) return 0;
        const at::Tensor t = list.get(0);
        return t.defined() && t.has_storage() ? reinterpret_cast<uintptr_t>(t.data_ptr()) : 0;
      }
    }
  } catch (...) {
  }
  return 0;
}

std::unique_ptr<at::ObserverContext> on_async_start(const at::RecordFunction& fn) {
  if (!fn.isAsync()) return nullptr;  // a record_function() label: the operator callback's
  const uint64_t id = new_async_id();
  if (!async_begin(id, std::string_view(fn.name()))) return nullptr;
  // The work's tensors, as an operator's: arguments right after the begin
  // belong to the span.
  try {
    record_shapes(fn);
  } catch (...) {
  }
  // The group, sequence number and queueing time ringprof.torch noted when
  // the call was made from Python (torch_collectives.h).
  if (auto note = take_collective(first_tensor(fn))) {
    zone_arg(kCollectiveArgKey, note->group);
    if (note->seq >= 0) zone_arg(kSeqArg, note->seq);
    zone_arg(kQueuedArg, note->queued_ns);
  } else if (std::string group = untold_group(); !group.empty()) {
    zone_arg(kCollectiveArgKey, group);
  }
  return std::make_unique<AsyncSpan>(id);
}

void on_async_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (ctx != nullptr) async_end(static_cast<AsyncSpan*>(ctx)->id);
}

at::CallbackHandle g_async_handle = at::INVALID_CALLBACK_HANDLE;  // under g_mu
bool g_async_capture = true;                                      // under g_mu

// c10d and RPC record their work in USER_SCOPE, which only record_function()
// labels share: operators pay nothing for this callback (measured:
// docs/performance.md#python-and-pytorch).
void apply_async_locked(bool off) {
  const bool want = g_following && !off && g_async_capture;
  if (want == (g_async_handle != at::INVALID_CALLBACK_HANDLE)) return;
  if (want) {
    // No needsInputs: that would make PyTorch copy every operator's inputs
    // while any callback records them (it is not per scope). c10d hands its
    // work's tensors to the record itself.
    g_async_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(on_async_start, on_async_end).scopes({at::RecordScope::USER_SCOPE}));
  } else {
    at::removeCallback(g_async_handle);
    g_async_handle = at::INVALID_CALLBACK_HANDLE;
  }
}

// Registers the callback `detailed` and the ops level call for, replacing
// the one registered. An operator that began under the old callback still
// gets its end from it (RecordFunction keeps the callbacks it started with).
void apply_locked(bool detailed, bool off) {
  apply_async_locked(off);
  double want = 0;
  if (g_following && !off) {
    switch (g_level.load()) {
      case kAlwaysOn: want = 1; break;
      case kSampled: want = detailed ? 1 : g_sampling.load(); break;
      case kDetailed: want = detailed ? 1 : 0; break;
      default: want = 0;
    }
  }
  // Input shapes cost a callback that copies the inputs' sizes: only while
  // the effective level is detailed, as the capture's levels promise.
  const bool shapes = want > 0 && detailed && g_shapes.load();
  const bool flops = want > 0 && detailed && g_flops.load();
  const bool inputs = shapes || flops;
  // Stacks likewise: a frame walk per operator belongs in detailed windows.
  const bool stacks = want > 0 && detailed && g_stacks.load();
  g_cb_shapes.store(shapes);
  g_cb_flops.store(flops);
  if (want == g_registered && inputs == g_registered_inputs && stacks == g_registered_stacks) return;
  if (g_handle != at::INVALID_CALLBACK_HANDLE) at::removeCallback(g_handle);
  g_handle = at::INVALID_CALLBACK_HANDLE;
  if (want > 0) {
    auto* start = stacks ? (inputs ? on_start_inputs_stack : on_start_stack) : inputs ? on_start_inputs : on_start;
    g_handle = at::addGlobalCallback(
        at::RecordFunctionCallback(start, on_end).samplingProb(want).needsInputs(inputs).scopes(kScopes));
    // The files say how operators were sampled from here on (parts per million),
    // so counts can be scaled back: recorded / probability.
    ringprof::mark(kSamplingMark, static_cast<uint64_t>(want * 1e6 + 0.5));
  }
  g_registered = want;
  g_registered_inputs = inputs;
  g_registered_stacks = stacks;
}

// What the effective level calls for now: nothing at Off (set_mode("off"),
// or recording stopped without the package's stop listener: a signal, a
// worker's finalizer), every operator at Detailed, the level's choice else.
void apply_current_locked() {
  const ringprof::Level m = ringprof::mode();
  apply_locked(m == ringprof::Level::Detailed, m == ringprof::Level::Off);
}

// fork(): the child has one thread, so g_mu may be held by a thread that is
// not there (the drainer, in a level callback), and its level subscribers are
// gone (the core resets them). The child starts over: a fresh lock, and the
// callback kept only when the child records (RINGPROF_FORK=record restarts
// recording in the core's own child handler, which runs before this one).
// Subscribes to level changes (under g_mu), once.
void follow_level_locked() {
  if (g_level_subscription >= 0) return;
  g_level_subscription = ringprof::on_level_change([](ringprof::Level) {
    // The level now, not the one announced: a later change may have passed it.
    std::lock_guard<std::mutex> l(g_mu);
    apply_current_locked();
  });
}

void before_fork() { g_mu.lock(); }
void after_fork_parent() { g_mu.unlock(); }
void after_fork_child() {
  new (&g_mu) std::mutex();
  g_level_subscription = -1;
  if (g_following && ringprof::is_recording()) {
    follow_level_locked();
  } else {
    g_following = false;
  }
  apply_current_locked();
}
[[maybe_unused]] const bool g_fork_handlers = [] {
  pthread_atfork(before_fork, after_fork_parent, after_fork_child);
  return true;
}();

}  // namespace

void enable() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_following = true;
  follow_level_locked();
  apply_current_locked();
}

void disable() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_following = false;
  apply_locked(false, true);
  if (g_level_subscription >= 0) ringprof::remove_level_callback(g_level_subscription);
  g_level_subscription = -1;
}

void sync() {
  std::lock_guard<std::mutex> lock(g_mu);
  apply_current_locked();
}

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_handle != at::INVALID_CALLBACK_HANDLE;
}

double registered_probability() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered;
}

void set_level(int level) {
  g_level.store(level);
  sync();
}

int level() { return g_level.load(); }

void set_sampling(double probability) {
  g_sampling.store(probability);
  sync();
}

double sampling() { return g_sampling.load(); }

void set_record_shapes(bool on) {
  g_shapes.store(on);
  sync();
}

bool record_shapes() { return g_shapes.load(); }

void set_record_stacks(bool on) {
  g_stacks.store(on);
  sync();
}

bool record_stacks() { return g_stacks.load(); }

void set_record_flops(bool on) {
  g_flops.store(on);
  sync();
}

bool record_flops() { return g_flops.load(); }

bool recording_stacks() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered_stacks;
}

bool recording_inputs() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_registered_inputs;
}

namespace {
std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}
}  // namespace

void set_async_capture(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_async_capture = on;
}

void set_noop_callback(bool on, double probability) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (on && g_noop_handle == at::INVALID_CALLBACK_HANDLE) {
    g_noop_handle =
        at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end).samplingProb(probability).scopes(kScopes));
  } else if (!on && g_noop_handle != at::INVALID_CALLBACK_HANDLE) {
    at::removeCallback(g_noop_handle);
    g_noop_handle = at::INVALID_CALLBACK_HANDLE;
  }
}

}  // namespace ringprof::torch_operators
