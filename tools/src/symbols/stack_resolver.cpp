#include "ringprof/tools/stack_resolver.h"

#include <cstdio>
#include <unordered_map>

#include "ringprof/tools/symbolizer.h"

namespace ringprof {

namespace {

struct PairHash {
  size_t operator()(const std::pair<size_t, uint64_t>& k) const noexcept {
    return std::hash<uint64_t>()(k.second * 0x9E3779B97F4A7C15ull ^ k.first);
  }
};

std::string hex_address(uint64_t a) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(a));
  return buf;
}

}  // namespace

struct StackResolver::Impl {
  explicit Impl(std::vector<std::string> paths) : symbolizer(std::move(paths)) {}
  Symbolizer symbolizer;
  // (process index, address << 1 | leaf) -> frames
  std::unordered_map<std::pair<size_t, uint64_t>, std::vector<ResolvedFrame>, PairHash> addresses;
  // (process index, stack id) -> frames
  std::unordered_map<std::pair<size_t, uint64_t>, std::vector<ResolvedFrame>, PairHash> stacks;
};

StackResolver::StackResolver(std::vector<std::string> symbol_paths)
    : impl_(std::make_unique<Impl>(std::move(symbol_paths))) {}
StackResolver::~StackResolver() = default;

const std::vector<ResolvedFrame>& StackResolver::address(const ProcessState& process, uint64_t address, bool leaf) {
  // Interpreter frames keep their tag bit as the key, which no shifted
  // address has.
  const uint64_t k = (address & kInterpreterFrameTag) ? address : (address << 1) | (leaf ? 1 : 0);
  const std::pair<size_t, uint64_t> key{process.index, k};
  auto it = impl_->addresses.find(key);
  if (it != impl_->addresses.end()) return it->second;

  std::vector<ResolvedFrame> frames;
  const ModuleInfo* m = (address & kInterpreterFrameTag) ? nullptr : process.module_for(address);
  if (address & kInterpreterFrameTag) {
    // An interpreter frame: the recorder stored its function, file and line
    // as a location.
    ResolvedFrame f;
    const Location* loc = process.location(static_cast<uint32_t>(address & 0xffffffffu));
    f.function = loc ? loc->function : "<unknown interpreter frame>";
    if (f.function.empty()) f.function = loc && !loc->name.empty() ? loc->name : "<unknown interpreter frame>";
    if (loc) {
      f.file = loc->file;
      f.line = loc->line;
    }
    f.address = address;
    f.symbolized = loc != nullptr;
    f.interpreted = true;
    frames.push_back(std::move(f));
  } else if (m == nullptr) {
    ResolvedFrame f;
    f.function = hex_address(address);
    f.address = address;
    frames.push_back(std::move(f));
  } else {
    ModuleRef ref;
    ref.path = m->path;
    ref.build_id = m->build_id;
    ref.base = m->base;
    const uint64_t lookup = leaf || address == 0 ? address : address - 1;
    for (SymbolizedFrame& s : impl_->symbolizer.symbolize(ref, lookup)) {
      ResolvedFrame f;
      f.symbolized = !s.function.empty() && s.function.find("+0x") == std::string::npos;
      f.function = std::move(s.function);
      f.file = std::move(s.file);
      f.line = s.line;
      f.inlined = s.inlined;
      f.module_id = m->id;
      f.address = address;
      frames.push_back(std::move(f));
    }
    if (frames.empty()) {
      ResolvedFrame f;
      f.function = hex_address(address);
      f.module_id = m->id;
      f.address = address;
      frames.push_back(std::move(f));
    }
  }
  return impl_->addresses.emplace(key, std::move(frames)).first->second;
}

std::vector<std::string> StackResolver::take_warnings() { return impl_->symbolizer.take_warnings(); }

const std::vector<ResolvedFrame>& StackResolver::stack(const ProcessState& process, uint32_t stack_id) {
  const std::pair<size_t, uint64_t> key{process.index, stack_id};
  auto it = impl_->stacks.find(key);
  if (it != impl_->stacks.end()) return it->second;

  std::vector<ResolvedFrame> frames;
  const StackTrace* st = process.stack(stack_id);
  if (st == nullptr || st->frames.empty()) {
    ResolvedFrame f;
    f.function = "[unknown stack]";
    frames.push_back(std::move(f));
  } else {
    for (size_t i = 0; i < st->frames.size(); ++i) {
      const auto& part = address(process, st->frames[i], i == 0);
      frames.insert(frames.end(), part.begin(), part.end());
    }
  }
  return impl_->stacks.emplace(key, std::move(frames)).first->second;
}

std::string source_frame_text(const ResolvedFrame& f) {
  if (f.file.empty()) return f.function;
  return f.file + "(" + std::to_string(f.line) + "): " + f.function;
}

}  // namespace ringprof
