// The symbolizer against real modules: this test binary and a small shared
// library, both built with -g, looked up the way a profile records them (path,
// build ID, load bias), then stripped, split, moved, replaced and truncated.
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cinttypes>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "ringprof/tools/symbolizer.h"
#include "programs/symbolizer_testlib.h"
#include "support/test_support.h"

// Functions in the test binary itself. The markers bracket hot_function's lines.
namespace ns {

constexpr uint32_t kHotFirstLine = __LINE__ + 1;
__attribute__((noinline)) int hot_function(int x) {
  int sum = 0;
  for (int i = 0; i < x; ++i) sum += i * x;
  asm volatile("" : "+r"(sum));
  return sum;
}
constexpr uint32_t kHotLastLine = __LINE__ - 1;

// An inlined call inside an out-of-line one: the return address taken inside
// inlined_step lies in outer_function's code, in inlined_step's inline scope.
constexpr uint32_t kInlineCallLine = __LINE__ + 3;
static inline __attribute__((always_inline)) int inlined_step(int x, void** pc) {
  const int y = x + 7;
  *pc = testlib::return_address_here();
  return y;
}

constexpr uint32_t kOuterCallLine = __LINE__ + 2;
__attribute__((noinline)) int outer_function(int x, void** pc) {
  const int r = inlined_step(x, pc) * 2;
  asm volatile("" ::: "memory");
  return r;
}

}  // namespace ns

namespace ringprof {
namespace {

namespace fs = std::filesystem;

// What a profile records for the module holding `address`, read from the
// running process: dl_iterate_phdr gives the path and the load bias, and the
// build ID comes from the loaded image's PT_NOTE segments.
struct Lookup {
  uint64_t address = 0;
  ModuleRef module;
  bool found = false;
};

std::string note_build_id(const dl_phdr_info* info, const ElfW(Phdr) & ph) {
  const auto* p = reinterpret_cast<const unsigned char*>(info->dlpi_addr + ph.p_vaddr);
  const size_t align = ph.p_align == 8 ? 8 : 4;
  auto up = [align](size_t n) { return (n + align - 1) & ~(align - 1); };
  size_t off = 0;
  while (off + sizeof(ElfW(Nhdr)) <= ph.p_memsz) {
    const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p + off);
    const size_t name_off = off + sizeof(ElfW(Nhdr));
    const size_t desc_off = name_off + up(nh->n_namesz);
    if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(p + name_off, "GNU", 4) == 0) {
      std::string hex;
      char b[3];
      for (size_t i = 0; i < nh->n_descsz; ++i) {
        std::snprintf(b, sizeof b, "%02x", p[desc_off + i]);
        hex += b;
      }
      return hex;
    }
    off = desc_off + up(nh->n_descsz);
  }
  return {};
}

int find_module(dl_phdr_info* info, size_t, void* data) {
  auto* lookup = static_cast<Lookup*>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    const uint64_t start = info->dlpi_addr + ph.p_vaddr;
    if (ph.p_type == PT_LOAD && lookup->address >= start && lookup->address < start + ph.p_memsz) contains = true;
  }
  if (!contains) return 0;
  lookup->found = true;
  lookup->module.base = info->dlpi_addr;
  lookup->module.path = info->dlpi_name ? info->dlpi_name : "";
  if (lookup->module.path.empty()) {  // the main program
    char exe[PATH_MAX] = {};
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) lookup->module.path.assign(exe, static_cast<size_t>(n));
  }
  for (int i = 0; i < info->dlpi_phnum && lookup->module.build_id.empty(); ++i) {
    if (info->dlpi_phdr[i].p_type == PT_NOTE) lookup->module.build_id = note_build_id(info, info->dlpi_phdr[i]);
  }
  return 1;
}

ModuleRef module_of(const void* address) {
  Lookup lookup;
  lookup.address = reinterpret_cast<uint64_t>(address);
  dl_iterate_phdr(find_module, &lookup);
  EXPECT_TRUE(lookup.found);
  return lookup.module;
}

std::string basename_of(const std::string& path) { return fs::path(path).filename().string(); }

std::string fallback_name(const std::string& module_name, uint64_t offset) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "+0x%" PRIx64, offset);
  return module_name + buf;
}

// The shared library and an address inside testlib::scale (a return address
// minus one, as a caller passes for non-leaf frames).
struct LibSite {
  ModuleRef module;
  uint64_t address = 0;
};

LibSite lib_site() {
  void* pc = nullptr;
  EXPECT_EQ(testlib::scale(5, &pc), 16);
  LibSite site;
  site.module = module_of(pc);
  site.address = reinterpret_cast<uint64_t>(pc) - 1;
  return site;
}

void run(const std::string& command) {
  const test::CommandResult r = test::run_command(command);
  ASSERT_EQ(r.exit_code, 0) << command << "\n" << r.err;
}

std::string objcopy() { return test::shell_quote(RINGPROF_OBJCOPY); }

void expect_scale(const std::vector<SymbolizedFrame>& frames, bool with_line) {
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "testlib::scale(int, void**)");
  EXPECT_FALSE(frames.back().inlined);
  if (with_line) {
    EXPECT_EQ(basename_of(frames.back().file), "symbolizer_testlib.cpp");
    EXPECT_GT(frames.back().line, 0u);
  }
}

TEST(Symbolizer, FunctionInTestBinaryHasNameFileAndLine) {
  Symbolizer symbolizer;
  const auto entry = reinterpret_cast<const void*>(&ns::hot_function);
  const ModuleRef module = module_of(entry);
  ASSERT_FALSE(module.build_id.empty()) << "the test binary is linked with --build-id";
  ASSERT_EQ(ns::hot_function(3), 9);

  // The entry, and a few bytes into the body.
  for (uint64_t delta : {0, 1, 4}) {
    const auto frames = symbolizer.symbolize(module, reinterpret_cast<uint64_t>(entry) + delta);
    ASSERT_EQ(frames.size(), 1u) << delta;
    EXPECT_EQ(frames[0].function, "ns::hot_function(int)");
    EXPECT_EQ(basename_of(frames[0].file), "symbolizer_test.cpp");
    EXPECT_GE(frames[0].line, ns::kHotFirstLine);
    EXPECT_LE(frames[0].line, ns::kHotLastLine);
    EXPECT_FALSE(frames[0].inlined);
  }
  const ModuleStatus status = symbolizer.module_status(module);
  EXPECT_EQ(status.elf_path, module.path);
  EXPECT_EQ(status.debug_path, module.path);
  EXPECT_EQ(status.problem, "");
  EXPECT_TRUE(symbolizer.take_warnings().empty());
}

TEST(Symbolizer, InlinedCallGivesTheChain) {
  Symbolizer symbolizer;
  void* pc = nullptr;
  ASSERT_EQ(ns::outer_function(1, &pc), 16);
  const ModuleRef module = module_of(pc);
  const auto frames = symbolizer.symbolize(module, reinterpret_cast<uint64_t>(pc) - 1);
  ASSERT_EQ(frames.size(), 2u);
  EXPECT_NE(frames[0].function.find("inlined_step"), std::string::npos) << frames[0].function;
  EXPECT_TRUE(frames[0].inlined);
  EXPECT_EQ(basename_of(frames[0].file), "symbolizer_test.cpp");
  EXPECT_EQ(frames[0].line, ns::kInlineCallLine);
  EXPECT_EQ(frames[1].function, "ns::outer_function(int, void**)");
  EXPECT_FALSE(frames[1].inlined);
  EXPECT_EQ(basename_of(frames[1].file), "symbolizer_test.cpp");
  EXPECT_EQ(frames[1].line, ns::kOuterCallLine);
}

TEST(Symbolizer, FunctionInSharedLibrary) {
  Symbolizer symbolizer;
  const LibSite site = lib_site();
  EXPECT_EQ(basename_of(site.module.path), "libringprof_symtest.so");
  EXPECT_NE(site.module.base, 0u);
  expect_scale(symbolizer.symbolize(site.module, site.address), true);

  // libc, whatever its debug info: qsort is an exported function. Asked of
  // libc itself, since under ASan the name qsort is the interceptor's.
  void* libc_handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(libc_handle, nullptr);
  void* qsort_address = dlsym(libc_handle, "qsort");
  dlclose(libc_handle);
  ASSERT_NE(qsort_address, nullptr);
  const ModuleRef libc = module_of(qsort_address);
  const auto frames = symbolizer.symbolize(libc, reinterpret_cast<uint64_t>(qsort_address));
  ASSERT_FALSE(frames.empty());
  EXPECT_EQ(frames.back().function, "qsort");
}

TEST(Symbolizer, CachesModulesAndAddresses) {
  Symbolizer symbolizer;
  const LibSite site = lib_site();
  const auto first = symbolizer.symbolize(site.module, site.address);
  const auto again = symbolizer.symbolize(site.module, site.address);
  ASSERT_EQ(first.size(), again.size());
  EXPECT_EQ(first.back().function, again.back().function);
  EXPECT_EQ(symbolizer.modules_opened(), 1u);
  EXPECT_EQ(symbolizer.cached_addresses(), 1u);

  // The same file loaded elsewhere (another process): one module, one entry.
  ModuleRef moved = site.module;
  moved.base += 0x10000000;
  expect_scale(symbolizer.symbolize(moved, site.address + 0x10000000), true);
  EXPECT_EQ(symbolizer.modules_opened(), 1u);
  EXPECT_EQ(symbolizer.cached_addresses(), 1u);
}

// The split of a stripped file and its debug file, in the places a build-ID
// lookup searches.
class SymbolizerDebugFile : public ::testing::Test {
 protected:
  void SetUp() override {
    site_ = lib_site();
    ASSERT_GE(site_.module.build_id.size(), 3u);
    stripped_ = dir_.file("stripped.so");
    run(objcopy() + " --strip-all " + test::shell_quote(site_.module.path) + " " + test::shell_quote(stripped_));
  }
  // `objcopy --only-keep-debug` of the library into `path` (dirs created).
  void keep_debug(const std::string& path) {
    fs::create_directories(fs::path(path).parent_path());
    run(objcopy() + " --only-keep-debug " + test::shell_quote(site_.module.path) + " " + test::shell_quote(path));
  }
  std::string id_head() const { return site_.module.build_id.substr(0, 2); }
  std::string id_rest() const { return site_.module.build_id.substr(2); }

  test::TempDir dir_;
  LibSite site_;
  std::string stripped_;
};

TEST_F(SymbolizerDebugFile, StrippedFileAloneStillNamesExportedFunctions) {
  Symbolizer symbolizer({dir_.file("empty")});
  ModuleRef module = site_.module;
  module.path = stripped_;
  expect_scale(symbolizer.symbolize(module, site_.address), false);
  EXPECT_EQ(symbolizer.module_status(module).elf_path, stripped_);
  EXPECT_EQ(symbolizer.module_status(module).debug_path, "");
}

TEST_F(SymbolizerDebugFile, FoundByBuildIdUnderDotBuildId) {
  const std::string debug = dir_.file("sym/.build-id/" + id_head() + "/" + id_rest() + ".debug");
  keep_debug(debug);
  Symbolizer symbolizer({dir_.file("sym")});

  ModuleRef stripped = site_.module;
  stripped.path = stripped_;
  expect_scale(symbolizer.symbolize(stripped, site_.address), true);
  EXPECT_EQ(symbolizer.module_status(stripped).debug_path, debug);

  ModuleRef gone = site_.module;
  gone.path = dir_.file("no/such/libringprof_symtest.so");
  expect_scale(symbolizer.symbolize(gone, site_.address), true);
  EXPECT_EQ(symbolizer.module_status(gone).elf_path, debug);
  EXPECT_TRUE(symbolizer.take_warnings().empty());
}

TEST_F(SymbolizerDebugFile, FoundByBuildIdInFlatLayout) {
  keep_debug(dir_.file("sym/" + id_head() + "/" + id_rest() + ".debug"));
  Symbolizer symbolizer({dir_.file("sym")});
  ModuleRef gone = site_.module;
  gone.path = "/nonexistent/libringprof_symtest.so";
  expect_scale(symbolizer.symbolize(gone, site_.address), true);
}

TEST_F(SymbolizerDebugFile, FoundByScanningPlainFiles) {
  keep_debug(dir_.file("sym/whatever-name.dbg"));
  test::write_file(dir_.file("sym/not-elf.txt"), {'h', 'i', '\n'});
  ASSERT_EQ(mkfifo(dir_.file("sym/a-fifo").c_str(), 0600), 0);  // must not block the scan
  Symbolizer symbolizer({dir_.file("sym")});
  ModuleRef gone = site_.module;
  gone.path = "/nonexistent/libringprof_symtest.so";
  expect_scale(symbolizer.symbolize(gone, site_.address), true);
  EXPECT_EQ(symbolizer.module_status(gone).debug_path, dir_.file("sym/whatever-name.dbg"));
}

TEST_F(SymbolizerDebugFile, FollowsGnuDebuglink) {
  // No build IDs to go by: the debug file loses its note, the profile records
  // none, and the link's CRC decides.
  const std::string debug = dir_.file("dl/lib.so.dbg");
  keep_debug(dir_.file("dl/tmp.dbg"));
  run(objcopy() + " --remove-section=.note.gnu.build-id " + test::shell_quote(dir_.file("dl/tmp.dbg")) + " " +
      test::shell_quote(debug));
  const std::string linked = dir_.file("dl/lib.so");
  run("cd " + test::shell_quote(dir_.file("dl")) + " && " + objcopy() + " --strip-debug --add-gnu-debuglink=lib.so.dbg " +
      test::shell_quote(site_.module.path) + " " + test::shell_quote(linked));

  Symbolizer symbolizer;
  ModuleRef module = site_.module;
  module.path = linked;
  module.build_id = "";
  expect_scale(symbolizer.symbolize(module, site_.address), true);
  EXPECT_EQ(symbolizer.module_status(module).debug_path, debug);

  // A debug file that is not the one linked is not used: one without a build
  // ID whose CRC differs, and one with another build ID.
  std::vector<uint8_t> changed = test::read_file(debug);
  changed.push_back(0);
  std::vector<uint8_t> other_binary = test::read_file("/proc/self/exe");
  for (const auto& contents : {changed, other_binary}) {
    test::TempDir other;
    fs::copy_file(linked, other.file("lib.so"));
    test::write_file(other.file("lib.so.dbg"), contents);
    Symbolizer fresh;
    module.path = other.file("lib.so");
    expect_scale(fresh.symbolize(module, site_.address), false);
    EXPECT_EQ(fresh.module_status(module).debug_path, "");
  }
}

// MiniDebugInfo as Fedora's builds make it (the recipe in gdb's manual,
// "MiniDebugInfo"): the symbols of the functions .dynsym does not export,
// xz-compressed into .gnu_debugdata of the stripped file.
class SymbolizerMiniDebugInfo : public SymbolizerDebugFile {
 protected:
  void SetUp() override {
    SymbolizerDebugFile::SetUp();
    void* pc = nullptr;
    ASSERT_EQ(testlib::scale_through_hidden(2, &pc), 13);
    hidden_ = module_of(pc);
    ASSERT_EQ(hidden_.path, site_.module.path);
    hidden_address_ = reinterpret_cast<uint64_t>(pc) - 1;
    hidden_.path = stripped_;
  }
  // The stripped copy with `xz_file` added as .gnu_debugdata.
  void add_debugdata(const std::string& xz_file) {
    run(objcopy() + " --add-section .gnu_debugdata=" + test::shell_quote(xz_file) + " " + test::shell_quote(stripped_));
  }
  std::string in_dir(const std::string& command) { return "cd " + test::shell_quote(dir_.path()) + " && " + command; }
  std::string fallback() const { return fallback_name("stripped.so", hidden_address_ - hidden_.base); }

  ModuleRef hidden_;
  uint64_t hidden_address_ = 0;
};

TEST_F(SymbolizerMiniDebugInfo, NamesTheFunctionsDynsymLeavesOut) {
  {
    Symbolizer alone({dir_.file("empty")});
    const auto frames = alone.symbolize(hidden_, hidden_address_);
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, fallback()) << "a stripped file names only what it exports";
  }
  const std::string lib = test::shell_quote(site_.module.path);
  run(in_dir("nm -D --format=posix --defined-only " + lib + " | awk '{ print $1 }' | sort > dynsyms"));
  run(in_dir("nm --format=posix --defined-only " + lib +
             " | awk '{ if ($2 == \"T\" || $2 == \"t\" || $2 == \"D\") print $1 }' | sort > funcsyms"));
  run(in_dir("comm -13 dynsyms funcsyms > keep_symbols && grep -q hidden_scale keep_symbols"));
  run(in_dir(objcopy() + " --only-keep-debug " + lib + " debug"));
  run(in_dir(objcopy() + " -S --remove-section .gdb_index --remove-section .comment --keep-symbols=keep_symbols " +
             "debug mini_debuginfo && xz mini_debuginfo"));
  add_debugdata(dir_.file("mini_debuginfo.xz"));

  Symbolizer symbolizer({dir_.file("empty")});
  const auto frames = symbolizer.symbolize(hidden_, hidden_address_);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "testlib::(anonymous namespace)::hidden_scale(int, void**)");
  EXPECT_EQ(frames[0].line, 0u) << "MiniDebugInfo has no DWARF";
  EXPECT_TRUE(symbolizer.module_status(hidden_).mini_debuginfo);
  // Exported functions still come from .dynsym.
  ModuleRef exported = site_.module;
  exported.path = stripped_;
  expect_scale(symbolizer.symbolize(exported, site_.address), false);
  EXPECT_TRUE(symbolizer.take_warnings().empty());
}

TEST_F(SymbolizerMiniDebugInfo, DamagedSectionGivesModulePlusOffsetAndOneWarning) {
  for (const char* what : {"garbage", "truncated"}) {
    SetUp();
    if (std::string(what) == "garbage") {
      test::write_file(dir_.file("bad.xz"), std::vector<uint8_t>(4096, 0x5a));
    } else {
      run(in_dir(
          "printf 'some text to compress, repeated, repeated, repeated' > t && xz -f t && head -c 40 t.xz > bad.xz"));
    }
    add_debugdata(dir_.file("bad.xz"));
    Symbolizer symbolizer({dir_.file("empty")});
    const auto frames = symbolizer.symbolize(hidden_, hidden_address_);
    ASSERT_EQ(frames.size(), 1u) << what;
    EXPECT_EQ(frames[0].function, fallback()) << what;
    const auto warnings = symbolizer.take_warnings();
    ASSERT_EQ(warnings.size(), 1u) << what;
    EXPECT_NE(warnings[0].find("MiniDebugInfo unreadable"), std::string::npos) << warnings[0];
    ModuleRef exported = site_.module;
    exported.path = stripped_;
    expect_scale(symbolizer.symbolize(exported, site_.address), false);
  }
}

TEST(Symbolizer, WrongBuildIdGivesModulePlusOffsetAndOneWarning) {
  Symbolizer symbolizer;
  const LibSite site = lib_site();
  ModuleRef module = site.module;
  module.build_id = "00112233445566778899aabbccddeeff00112233";
  const std::string expected = fallback_name("libringprof_symtest.so", site.address - module.base);
  for (int i = 0; i < 3; ++i) {
    const auto frames = symbolizer.symbolize(module, site.address + static_cast<uint64_t>(i));
    ASSERT_EQ(frames.size(), 1u);
    EXPECT_EQ(frames[0].function, fallback_name("libringprof_symtest.so", site.address + i - module.base));
    EXPECT_EQ(frames[0].file, "");
    EXPECT_EQ(frames[0].line, 0u);
  }
  EXPECT_EQ(symbolizer.symbolize(module, site.address)[0].function, expected);
  const auto warnings = symbolizer.take_warnings();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(module.path), std::string::npos) << warnings[0];
  EXPECT_NE(warnings[0].find("build ID"), std::string::npos) << warnings[0];
  EXPECT_TRUE(symbolizer.take_warnings().empty());
  const ModuleStatus status = symbolizer.module_status(module);
  EXPECT_EQ(status.elf_path, "");
  EXPECT_NE(status.problem.find("does not match"), std::string::npos) << status.problem;
}

TEST(Symbolizer, MissingFileGivesModulePlusOffset) {
  Symbolizer symbolizer;
  ModuleRef module{"/nonexistent/dir/libfoo.so.1", "", 0x7f0000000000};
  const auto frames = symbolizer.symbolize(module, 0x7f0000001234);
  ASSERT_EQ(frames.size(), 1u);
  EXPECT_EQ(frames[0].function, "libfoo.so.1+0x1234");
  EXPECT_EQ(frames[0].file, "");
  EXPECT_NE(symbolizer.module_status(module).problem.find("No such file"), std::string::npos);

  // With a build ID that nothing matches: the same.
  module.build_id = "abcdef0123";
  EXPECT_EQ(symbolizer.symbolize(module, 0x7f00000000ff)[0].function, "libfoo.so.1+0xff");
  // No path at all.
  EXPECT_EQ(symbolizer.symbolize(ModuleRef{"", "", 0}, 0x10)[0].function, "[unknown]+0x10");
  EXPECT_TRUE(symbolizer.take_warnings().empty());
}

TEST(Symbolizer, AddressOutsideAnyFunctionGivesModulePlusOffset) {
  Symbolizer symbolizer;
  const LibSite site = lib_site();
  // Far past the end of the library's code: no symbol, no DWARF unit.
  const uint64_t far = site.module.base + 0x40000000;
  EXPECT_EQ(symbolizer.symbolize(site.module, far)[0].function, "libringprof_symtest.so+0x40000000");
}

TEST(Symbolizer, DamagedFilesNeverCrash) {
  const LibSite site = lib_site();
  const std::vector<uint8_t> image = test::read_file(site.module.path);
  ASSERT_GT(image.size(), 4096u);
  test::TempDir dir;
  std::vector<std::string> paths;

  // Truncated at many lengths, from nothing to one byte short.
  std::vector<size_t> lengths = {0, 1, 4, 16, 52, 63, 64, 65, 100, 1000, 4096};
  for (size_t n = 1; n < 16; ++n) lengths.push_back(image.size() * n / 16);
  lengths.push_back(image.size() - 1);
  for (size_t n : lengths) {
    const std::string path = dir.file("trunc-" + std::to_string(n) + ".so");
    test::write_file(path, std::vector<uint8_t>(image.begin(), image.begin() + static_cast<ptrdiff_t>(n)));
    paths.push_back(path);
  }
  // Garbage, and garbage behind a valid ELF header.
  std::mt19937 rng(1234);
  std::vector<uint8_t> noise(image.size());
  for (auto& b : noise) b = static_cast<uint8_t>(rng());
  test::write_file(dir.file("noise.so"), noise);
  paths.push_back(dir.file("noise.so"));
  std::copy(image.begin(), image.begin() + 64, noise.begin());
  test::write_file(dir.file("header-then-noise.so"), noise);
  paths.push_back(dir.file("header-then-noise.so"));
  // Section headers pointing at nonsense: every byte of the section header
  // table scrambled.
  {
    std::vector<uint8_t> bad = image;
    const auto* ehdr = reinterpret_cast<const Elf64_Ehdr*>(image.data());
    const size_t shoff = ehdr->e_shoff;
    for (size_t i = shoff; i < bad.size(); ++i) bad[i] = static_cast<uint8_t>(rng());
    test::write_file(dir.file("bad-sections.so"), bad);
    paths.push_back(dir.file("bad-sections.so"));
  }
  // Not files: a directory, a FIFO (opening it must not block), a device.
  fs::create_directories(dir.file("a-dir"));
  paths.push_back(dir.file("a-dir"));
  ASSERT_EQ(mkfifo(dir.file("a-fifo").c_str(), 0600), 0);
  paths.push_back(dir.file("a-fifo"));
  paths.push_back("/dev/zero");
  // Unreadable (meaningless as root, harmless then).
  test::write_file(dir.file("unreadable.so"), image);
  chmod(dir.file("unreadable.so").c_str(), 0);
  paths.push_back(dir.file("unreadable.so"));

  const uint64_t offset = site.address - site.module.base;
  for (const std::string& path : paths) {
    SCOPED_TRACE(path);
    for (const std::string& build_id : {std::string(), site.module.build_id}) {
      Symbolizer symbolizer;
      const ModuleRef module{path, build_id, site.module.base};
      const auto frames = symbolizer.symbolize(module, site.address);
      ASSERT_FALSE(frames.empty());
      // Whatever was salvaged, each frame says something.
      for (const auto& f : frames) EXPECT_FALSE(f.function.empty() && f.file.empty());
      symbolizer.symbolize(module, site.module.base + 0x40);
      symbolizer.module_status(module);
    }
  }
  // The short ones cannot hold anything: exactly the fallback.
  Symbolizer symbolizer;
  for (size_t n : {size_t{0}, size_t{1}, size_t{16}, size_t{63}}) {
    const ModuleRef module{dir.file("trunc-" + std::to_string(n) + ".so"), "", site.module.base};
    EXPECT_EQ(symbolizer.symbolize(module, site.address)[0].function,
              fallback_name("trunc-" + std::to_string(n) + ".so", offset));
  }
}

}  // namespace
}  // namespace ringprof
