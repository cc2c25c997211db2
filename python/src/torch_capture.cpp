// torch_capture.cpp — the RecordFunction callbacks (torch_capture.h).
#include "torch_capture.h"

#include <ATen/record_function.h>

#include <atomic>
#include <mutex>
#include <string_view>

#include "ringprof/ringprof.h"
#include "torch_names.h"

namespace ringprof::torch_ops {
namespace {

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

}  // namespace

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

bool enabled() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_handle != at::INVALID_CALLBACK_HANDLE;
}

void set_level(int level) {
  g_level.store(level);
  if (level == kOff) disable();
}

int level() { return g_level.load(); }

namespace {
std::unique_ptr<at::ObserverContext> noop_start(const at::RecordFunction&) { return nullptr; }
void noop_end(const at::RecordFunction&, at::ObserverContext*) {}
}  // namespace

void set_noop_callback(bool on) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (on && g_noop_handle == at::INVALID_CALLBACK_HANDLE) {
    g_noop_handle = at::addGlobalCallback(at::RecordFunctionCallback(noop_start, noop_end));
  } else if (!on && g_noop_handle != at::INVALID_CALLBACK_HANDLE) {
    at::removeCallback(g_noop_handle);
    g_noop_handle = at::INVALID_CALLBACK_HANDLE;
  }
}

}  // namespace ringprof::torch_ops

