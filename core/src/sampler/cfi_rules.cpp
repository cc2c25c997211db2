#include "sampler/cfi_rules.h"

#include <cstring>

namespace ringprof::sampler {

namespace {

// DWARF register numbers on x86-64.
constexpr uint64_t kRegRbp = 6, kRegRsp = 7, kRegRa = 16;

// Pointer encodings (DW_EH_PE_*).
constexpr uint8_t kPeOmit = 0xff;
constexpr uint8_t kPeFormat = 0x0f, kPeApp = 0x70, kPeIndirect = 0x80;
constexpr uint8_t kPeAbsptr = 0x00, kPeUleb = 0x01, kPeUdata2 = 0x02, kPeUdata4 = 0x03, kPeUdata8 = 0x04;
constexpr uint8_t kPeSleb = 0x09, kPeSdata2 = 0x0a, kPeSdata4 = 0x0b, kPeSdata8 = 0x0c;
constexpr uint8_t kPePcrel = 0x10, kPeDatarel = 0x30;

// A cursor over [pos, end) that fails, and stays failed, on any read past
// the end: callers check ok() once after a group of reads.
class Cursor {
 public:
  Cursor(uint64_t pos, uint64_t end) noexcept : pos_(pos), end_(end) {}
  bool ok() const noexcept { return ok_; }
  uint64_t pos() const noexcept { return pos_; }
  bool at_end() const noexcept { return pos_ >= end_; }
  void fail() noexcept { ok_ = false; }

  template <class T>
  T fixed() noexcept {
    T v{};
    if (!ok_ || end_ - pos_ < sizeof(T) || pos_ > end_) {
      ok_ = false;
      return v;
    }
    std::memcpy(&v, reinterpret_cast<const void*>(pos_), sizeof v);
    pos_ += sizeof v;
    return v;
  }
  uint64_t uleb() noexcept {
    uint64_t v = 0;
    for (unsigned shift = 0; ok_; shift += 7) {
      const uint8_t b = fixed<uint8_t>();
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      if (!(b & 0x80)) break;
      if (shift > 70) ok_ = false;
    }
    return v;
  }
  int64_t sleb() noexcept {
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
      b = fixed<uint8_t>();
      if (shift < 64) v |= uint64_t{b & 0x7fu} << shift;
      shift += 7;
      if (shift > 70) ok_ = false;
    } while (ok_ && (b & 0x80));
    if (shift < 64 && (b & 0x40)) v |= ~uint64_t{0} << shift;
    return static_cast<int64_t>(v);
  }
  void skip(uint64_t n) noexcept {
    if (!ok_ || n > end_ - pos_)
      ok_ = false;
    else
      pos_ += n;
  }
  // An encoded pointer; `data_base` serves DW_EH_PE_datarel.
  uint64_t pointer(uint8_t enc, uint64_t data_base = 0) noexcept {
    if (enc == kPeOmit) return 0;
    const uint64_t at = pos_;
    uint64_t v = 0;
    switch (enc & kPeFormat) {
      case kPeAbsptr: v = fixed<uint64_t>(); break;
      case kPeUleb: v = uleb(); break;
      case kPeUdata2: v = fixed<uint16_t>(); break;
      case kPeUdata4: v = fixed<uint32_t>(); break;
      case kPeUdata8: v = fixed<uint64_t>(); break;
      case kPeSleb: v = static_cast<uint64_t>(sleb()); break;
      case kPeSdata2: v = static_cast<uint64_t>(int64_t{fixed<int16_t>()}); break;
      case kPeSdata4: v = static_cast<uint64_t>(int64_t{fixed<int32_t>()}); break;
      case kPeSdata8: v = fixed<uint64_t>(); break;
      default: ok_ = false; return 0;
    }
    switch (enc & kPeApp) {
      case 0: break;
      case kPePcrel: v += at; break;
      case kPeDatarel: v += data_base; break;
      default: ok_ = false; return 0;  // textrel, funcrel, aligned: not used on x86-64 Linux
    }
    if (enc & kPeIndirect) ok_ = false;  // only personality pointers are indirect
    return v;
  }

 private:
  uint64_t pos_, end_;
  bool ok_ = true;
};

struct Cie {
  uint64_t code_align = 1;
  int64_t data_align = -8;
  uint64_t ra_reg = kRegRa;
  uint8_t fde_enc = kPeAbsptr;
  bool has_aug_data = false;
  uint64_t insns = 0, insns_end = 0;
};

// The state a CFA program builds: only the registers an unwind follows.
struct RowState {
  enum class Cfa : uint8_t { Sp, Fp, Plt, Other, Expr };
  Cfa cfa = Cfa::Sp;
  int64_t cfa_offset = 8;
  // For rbp and the return address: how they are saved.
  enum class Loc : uint8_t { Same, Offset, Undefined, Other };
  Loc fp = Loc::Same, ra = Loc::Offset;
  int64_t fp_offset = 0, ra_offset = -8;
};

constexpr int kMaxRememberedStates = 8;

// Reads a length-prefixed entry (CIE or FDE) header; returns false on a
// terminator or damage. *body is the position after the length, *end the end.
bool entry_bounds(const UnwindModule& m, uint64_t at, uint64_t* body, uint64_t* end) noexcept {
  Cursor c(at, m.hi);
  uint64_t len = c.fixed<uint32_t>();
  if (!c.ok() || len == 0) return false;
  if (len == 0xffffffffu) {
    len = c.fixed<uint64_t>();
    if (!c.ok()) return false;
  }
  *body = c.pos();
  if (len > m.hi - *body) return false;
  *end = *body + len;
  return true;
}

bool parse_cie(const UnwindModule& m, uint64_t at, Cie* cie) noexcept {
  uint64_t body, end;
  if (at < m.lo || !entry_bounds(m, at, &body, &end)) return false;
  Cursor c(body, end);
  if (c.fixed<uint32_t>() != 0) return false;  // a CIE's id is 0 in .eh_frame
  const uint8_t version = c.fixed<uint8_t>();
  if (!c.ok() || (version != 1 && version != 3 && version != 4)) return false;
  char aug[8];
  size_t n = 0;
  for (;;) {
    const char ch = static_cast<char>(c.fixed<uint8_t>());
    if (!c.ok()) return false;
    if (ch == 0) break;
    if (n + 1 >= sizeof aug) return false;
    aug[n++] = ch;
  }
  aug[n] = 0;
  if (n >= 2 && aug[0] == 'e' && aug[1] == 'h') c.skip(8);  // old GCC: a pointer, then the rest
  if (version == 4) c.skip(2);                              // address size, segment size
  cie->code_align = c.uleb();
  cie->data_align = c.sleb();
  cie->ra_reg = version == 1 ? c.fixed<uint8_t>() : c.uleb();
  if (aug[0] == 'z') {
    cie->has_aug_data = true;
    const uint64_t aug_len = c.uleb();
    Cursor a(c.pos(), c.pos() + aug_len);
    for (size_t i = 1; i < n; ++i) {
      switch (aug[i]) {
        case 'R': cie->fde_enc = a.fixed<uint8_t>(); break;
        case 'P': a.pointer(static_cast<uint8_t>(a.fixed<uint8_t>() & ~kPeIndirect)); break;
        case 'L': a.fixed<uint8_t>(); break;
        case 'S':
        case 'B':
        case 'G': break;
        default: i = n; break;  // unknown: the length lets us skip the rest
      }
    }
    c.skip(aug_len);
  }
  if (!c.ok()) return false;
  cie->insns = c.pos();
  cie->insns_end = end;
  return true;
}

// Runs a CFA program from `insns` to `end`, stopping once the location passes
// `pc`. `initial` serves DW_CFA_restore. False on an opcode this unwinder
// cannot interpret safely.
bool run_program(const Cie& cie, uint64_t insns, uint64_t end, uint64_t* loc, uint64_t pc, RowState* row,
                 const RowState& initial) noexcept {
  RowState stack[kMaxRememberedStates];
  int depth = 0;
  Cursor c(insns, end);
  auto set_reg = [&](uint64_t reg, RowState::Loc how, int64_t off) {
    if (reg == kRegRbp) {
      row->fp = how;
      row->fp_offset = off;
    } else if (reg == cie.ra_reg) {
      row->ra = how;
      row->ra_offset = off;
    }
  };
  auto restore_reg = [&](uint64_t reg) {
    if (reg == kRegRbp) {
      row->fp = initial.fp;
      row->fp_offset = initial.fp_offset;
    } else if (reg == cie.ra_reg) {
      row->ra = initial.ra;
      row->ra_offset = initial.ra_offset;
    }
  };
  auto advance = [&](uint64_t delta) {
    *loc += delta * cie.code_align;
    return *loc <= pc;  // the new row starts past pc: the current one applies
  };
  while (!c.at_end()) {
    const uint8_t op = c.fixed<uint8_t>();
    if (!c.ok()) return false;
    const uint8_t hi = op & 0xc0, lo = op & 0x3f;
    if (hi == 0x40) {  // DW_CFA_advance_loc
      if (!advance(lo)) return true;
      continue;
    }
    if (hi == 0x80) {  // DW_CFA_offset
      set_reg(lo, RowState::Loc::Offset, static_cast<int64_t>(c.uleb()) * cie.data_align);
      continue;
    }
    if (hi == 0xc0) {  // DW_CFA_restore
      restore_reg(lo);
      continue;
    }
    switch (op) {
      case 0x00: break;  // nop
      case 0x01: {       // set_loc
        *loc = c.pointer(cie.fde_enc);
        if (*loc > pc) return c.ok();
        break;
      }
      case 0x02:
        if (!advance(c.fixed<uint8_t>())) return c.ok();
        break;
      case 0x03:
        if (!advance(c.fixed<uint16_t>())) return c.ok();
        break;
      case 0x04:
        if (!advance(c.fixed<uint32_t>())) return c.ok();
        break;
      case 0x05: {  // offset_extended
        const uint64_t reg = c.uleb();
        set_reg(reg, RowState::Loc::Offset, static_cast<int64_t>(c.uleb()) * cie.data_align);
        break;
      }
      case 0x06: restore_reg(c.uleb()); break;                           // restore_extended
      case 0x07: set_reg(c.uleb(), RowState::Loc::Undefined, 0); break;  // undefined
      case 0x08: set_reg(c.uleb(), RowState::Loc::Same, 0); break;       // same_value
      case 0x09: {                                                       // register
        const uint64_t reg = c.uleb();
        c.uleb();
        set_reg(reg, RowState::Loc::Other, 0);
        break;
      }
      case 0x0a:  // remember_state
        if (depth == kMaxRememberedStates) return false;
        stack[depth++] = *row;
        break;
      case 0x0b:  // restore_state
        if (depth == 0) return false;
        *row = stack[--depth];
        break;
      case 0x0c: {  // def_cfa
        const uint64_t reg = c.uleb();
        row->cfa = reg == kRegRsp ? RowState::Cfa::Sp : reg == kRegRbp ? RowState::Cfa::Fp : RowState::Cfa::Other;
        row->cfa_offset = static_cast<int64_t>(c.uleb());
        break;
      }
      case 0x0d: {  // def_cfa_register
        const uint64_t reg = c.uleb();
        row->cfa = reg == kRegRsp ? RowState::Cfa::Sp : reg == kRegRbp ? RowState::Cfa::Fp : RowState::Cfa::Other;
        break;
      }
      case 0x0e: row->cfa_offset = static_cast<int64_t>(c.uleb()); break;  // def_cfa_offset
      case 0x0f: {                                                         // def_cfa_expression
        // The one x86-64 objects commonly carry is the PLT's: rsp + 8, plus
        // 8 once the stub has pushed its index, i.e. when (rip & 15) >= N:
        // breg7 8; breg16 0; lit15; and; litN; ge; lit3; shl; plus.
        static constexpr uint8_t kPlt[] = {0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x00, 0x2a, 0x33, 0x24, 0x22};
        const uint64_t len = c.uleb();
        const uint64_t at = c.pos();
        c.skip(len);
        if (!c.ok()) return false;
        const auto* e = reinterpret_cast<const uint8_t*>(at);
        bool plt = len == sizeof kPlt;
        for (size_t i = 0; plt && i < sizeof kPlt; ++i) plt = i == 6 ? (e[i] >= 0x30 && e[i] < 0x50) : e[i] == kPlt[i];
        row->cfa = plt ? RowState::Cfa::Plt : RowState::Cfa::Expr;
        row->cfa_offset = plt ? e[6] - 0x30 : 0;
        break;
      }
      case 0x10:
      case 0x16: {  // expression, val_expression
        const uint64_t reg = c.uleb();
        c.skip(c.uleb());
        set_reg(reg, RowState::Loc::Other, 0);
        break;
      }
      case 0x11: {  // offset_extended_sf
        const uint64_t reg = c.uleb();
        set_reg(reg, RowState::Loc::Offset, c.sleb() * cie.data_align);
        break;
      }
      case 0x12: {  // def_cfa_sf
        const uint64_t reg = c.uleb();
        row->cfa = reg == kRegRsp ? RowState::Cfa::Sp : reg == kRegRbp ? RowState::Cfa::Fp : RowState::Cfa::Other;
        row->cfa_offset = c.sleb() * cie.data_align;
        break;
      }
      case 0x13: row->cfa_offset = c.sleb() * cie.data_align; break;  // def_cfa_offset_sf
      case 0x14:
      case 0x15: {  // val_offset(_sf)
        const uint64_t reg = c.uleb();
        if (op == 0x14)
          c.uleb();
        else
          c.sleb();
        set_reg(reg, RowState::Loc::Other, 0);
        break;
      }
      case 0x2e: c.uleb(); break;  // GNU_args_size
      case 0x2f: {                 // GNU_negative_offset_extended
        const uint64_t reg = c.uleb();
        set_reg(reg, RowState::Loc::Offset, -static_cast<int64_t>(c.uleb()) * cie.data_align);
        break;
      }
      default: return false;
    }
    if (!c.ok()) return false;
  }
  return true;
}

// The FDE whose range starts at or before pc, from the sorted table.
bool lookup_fde(const UnwindModule& m, uint64_t pc, uint64_t* fde) noexcept {
  if (m.fde_count == 0 || m.table < m.lo || m.table + uint64_t{m.fde_count} * 8 > m.hi) return false;
  const auto* table = reinterpret_cast<const int32_t*>(m.table);
  const int64_t rel = static_cast<int64_t>(pc - m.hdr);
  uint32_t lo = 0, hi = m.fde_count;  // first entry whose start is > pc
  while (lo < hi) {
    const uint32_t mid = lo + (hi - lo) / 2;
    if (table[2 * mid] <= rel)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == 0) return false;
  *fde = m.hdr + static_cast<uint64_t>(static_cast<int64_t>(table[2 * (lo - 1) + 1]));
  return true;
}

}  // namespace

bool find_rule(const UnwindModule& m, uint64_t pc, FrameRule* out) noexcept {
  uint64_t fde = 0;
  if (!lookup_fde(m, pc, &fde)) return false;
  uint64_t body, end;
  if (fde < m.lo || !entry_bounds(m, fde, &body, &end)) return false;
  Cursor c(body, end);
  const uint32_t cie_ptr = c.fixed<uint32_t>();
  if (!c.ok() || cie_ptr == 0 || cie_ptr > body) return false;
  Cie cie;
  if (!parse_cie(m, body - cie_ptr, &cie)) return false;
  const uint64_t begin = c.pointer(cie.fde_enc);
  const uint64_t range = c.pointer(static_cast<uint8_t>(cie.fde_enc & kPeFormat));
  if (!c.ok() || pc < begin || pc - begin >= range) return false;
  if (cie.has_aug_data) c.skip(c.uleb());
  if (!c.ok()) return false;

  RowState row;
  uint64_t loc = begin;
  // The CIE's initial instructions define the state DW_CFA_restore returns to.
  if (!run_program(cie, cie.insns, cie.insns_end, &loc, ~uint64_t{0}, &row, row)) return false;
  const RowState initial = row;
  loc = begin;
  if (!run_program(cie, c.pos(), end, &loc, pc, &row, initial)) return false;

  FrameRule r;
  switch (row.cfa) {
    case RowState::Cfa::Sp: r.cfa = FrameRule::Cfa::Sp; break;
    case RowState::Cfa::Fp: r.cfa = FrameRule::Cfa::Fp; break;
    case RowState::Cfa::Plt: r.cfa = FrameRule::Cfa::Plt; break;  // cfa_offset holds N
    case RowState::Cfa::Other:
    case RowState::Cfa::Expr: return false;
  }
  if (row.cfa_offset < -(1 << 30) || row.cfa_offset > (1 << 30)) return false;
  r.cfa_offset = static_cast<int32_t>(row.cfa_offset);
  switch (row.ra) {
    case RowState::Loc::Undefined: r.ra_undefined = true; break;
    case RowState::Loc::Offset: r.ra_offset = static_cast<int32_t>(row.ra_offset); break;
    case RowState::Loc::Same:
    case RowState::Loc::Other: return false;
  }
  switch (row.fp) {
    case RowState::Loc::Same:
    case RowState::Loc::Undefined: break;
    case RowState::Loc::Offset:
      r.fp_saved = true;
      r.fp_offset = static_cast<int32_t>(row.fp_offset);
      break;
    case RowState::Loc::Other: return false;
  }
  *out = r;
  return true;
}

}  // namespace ringprof::sampler
