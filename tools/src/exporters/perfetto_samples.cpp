#include "exporters/perfetto_samples.h"
#include "common/json_text.h"

#include <vector>

namespace ringprof::internal {

namespace {

// "5f3a…" (lowercase hex, as the files keep it) to the raw bytes Perfetto
// keeps; "" for anything that is not hex.
std::string hex_to_bytes(const std::string& hex) {
  if (hex.size() % 2 != 0) return {};
  std::string out;
  out.reserve(hex.size() / 2);
  auto nibble = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    const int hi = nibble(hex[i]), lo = nibble(hex[i + 1]);
    if (hi < 0 || lo < 0) return {};
    out.push_back(static_cast<char>(hi << 4 | lo));
  }
  return out;
}

}  // namespace

void PerfettoSamples::sample(const ProcessState& process, uint64_t ts_ns, uint32_t tid, uint32_t stack_id) {
  pf::TracePacket p;
  p.set_timestamp(ts_ns);
  pf::InternedData* interned = p.mutable_interned_data();
  pf::PerfSample* s = p.mutable_perf_sample();
  s->set_pid(process.pid);
  s->set_tid(tid);
  s->set_cpu_mode(pf::PerfSample::MODE_USER);
  s->set_callstack_iid(callstack(process, stack_id, *interned));
  if (interned->ByteSizeLong() == 0) p.clear_interned_data();
  else p.set_sequence_flags(pf::TracePacket::SEQ_NEEDS_INCREMENTAL_STATE);
  w_.write(seq_, p);
  ++written_;
}

uint64_t PerfettoSamples::callstack(const ProcessState& process, uint32_t stack_id, pf::InternedData& interned) {
  auto it = callstacks_.find(stack_id);
  if (it != callstacks_.end()) return it->second;
  const std::vector<ResolvedFrame>& frames = resolver_.stack(process, stack_id);  // leaf first
  std::vector<uint64_t> ids;
  ids.reserve(frames.size());
  for (size_t i = frames.size(); i-- > 0;) ids.push_back(frame(process, frames[i], interned));
  const uint64_t iid = seq_.next_iid++;
  pf::Callstack* c = interned.add_callstacks();
  c->set_iid(iid);
  for (uint64_t id : ids) c->add_frame_ids(id);  // root first
  callstacks_.emplace(stack_id, iid);
  return iid;
}

uint64_t PerfettoSamples::frame(const ProcessState& process, const ResolvedFrame& f, pf::InternedData& interned) {
  const std::string key = std::to_string(f.module_id) + ':' + std::to_string(f.address) + ':' + f.function + ':' +
                          f.file + ':' + std::to_string(f.line);
  return intern(seq_, frames_, key, [&](uint64_t iid) {
    pf::Frame* fr = interned.add_frames();
    fr->set_iid(iid);
    fr->set_function_name_id(string(function_names_, f.function, interned.mutable_function_names()));
    fr->set_mapping_id(mapping(process, f.module_id, interned));
    uint64_t base = 0;
    if (auto m = process.modules.find(f.module_id); m != process.modules.end()) base = m->second.base;
    if (!f.interpreted) fr->set_rel_pc(f.address >= base ? f.address - base : f.address);
    if (!f.file.empty()) {
      fr->set_source_path_iid(string(source_paths_, f.file, interned.mutable_source_paths()));
      if (f.line) fr->set_line_number(f.line);
    }
  });
}

uint64_t PerfettoSamples::mapping(const ProcessState& process, uint32_t module_id, pf::InternedData& interned) {
  auto it = mappings_.find(module_id);
  if (it != mappings_.end()) return it->second;
  const uint64_t iid = seq_.next_iid++;
  pf::Mapping* m = interned.add_mappings();
  m->set_iid(iid);
  std::string path = "[unknown]";  // an address in no recorded module
  if (auto mod = process.modules.find(module_id); mod != process.modules.end()) {
    const ModuleInfo& info = mod->second;
    path = info.path.empty() ? "[main program]" : info.path;
    m->set_start(info.start);
    m->set_end(info.end);
    m->set_start_offset(info.file_offset);
    // No load_bias: Perfetto's is the ELF's p_vaddr - p_offset, which the
    // files do not keep; rel_pc is already the ELF virtual address.
    const std::string id = hex_to_bytes(info.build_id);
    if (!id.empty()) m->set_build_id(string(build_ids_, id, interned.mutable_build_ids()));
  }
  // A mapping's path is kept as its components ("/usr/lib/x.so": usr, lib, x.so).
  size_t from = path.front() == '/' ? 1 : 0;
  while (from <= path.size()) {
    size_t slash = path.find('/', from);
    if (slash == std::string::npos) slash = path.size();
    if (slash > from)
      m->add_path_string_ids(string(mapping_paths_, std::string_view(path).substr(from, slash - from),
                                    interned.mutable_mapping_paths()));
    from = slash + 1;
  }
  mappings_.emplace(module_id, iid);
  return iid;
}

uint64_t PerfettoSamples::string(StringMap& table, std::string_view s,
                                 google::protobuf::RepeatedPtrField<pf::InternedString>* out) {
  return intern(seq_, table, s, [&](uint64_t iid) {
    pf::InternedString* is = out->Add();
    is->set_iid(iid);
    is->set_str(internal::valid_utf8(s));
  });
}

}  // namespace ringprof::internal
