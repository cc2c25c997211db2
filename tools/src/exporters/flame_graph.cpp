#include "ringprof/tools/flame_graph.h"

#include <map>

namespace ringprof {

namespace {

void append_frame(std::string& out, const std::string& name) {
  for (char c : name) out.push_back(c == ';' ? ':' : (c == '\n' || c == '\r') ? ' ' : c);
}

}  // namespace

std::string format_folded(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                          const FoldedOptions& options) {
  std::map<std::string, uint64_t> lines;
  std::string key;
  for (const SampleCount& c : profile.counts) {
    const ProcessState& process = reader.processes()[c.process];
    key.clear();
    if (options.per_thread) {
      append_frame(key, process.display_name());
      key.push_back(';');
      append_frame(key, thread_label(process, c.thread_index));
    }
    const std::vector<ResolvedFrame>& frames = resolver.stack(process, c.stack_id);
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      if (!key.empty()) key.push_back(';');
      append_frame(key, it->function);
    }
    lines[key] += c.count;
  }
  std::string out;
  for (const auto& [stack, n] : lines) {
    out += stack;
    out.push_back(' ');
    out += std::to_string(n);
    out.push_back('\n');
  }
  return out;
}

}  // namespace ringprof
