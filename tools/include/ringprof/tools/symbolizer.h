// ringprof/tools/symbolizer.h — turns addresses from CPU stack samples into function
// names and source lines, offline, from the ELF files and DWARF of the modules
// the profile recorded. The flame-graph, pprof and table outputs call it.
//
// How a module's files are found, in this order:
//   1. By GNU build ID, when the profile recorded one: <dir>/.build-id/xx/rest.debug
//      and <dir>/xx/rest.debug under every symbol-path dir and then /usr/lib/debug,
//      then any plain file directly in a symbol-path dir whose own build ID matches
//      (each dir is scanned once). A candidate is used only if its build ID matches.
//   2. The path recorded in the profile, but only if its build ID matches the
//      recorded one (when both are known). A mismatch means the file was rebuilt or
//      replaced since the recording: its symbols would be wrong, so the module is
//      left unresolved and one warning is queued (take_warnings()).
//   3. The .gnu_debuglink of a file found above, when no file so far has DWARF:
//      next to it, in its .debug/ dir, under /usr/lib/debug/<its dir>, and in every
//      symbol-path dir.
// Function names come from .symtab when a file has one, else from .dynsym; file,
// line and inline chains come from DWARF. Names are demangled with
// abi::__cxa_demangle, so C++ names carry their parameter lists ("ns::f(int)").
//
// Whatever goes wrong (a missing, unreadable, non-ELF, stripped or truncated
// file), symbolize() still returns one frame, named "<module basename>+0x<hex>"
// where the offset is address - base. Nothing is ever thrown out of symbolize().
//
// Memory: every module is opened once and kept (its ELF is mapped, not read) with
// its symbol table and an index of its DWARF units; resolved addresses are cached
// up to a fixed number of entries. Not thread-safe: use one Symbolizer per thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ringprof {

// A loaded module as a profile file records it.
struct ModuleRef {
  std::string path;      // path at recording time
  std::string build_id;  // GNU build ID, lowercase hex ("" if none)
  uint64_t base = 0;     // load bias: runtime address = base + ELF virtual address (dl_iterate_phdr's dlpi_addr)
};

struct SymbolizedFrame {
  std::string function;  // demangled; empty when unknown
  std::string file;      // source file when DWARF line info exists, else empty
  uint32_t line = 0;     // 0 when unknown
  bool inlined = false;  // this frame is an inlined call inside the next frame of the same address
};

// What was found for a module, for `ringprof info` and warnings.
struct ModuleStatus {
  std::string elf_path;    // the file whose symbols are used ("" if none was found)
  std::string debug_path;  // the file whose DWARF gives file:line ("" if none)
  bool mini_debuginfo = false;  // static functions named from elf_path's .gnu_debugdata (MiniDebugInfo)
  std::string problem;     // why nothing resolves (no file, build ID mismatch, no symbols); "" when something does
};

class Symbolizer {
 public:
  // symbol_paths: extra dirs for separate debug files (--symbol-path), searched
  // before /usr/lib/debug.
  explicit Symbolizer(std::vector<std::string> symbol_paths = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // Frames for one runtime address inside `module`: innermost first, every frame
  // but the last one `inlined`, at least one element. When nothing resolves, one
  // frame whose function is "<module basename>+0x<address - base>".
  //
  // Stack samples hold return addresses, which point just past the call: the
  // caller must pass `address - 1` for every frame except the leaf (the sampled
  // pc itself), or a call at the very end of a function, or of an inlined body,
  // is credited to whatever follows it. This function never adjusts.
  std::vector<SymbolizedFrame> symbolize(const ModuleRef& module, uint64_t address);

  // Where the module's files were found, and why not. Opens the module if needed.
  ModuleStatus module_status(const ModuleRef& module);

  // Warnings queued since the last call, each a full line ("ringprof: ..."), at
  // most one per module (a recorded path whose build ID no longer matches).
  std::vector<std::string> take_warnings();

  // For tests and diagnostics.
  size_t modules_opened() const;
  size_t cached_addresses() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringprof
