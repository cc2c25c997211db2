// Call-frame information (.eh_frame) for unwinding without frame pointers,
// read at sample time inside the signal handler.
//
// Every x86-64 ELF object carries .eh_frame (C++ exceptions need it) and the
// linker adds .eh_frame_hdr: a table of (function start, FDE) pairs sorted by
// address, which the loader maps with the object (PT_GNU_EH_FRAME). That
// table is the per-module unwind index: nothing is built or stored by
// ringprof, and a library dlopen'ed a moment ago is covered as soon as the
// drainer lists it. For one address, find_rule() binary-searches the table,
// decodes the FDE and its CIE and runs their CFA program up to the address,
// keeping only what an x86-64 unwind needs: how to compute the CFA (rsp or
// rbp plus an offset, or the PLT's expression), where the return address and
// the caller's rbp were saved, and whether the return address is undefined
// (the outermost frame: _start, clone3).
//
// Reads are bounded by the module's readable segment that holds the table
// (a loaded object's own mapped data), so a corrupt section ends the lookup
// instead of faulting. Async-signal-safe: no allocation, no lock.
#pragma once

#include <cstdint>

namespace ringprof::sampler {

// Where the loader mapped one object's unwind table.
struct UnwindModule {
  uint64_t start = 0, end = 0;  // executable range, runtime addresses
  uint64_t hdr = 0;             // .eh_frame_hdr
  uint64_t table = 0;           // its search table: fde_count pairs of int32, relative to hdr
  uint32_t fde_count = 0;
  uint64_t lo = 0, hi = 0;  // the readable range every read must stay inside
};

struct FrameRule {
  enum class Cfa : uint8_t { Sp, Fp, Plt };
  Cfa cfa = Cfa::Sp;
  bool ra_undefined = false;  // outermost frame: nothing above
  bool fp_saved = false;      // the caller's rbp is at CFA + fp_offset; otherwise rbp is unchanged
  int32_t cfa_offset = 0;     // Plt: the stub offset N from which 8 more bytes are pushed
  int32_t ra_offset = -8;     // the return address is at CFA + ra_offset
  int32_t fp_offset = 0;
};

// The rule for `pc` (already pc - 1 for a return address). False when the
// module has no FDE for it or the FDE uses something this unwinder does not
// follow (a CFA in another register or an expression other than the PLT's).
bool find_rule(const UnwindModule& m, uint64_t pc, FrameRule* out) noexcept;

}  // namespace ringprof::sampler
