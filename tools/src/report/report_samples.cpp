#include "report/report_samples.h"

#include <algorithm>
#include <map>
#include <unordered_map>

namespace ringprof::internal {

namespace {

// The tree as built: children by name, before pruning and ordering.
struct BuildNode {
  uint32_t name = 0;
  uint64_t total = 0, self = 0;
  std::map<uint32_t, uint32_t> children;  // name -> index in the build vector
};

}  // namespace

FlameTree build_flame_tree(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver) {
  FlameTree tree;
  std::unordered_map<std::string, uint32_t> ids;
  auto name_id = [&](const std::string& n) {
    auto [it, inserted] = ids.try_emplace(n, static_cast<uint32_t>(tree.names.size()));
    if (inserted) tree.names.push_back(n);
    return it->second;
  };
  name_id("all");
  std::vector<BuildNode> build(1);
  for (const SampleCount& c : profile.counts) {
    const std::vector<ResolvedFrame>& frames = resolver.stack(reader.processes()[c.process], c.stack_id);
    uint32_t at = 0;
    build[0].total += c.count;
    for (auto f = frames.rbegin(); f != frames.rend(); ++f) {
      const uint32_t n = name_id(f->function);
      auto it = build[at].children.find(n);
      if (it == build[at].children.end()) {
        build.emplace_back();
        build.back().name = n;
        it = build[at].children.emplace(n, static_cast<uint32_t>(build.size() - 1)).first;
      }
      at = it->second;
      build[at].total += c.count;
    }
    build[at].self += c.count;
  }
  // Depth first, heaviest child first, leaving out what is too small to see.
  const uint64_t least = std::max<uint64_t>(1, build[0].total / kFlameFraction);
  std::vector<std::pair<uint32_t, uint32_t>> stack{{0, 0}};  // build index, parent in tree.nodes
  while (!stack.empty()) {
    const auto [b, parent] = stack.back();
    stack.pop_back();
    const uint32_t here = static_cast<uint32_t>(tree.nodes.size());
    tree.nodes.push_back(FlameNode{build[b].name, b == 0 ? 0 : parent, build[b].total, build[b].self});
    std::vector<uint32_t> kids;
    for (const auto& [n, child] : build[b].children) {
      if (build[child].total >= least) kids.push_back(child);
      else ++tree.subtrees_left_out;
    }
    // Pushed lightest first so the heaviest is taken (and stored) first.
    std::sort(kids.begin(), kids.end(), [&](uint32_t x, uint32_t y) {
      return build[x].total != build[y].total ? build[x].total < build[y].total : build[x].name > build[y].name;
    });
    for (uint32_t k : kids) stack.emplace_back(k, here);
  }
  return tree;
}

}  // namespace ringprof::internal
