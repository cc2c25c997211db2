#include "ringprof/tools/symbolizer.h"

#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "symbols/debug_file_finder.h"
#include "symbols/demangle.h"
#include "symbols/dwarf_index.h"
#include "symbols/elf_file.h"
#include "symbols/elf_symbols.h"
#include "symbols/mini_debuginfo.h"

namespace ringprof {

namespace {

using internal::DebugFileFinder;
using internal::DwarfIndex;
using internal::ElfFile;
using internal::SymbolTable;

// Resolved addresses kept at most. A profile repeats the same few thousand
// addresses; past this bound the cache starts over rather than grow.
constexpr size_t kMaxCachedAddresses = 1 << 18;

std::string basename_of(const std::string& path) {
  if (path.empty()) return "[unknown]";
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string lowercase(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'F') c = static_cast<char>(c - 'A' + 'a');
  }
  return s;
}

// One module as found on disk: the files that serve it, and what was read
// from them. Files are kept open because the symbol names and DWARF DIEs
// point into their mappings.
struct Module {
  std::string name;  // basename of the recorded path, for "name+0x..." frames
  ModuleStatus status;
  std::vector<std::unique_ptr<ElfFile>> files;
  SymbolTable symbols;
  std::unique_ptr<DwarfIndex> dwarf;
};

struct CacheKey {
  size_t module = 0;
  uint64_t vaddr = 0;
  bool operator==(const CacheKey&) const = default;
};
struct CacheKeyHash {
  size_t operator()(const CacheKey& k) const noexcept {
    return std::hash<uint64_t>()(k.vaddr * 0x9e3779b97f4a7c15ull ^ k.module);
  }
};

}  // namespace

struct Symbolizer::Impl {
  explicit Impl(std::vector<std::string> symbol_paths) : finder(std::move(symbol_paths)) {}

  // Index into `modules` of the module, opened on first sight.
  size_t module_for(const ModuleRef& ref);
  void load(Module& m, const ModuleRef& ref);
  bool add_file(Module& m, std::unique_ptr<ElfFile> file);
  std::vector<SymbolizedFrame> resolve(const Module& m, uint64_t vaddr) const;

  DebugFileFinder finder;
  std::vector<std::unique_ptr<Module>> modules;
  std::unordered_map<std::string, size_t> module_index;  // path '\0' build ID → modules[]
  std::unordered_map<CacheKey, std::vector<SymbolizedFrame>, CacheKeyHash> cache;
  std::vector<std::string> warnings;
};

Symbolizer::Symbolizer(std::vector<std::string> symbol_paths)
    : impl_(std::make_unique<Impl>(std::move(symbol_paths))) {}
Symbolizer::~Symbolizer() = default;

size_t Symbolizer::Impl::module_for(const ModuleRef& ref) {
  // The base is not part of the key: the same file mapped at different
  // addresses (in different processes) is one module, and shares the cache.
  std::string key = ref.path;
  key += '\0';
  key += lowercase(ref.build_id);
  auto it = module_index.find(key);
  if (it != module_index.end()) return it->second;
  auto m = std::make_unique<Module>();
  load(*m, ref);
  modules.push_back(std::move(m));
  module_index.emplace(std::move(key), modules.size() - 1);
  return modules.size() - 1;
}

bool Symbolizer::Impl::add_file(Module& m, std::unique_ptr<ElfFile> file) {
  for (const auto& f : m.files) {
    if (f->path() == file->path()) return false;
  }
  m.files.push_back(std::move(file));
  return true;
}

void Symbolizer::Impl::load(Module& m, const ModuleRef& ref) {
  m.name = basename_of(ref.path);
  const std::string build_id = lowercase(ref.build_id);
  auto has = [&m](bool (ElfFile::*what)() const) {
    for (const auto& f : m.files) {
      if (((*f).*what)()) return true;
    }
    return false;
  };
  auto open_if_build_id = [&](const std::string& path) {
    std::string why;
    auto file = ElfFile::open(path, &why);
    return file && file->build_id() == build_id && add_file(m, std::move(file));
  };

  // 1. By build ID: the standard layouts, then the plain files of the symbol paths.
  if (!build_id.empty()) {
    bool found = false;
    for (const std::string& path : finder.by_build_id_layout(build_id)) {
      if ((found = open_if_build_id(path))) break;
    }
    if (!found) {
      // Several files may share a build ID (a stripped binary and its .debug):
      // take one with DWARF if there is one.
      const auto candidates = finder.by_build_id_scan(build_id);
      for (int pass = 0; pass < 2 && !found; ++pass) {
        for (const std::string& path : candidates) {
          std::string why;
          auto file = ElfFile::open(path, &why);
          if (!file || file->build_id() != build_id || (pass == 0 && !file->has_debug_info())) continue;
          if ((found = add_file(m, std::move(file)))) break;
        }
      }
    }
  }

  // 2. The recorded path, when something is still missing and its build ID agrees.
  const bool need_more = !has(&ElfFile::has_debug_info) || (!has(&ElfFile::has_symtab) && !has(&ElfFile::has_dynsym));
  if (need_more && !ref.path.empty()) {
    std::string why;
    auto file = ElfFile::open(ref.path, &why);
    if (!file) {
      if (m.files.empty()) m.status.problem = ref.path + ": " + why;
    } else if (!build_id.empty() && !file->build_id().empty() && file->build_id() != build_id) {
      if (m.files.empty()) {
        m.status.problem = ref.path + ": build ID " + file->build_id() + " does not match the recorded " + build_id;
        warnings.push_back("ringprof: " + m.status.problem + "; its addresses stay " + m.name + "+0x...");
      }
    } else {
      add_file(m, std::move(file));
    }
  } else if (m.files.empty()) {
    m.status.problem = build_id.empty() ? "no path and no build ID recorded" : "no file with build ID " + build_id;
  }

  // 3. .gnu_debuglink, when no file so far has DWARF.
  if (!m.files.empty() && !has(&ElfFile::has_debug_info)) {
    const size_t count = m.files.size();
    for (size_t i = 0; i < count && !has(&ElfFile::has_debug_info); ++i) {
      const ElfFile& owner = *m.files[i];
      if (owner.debuglink().empty()) continue;
      const std::string owner_id = owner.build_id();
      const uint32_t want_crc = owner.debuglink_crc();
      for (const std::string& path : finder.by_debuglink(owner.path(), owner.debuglink())) {
        std::string why;
        auto file = ElfFile::open(path, &why);
        if (!file) continue;
        // Build IDs settle it when both files have one; the CRC otherwise,
        // read only then because debug files can be large.
        bool matches = false;
        if (!owner_id.empty() && !file->build_id().empty()) {
          matches = owner_id == file->build_id();
        } else {
          uint32_t crc = 0;
          matches = internal::file_crc32(path, &crc) && crc == want_crc;
        }
        if (matches && add_file(m, std::move(file))) break;
      }
    }
  }

  // Symbols from the first file with .symtab, else the first with .dynsym;
  // DWARF from the first file where libdw opens it.
  ElfFile* symbols_from = nullptr;
  for (const auto& f : m.files) {
    if (f->has_symtab()) {
      symbols_from = f.get();
      break;
    }
  }
  for (size_t i = 0; i < m.files.size() && !symbols_from; ++i) {
    if (m.files[i]->has_dynsym()) symbols_from = m.files[i].get();
  }
  if (symbols_from) m.symbols = SymbolTable(symbols_from->elf());
  // 4. MiniDebugInfo, when no file has a full .symtab: its .symtab names the
  // functions .dynsym leaves out. The image joins the module's files, which
  // keep the names it holds alive.
  if (!symbols_from || !symbols_from->has_symtab()) {
    for (size_t i = 0; i < m.files.size(); ++i) {
      if (!m.files[i]->has_mini_debuginfo()) continue;
      std::string why;
      std::unique_ptr<ElfFile> mini = open_mini_debuginfo(*m.files[i], &why);
      if (!mini) {
        warnings.push_back("ringprof: " + m.files[i]->path() + ": MiniDebugInfo unreadable (" + why +
                           "); only its exported functions are named");
        break;
      }
      ElfFile& image = *mini;
      m.files.push_back(std::move(mini));
      if (m.symbols.add_symtab(image.elf())) m.status.mini_debuginfo = true;
      break;
    }
  }
  for (const auto& f : m.files) {
    if (Dwarf* dwarf = f->dwarf()) {
      m.dwarf = std::make_unique<DwarfIndex>(dwarf);
      m.status.debug_path = f->path();
      break;
    }
  }
  if (!m.files.empty()) {
    m.status.elf_path = symbols_from ? symbols_from->path() : m.files.front()->path();
    m.status.problem = !m.symbols.empty() || m.dwarf ? "" : m.status.elf_path + ": no symbol table and no DWARF";
  }
}

std::vector<SymbolizedFrame> Symbolizer::Impl::resolve(const Module& m, uint64_t vaddr) const {
  std::vector<SymbolizedFrame> out;
  bool sized = true;
  const char* symbol = m.symbols.find(vaddr, &sized);
  if (m.dwarf) {
    for (auto& f : m.dwarf->frames(vaddr)) {
      out.push_back(SymbolizedFrame{std::move(f.function), std::move(f.file), f.line, f.inlined});
    }
  }
  if (!out.empty()) {
    // The out-of-line function is the one the symbol table names: that name is
    // what other tools show, and it is there even when DWARF has only
    // DW_AT_name (an unqualified name) for it. A symbol without a size is
    // only a guess, and DWARF's own name wins over it.
    if (symbol && (sized || out.back().function.empty())) out.back().function = internal::demangle(symbol);
  } else if (symbol) {
    out.push_back(SymbolizedFrame{internal::demangle(symbol), {}, 0, false});
  }
  return out;
}

std::vector<SymbolizedFrame> Symbolizer::symbolize(const ModuleRef& module, uint64_t address) {
  const uint64_t vaddr = address - module.base;
  auto fallback = [&](const std::string& name) {
    char offset[24];
    std::snprintf(offset, sizeof offset, "+0x%" PRIx64, vaddr);
    return std::vector<SymbolizedFrame>{SymbolizedFrame{name + offset, {}, 0, false}};
  };
  try {
    const size_t index = impl_->module_for(module);
    const CacheKey key{index, vaddr};
    auto it = impl_->cache.find(key);
    if (it != impl_->cache.end()) return it->second;
    const Module& m = *impl_->modules[index];
    std::vector<SymbolizedFrame> frames = impl_->resolve(m, vaddr);
    if (frames.empty()) frames = fallback(m.name);
    if (impl_->cache.size() >= kMaxCachedAddresses) impl_->cache.clear();
    impl_->cache.emplace(key, frames);
    return frames;
  } catch (...) {
    // Out of memory, or a library throwing where it should not: the frame
    // stays unresolved rather than take the whole output down.
    return fallback(basename_of(module.path));
  }
}

ModuleStatus Symbolizer::module_status(const ModuleRef& module) {
  return impl_->modules[impl_->module_for(module)]->status;
}

std::vector<std::string> Symbolizer::take_warnings() {
  std::vector<std::string> out;
  out.swap(impl_->warnings);
  return out;
}

size_t Symbolizer::modules_opened() const { return impl_->modules.size(); }
size_t Symbolizer::cached_addresses() const { return impl_->cache.size(); }

}  // namespace ringprof
