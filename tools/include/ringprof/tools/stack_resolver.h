// ringprof/tools/stack_resolver.h — recorded stacks to named frames, offline.
//
// A Sample event names a stack id; the process's files hold the stack's raw
// addresses and the modules that were loaded. The resolver finds each
// address's module, asks the Symbolizer (ELF symbols, DWARF lines, by build ID
// first) for the function and its inline chain, and caches the answer, since
// a profile repeats the same few thousand addresses millions of times.
//
// Return addresses point after their call instruction, which may already be
// the next function or line, so every frame but the leaf is looked up at
// `address - 1`. Nothing vanishes: an address outside every module becomes
// "0x<address>", one inside a module without symbols "<module>+0x<offset>".
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct ResolvedFrame {
  std::string function;     // demangled, or module+0xoffset, or 0xaddress
  std::string file;         // "" when no line information
  uint32_t line = 0;
  bool inlined = false;     // inlined into the frame that follows it
  uint32_t module_id = 0;   // 0: the address is in no recorded module
  uint64_t address = 0;     // as recorded (a return address for callers)
  bool symbolized = false;  // function came from a symbol table
  bool interpreted = false;  // a Python frame (function, file and line from the interpreter)
};

// A frame as torch.profiler prints a Python stack's entries: "file(line):
// function"; the function alone when it has no file.
std::string source_frame_text(const ResolvedFrame& f);

class Symbolizer;

class StackResolver {
 public:
  explicit StackResolver(std::vector<std::string> symbol_paths = {});
  ~StackResolver();
  StackResolver(const StackResolver&) = delete;
  StackResolver& operator=(const StackResolver&) = delete;

  // Every frame of a recorded stack, leaf first, inline chains expanded
  // (inlined callee before its caller). A stack id the files never describe
  // gives a single frame "[unknown stack]".
  const std::vector<ResolvedFrame>& stack(const ProcessState& process, uint32_t stack_id);
  // The frames of one address: the leaf (sampled instruction) or a return address.
  const std::vector<ResolvedFrame>& address(const ProcessState& process, uint64_t address, bool leaf);
  // Warnings the symbolizer queued since the last call (a module whose file
  // no longer matches its recorded build ID, say), one "ringprof: …" line each.
  std::vector<std::string> take_warnings();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringprof
