// Operator stacks (ZoneStack, what ringprof.torch's with_stack records) from
// the recording API to the tools, with a stand-in interpreter registered
// through the same hooks CPython's frames use: record_zone_stack() captures
// the calling thread's frames after a zone's begin, the drainer names and
// interns them, the file states them once, the zone tracker gives each stack
// to its zone, and `table --group-by-stack` splits the zone's rows by it.
//
// The workload, on one thread:
//   op x3 called from f (a.py:10) in main (a.py:2)
//   op x1 called from g (b.py:20) in main (a.py:3)
//     child inside it, recorded without a stack
//   op x1 with no interpreter frames (capture finds none: no stack)
//   op x1 whose code object changed before the drainer named it
// Python's own frames in a real program: tests/python/test_torch_stacks.py.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "ringprof/internal/interpreter_frames.h"
#include "ringprof/ringprof.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using internal::CapturedFrame;

// The stand-in interpreter's code objects: their addresses are the codes.
struct Code {
  const char* function;
  const char* file;
  uint32_t check;
};
const Code kF{"f", "a.py", 1}, kG{"g", "b.py", 2}, kMain{"main", "a.py", 3};

// The frames the next capture reports, innermost first (instr = the line).
thread_local std::vector<CapturedFrame> t_frames;

uint64_t code_of(const Code& c) { return reinterpret_cast<uintptr_t>(&c); }

CapturedFrame frame(const Code& c, uint32_t line, uint32_t check = 0) {
  CapturedFrame f;
  f.code = code_of(c);
  f.check = check ? check : c.check;
  f.instr = line;
  return f;
}

size_t capture(const internal::MemoryReader&, CapturedFrame* out, size_t max) noexcept {
  size_t n = 0;
  for (; n < t_frames.size() && n < max; ++n) out[n] = t_frames[n];
  return n;
}

bool describe(const internal::MemoryReader&, const CapturedFrame& f, internal::FrameName* out) {
  for (const Code* c : {&kF, &kG, &kMain}) {
    if (f.code != code_of(*c)) continue;
    if (f.check != c->check) return false;  // not the code object captured
    *out = internal::FrameName{c->function, c->file, f.instr};
    return true;
  }
  return false;
}

const internal::InterpreterFrameHooks kHooks{"stand-in", 0, 0, capture, describe};

void op(const std::vector<CapturedFrame>& frames, bool child = false) {
  t_frames = frames;
  ASSERT_TRUE(zone_begin_static("op"));
  EXPECT_EQ(internal::record_zone_stack(), !frames.empty());
  if (child) {
    ASSERT_TRUE(zone_begin_static("child"));
    zone_end();
  }
  zone_end();
}

// Rows as "name|frame;frame calls".
std::map<std::string, uint64_t> rows(const std::string& dir, size_t n) {
  TraceReader reader({dir});
  TableOptions options;
  options.group_by_stack_n = n;
  std::map<std::string, uint64_t> out;
  for (const TableRow& r : compute_table(reader, options).rows) {
    std::string key = r.name + "|";
    for (size_t i = 0; i < r.stack.size(); ++i) key += (i ? ";" : "") + r.stack[i];
    out[key] = r.calls;
  }
  EXPECT_FALSE(reader.has_problems());
  return out;
}

TEST(ZoneStack, EachZoneGetsTheStackRecordedAfterItsBegin) {
  test::TempDir dir;
  Config c;
  c.dir = dir.path();
  c.sample_hz = 0;
  c.gpu = false;
  internal::set_interpreter_frame_hooks(nullptr);
  EXPECT_FALSE(internal::record_zone_stack());  // no interpreter, not recording
  internal::set_interpreter_frame_hooks(&kHooks);
  t_frames = {frame(kF, 10)};
  EXPECT_FALSE(internal::record_zone_stack());  // not recording
  ASSERT_TRUE(start(c));
  for (int i = 0; i < 3; ++i) op({frame(kF, 10), frame(kMain, 2)});
  op({frame(kG, 20), frame(kMain, 3)}, true);
  op({});
  op({frame(kF, 11, 99), frame(kMain, 4)});  // f's code object replaced: check 99 is not its
  stop();
  internal::set_interpreter_frame_hooks(nullptr);

  EXPECT_EQ(rows(dir.path(), 2), (std::map<std::string, uint64_t>{
                                     {"op|a.py(10): f;a.py(2): main", 3},
                                     {"op|b.py(20): g;a.py(3): main", 1},
                                     {"op|", 1},
                                     {"op|<unknown interpreter frame>;a.py(4): main", 1},
                                     {"child|", 1},
                                 }));
  EXPECT_EQ(rows(dir.path(), 1), (std::map<std::string, uint64_t>{
                                     {"op|a.py(10): f", 3},
                                     {"op|b.py(20): g", 1},
                                     {"op|", 1},
                                     {"op|<unknown interpreter frame>", 1},
                                     {"child|", 1},
                                 }));
  // Not grouped: one row per name, no stacks.
  EXPECT_EQ(rows(dir.path(), 0), (std::map<std::string, uint64_t>{{"op|", 6}, {"child|", 1}}));

  // Five ZoneStack events, three distinct stacks, each stated once.
  TraceReader reader({dir.path()});
  const TraceInfo info = collect_info(reader);
  EXPECT_FALSE(reader.has_problems());
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::ZoneStack)], 5u);
  ASSERT_EQ(info.processes.size(), 1u);
  EXPECT_EQ(info.processes[0].stacks, 3u);
}

}  // namespace
}  // namespace ringprof
