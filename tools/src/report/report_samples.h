// report_samples.h (internal) — the CPU samples as `ringprof report` ships
// them: one merged call tree (root first, as a flame graph draws it) and the
// top functions (`ringprof table --samples`'s rows).
//
// The tree merges every thread's stacks by function name, as `ringprof
// flame` does. It stays small: a node with fewer than 1/kFlameFraction of the
// samples is left out (its samples still count in its parent's total, so
// the parent shows a gap where it would be), and how many such subtrees there
// were is stated.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/sample_table.h"

namespace ringprof::internal {

inline constexpr uint64_t kFlameFraction = 2000;

struct FlameNode {
  uint32_t name = 0;    // into FlameTree::names
  uint32_t parent = 0;  // index of the parent node (the root is its own parent)
  uint64_t total = 0;   // samples with this frame on the stack along this path
  uint64_t self = 0;    // of which this frame was the leaf
};

struct FlameTree {
  std::vector<std::string> names;  // names[0] is "all"
  std::vector<FlameNode> nodes;    // depth first, a parent before its children; nodes[0] the root
  uint64_t subtrees_left_out = 0;  // children too small to draw (their own descendants not counted)
};

FlameTree build_flame_tree(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver);

}  // namespace ringprof::internal
