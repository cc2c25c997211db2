// perfetto_samples.h (internal) — CPU samples as Perfetto PerfSample packets.
//
// Each sample is a PerfSample (pid, tid, timestamp) naming an interned
// callstack; the callstack names interned frames (root first), each frame a
// function name, a source file and line where the symbolizer knows them, and
// a mapping (the module: path components, build ID, address range) with the
// address as the module's ELF virtual address (runtime address minus the
// module's load bias), which is what a symbolizer looks up. Inline chains are expanded:
// one frame per inlined function, as ringprof's other outputs show them.
// Everything is interned on the process's sequence, once per process.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "exporters/perfetto_packets.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof::internal {

class PerfettoSamples {
 public:
  PerfettoSamples(PacketWriter& w, Sequence& seq, StackResolver& resolver) : w_(w), seq_(seq), resolver_(resolver) {}

  void sample(const ProcessState& process, uint64_t ts_ns, uint32_t tid, uint32_t stack_id);
  uint64_t written() const { return written_; }

 private:
  uint64_t callstack(const ProcessState& process, uint32_t stack_id, pf::InternedData& interned);
  uint64_t frame(const ProcessState& process, const ResolvedFrame& f, pf::InternedData& interned);
  uint64_t mapping(const ProcessState& process, uint32_t module_id, pf::InternedData& interned);
  uint64_t string(StringMap& table, std::string_view s, google::protobuf::RepeatedPtrField<pf::InternedString>* out);

  PacketWriter& w_;
  Sequence& seq_;
  StackResolver& resolver_;
  std::unordered_map<uint32_t, uint64_t> callstacks_;  // by stack id
  std::unordered_map<uint32_t, uint64_t> mappings_;    // by module id (0: no module)
  StringMap frames_;                                   // by module, address, function, file, line
  StringMap function_names_, source_paths_, build_ids_, mapping_paths_;
  uint64_t written_ = 0;
};

}  // namespace ringprof::internal
