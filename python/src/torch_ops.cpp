// torch_ops.cpp — the `_ringprof_torch` extension: PyTorch operators as
// ringprof zones, through RecordFunction's global callbacks.
//
// Each operator (aten::linear, aten::addmm, autograd's AddmmBackward0, a
// record_function() label) is a zone on the thread that ran it: the start
// callback records a ZoneBegin named by the interned operator name, the end
// callback its ZoneEnd. Forward and backward operators are linked as
// torch.profiler links them, by the forward operator's sequence number: the
// first operator of a forward sequence number begins a flow named "fwdbwd",
// the backward operator with that number ends it, on the autograd thread's
// track. The callbacks are registered only while ringprof records (the
// package's start and stop listeners), so a process that is not recording
// pays nothing.
#include <ATen/record_function.h>
#include <pybind11/pybind11.h>

#include <atomic>
#include <mutex>
#include <string_view>

#include "ringprof/ringprof.h"
#include "torch_names.h"

namespace py = pybind11;

namespace ringprof::torch_ops {
namespace {

enum Level : int { kOff = 0, kAlwaysOn = 1, kDetailed = 2 };
std::atomic<int> g_level{kAlwaysOn};

std::mutex g_mu;  // registration only
at::CallbackHandle g_handle = at::INVALID_CALLBACK_HANDLE;
at::CallbackHandle g_noop_handle = at::INVALID_CALLBACK_HANDLE;

constexpr const char* kFlowName = "fwdbwd";

// Per thread: which open operators were recorded (a bit per nesting depth, so
// an end is recorded only after a recorded begin) and the last forward
// sequence number that began a flow.
struct ThreadOps {
  uint64_t recorded = 0;
  uint32_t depth = 0;
  int64_t last_forward_seq = -1;
};
thread_local ThreadOps t_ops;

// The flow id linking forward operator `seq` of PyTorch's logical thread
// `thread` to its backward operator. Kept below 2^53, so the Chrome trace's
// JSON numbers stay exact in a browser; bit 52 keeps these ids apart from
// the small ids applications usually give their own flows.
uint64_t flow_id(uint64_t thread, int64_t seq) {
  return (1ull << 52) | ((thread & 0xffull) << 44) | (static_cast<uint64_t>(seq) & ((1ull << 44) - 1));
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  ThreadOps& t = t_ops;
  bool on = false;
  if (g_level.load(std::memory_order_relaxed) != kDetailed || ringprof::detailed()) {
    const char* raw = fn.name();
    const char* name = op_name(raw);
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
  if (t.depth < 64) {
    if (on) t.recorded |= (1ull << t.depth);
    else t.recorded &= ~(1ull << t.depth);
  } else if (on) {
    zone_end();  // deeper than the bits track: keep the thread's zones balanced
  }
  ++t.depth;
  return nullptr;
}

void on_end(const at::RecordFunction&, at::ObserverContext*) {
  ThreadOps& t = t_ops;
  if (t.depth == 0) return;  // began before the callbacks were registered
  --t.depth;
  if (t.depth < 64 && (t.recorded >> t.depth & 1)) zone_end();
}

void enable() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_handle != at::INVALID_CALLBACK_HANDLE || g_level.load() == kOff) return;
  g_handle = at::addGlobalCallback(at::RecordFunctionCallback(on_start, on_end)
                                       .scopes({at::RecordScope::FUNCTION, at::RecordScope::BACKWARD_FUNCTION,
                                                at::RecordScope::USER_SCOPE, at::RecordScope::TORCHSCRIPT_FUNCTION}));
}

void disable() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_handle == at::INVALID_CALLBACK_HANDLE) return;
  at::removeCallback(g_handle);
  g_handle = at::INVALID_CALLBACK_HANDLE;
}

// For the benchmark: the floor any operator capture pays, a global callback
// that does nothing.
std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}

}  // namespace
}  // namespace ringprof::torch_ops

PYBIND11_MODULE(_ringprof_torch, m) {
  using namespace ringprof::torch_ops;
  m.doc() = "PyTorch operators as ringprof zones; import ringprof.torch instead.";
  m.def("_set_level", [](int level) {
    g_level.store(level);
    if (level == kOff) disable();
  });
  m.def("_level", [] { return g_level.load(); });
  m.def("_enable", [] { enable(); }, "Registers the callbacks (while recording).");
  m.def("_disable", [] { disable(); }, "Removes them.");
  m.def("_enabled", [] {
    std::lock_guard<std::mutex> lock(g_mu);
    return g_handle != at::INVALID_CALLBACK_HANDLE;
  });
  m.def("_noop_callback", [](bool on) {
    std::lock_guard<std::mutex> lock(g_mu);
    if (on && g_noop_handle == at::INVALID_CALLBACK_HANDLE) {
      g_noop_handle = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end));
    } else if (!on && g_noop_handle != at::INVALID_CALLBACK_HANDLE) {
      at::removeCallback(g_noop_handle);
      g_noop_handle = at::INVALID_CALLBACK_HANDLE;
    }
  }, "Benchmarks only: a global RecordFunction callback that does nothing.");
}
