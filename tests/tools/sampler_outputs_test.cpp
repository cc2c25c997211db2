// The sample outputs — flame (folded), pprof, table --samples and the Chrome
// trace — over hand-built files whose stacks point at real functions of this
// test program, so symbolization is the real thing: ELF symbols, DWARF lines
// and demangling through elfutils, with the module found by build ID.
//
// The files hold (thread "main" tid 100, thread "worker" tid 101):
//   S1 = leaf in rp_out_leaf, called from outputs_test::caller(int)   main ×3, worker ×2
//   S2 = leaf in outputs_test::caller(int)                            main ×1
//   S3 = leaf at 0x10 (no module), called from caller                 worker ×1
//   S4 = leaf in a module whose file is gone (libfake.so)             worker ×1
//   stack 99, never described by the files                            worker ×1
// so 9 samples; rp_out_leaf is the leaf of 5 (self 5) and caller is on the
// stack of 7 (S1 ×5, S2, S3).
#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/trace_builder.h"
#include "profile.pb.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/flame_graph.h"
#include "ringprof/tools/pprof_export.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/sample_table.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/trace_info.h"
#include "support/test_support.h"

extern "C" __attribute__((noinline)) int rp_out_leaf(int x) {
  asm volatile("" ::: "memory");
  return x * 3 + 1;
}

namespace outputs_test {
__attribute__((noinline)) int caller(int x) {
  asm volatile("" ::: "memory");
  return rp_out_leaf(x) + rp_out_leaf(x + 1);
}
}  // namespace outputs_test

namespace ringprof {
namespace {

// The main program as a recorded module: load bias, executable range, build ID.
ModuleInfo main_program() {
  ModuleInfo m;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) -> int {
        auto* out = static_cast<ModuleInfo*>(data);
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') return 0;  // not the main program
        out->base = info->dlpi_addr;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const ElfW(Phdr)& ph = info->dlpi_phdr[i];
          if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            out->start = info->dlpi_addr + ph.p_vaddr;
            out->end = out->start + ph.p_memsz;
            out->file_offset = ph.p_offset;
          } else if (ph.p_type == PT_NOTE) {
            const auto* p = reinterpret_cast<const uint8_t*>(info->dlpi_addr + ph.p_vaddr);
            const uint8_t* end = p + ph.p_memsz;
            while (p + sizeof(ElfW(Nhdr)) <= end) {
              const auto* nh = reinterpret_cast<const ElfW(Nhdr)*>(p);
              const uint8_t* name = p + sizeof(ElfW(Nhdr));
              const uint8_t* desc = name + ((nh->n_namesz + 3) & ~3u);
              if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && std::memcmp(name, "GNU", 4) == 0) {
                static const char* hex = "0123456789abcdef";
                for (uint32_t k = 0; k < nh->n_descsz; ++k) {
                  out->build_id += hex[desc[k] >> 4];
                  out->build_id += hex[desc[k] & 15];
                }
              }
              p = desc + ((nh->n_descsz + 3) & ~3u);
            }
          }
        }
        return 1;
      },
      &m);
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) m.path.assign(exe, static_cast<size_t>(n));
  return m;
}

uint64_t addr(const void* fn, uint64_t offset) { return reinterpret_cast<uint64_t>(fn) + offset; }

class SampleOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    test::TraceBuilder b(4242, 1'000'000'000);
    const ModuleInfo exe = main_program();
    ASSERT_FALSE(exe.path.empty());
    ASSERT_FALSE(exe.build_id.empty()) << "the test program has no GNU build ID";
    b.module(exe);
    ModuleInfo fake;
    fake.path = "/nonexistent/libfake.so";
    fake.build_id = "00112233";
    fake.base = 0x7000000000;
    fake.start = 0x7000001000;
    fake.end = 0x7000002000;
    b.module(fake);
    b.sampler("perf_event", 100);  // 10 ms of CPU per sample

    const void* leaf = reinterpret_cast<const void*>(&rp_out_leaf);
    const void* caller = reinterpret_cast<const void*>(&outputs_test::caller);
    const uint32_t s1 = b.stack({addr(leaf, 2), addr(caller, 5)});
    const uint32_t s2 = b.stack({addr(caller, 3)});
    const uint32_t s3 = b.stack({0x10, addr(caller, 5)});
    const uint32_t s4 = b.stack({0x7000001234});
    const uint32_t main_t = b.thread(100, "main");
    const uint32_t worker = b.thread(101, "worker");
    uint64_t t = 2'000'000'000;
    for (int i = 0; i < 3; ++i) b.sample(main_t, t += 10'000'000, s1);
    b.sample(main_t, t += 10'000'000, s2);
    b.sample(worker, t += 10'000'000, s1);
    b.sample(worker, t += 10'000'000, s3);
    b.flush();  // the rest in a second segment: stacks stated earlier stay known
    b.sample(worker, t += 10'000'000, s1);
    b.sample(worker, t += 10'000'000, s4);
    b.sample(worker, t += 10'000'000, 99);
    b.samples_lost(worker, 4);
    b.flush();
    path_ = dir_.file("trace.rpf");
    test::write_file(path_, b.bytes());
  }

  test::TempDir dir_;
  std::string path_;
};

TEST_F(SampleOutputs, FoldedStacksAreSymbolizedMergedAndSorted) {
  TraceReader reader({path_});
  const SampleProfile profile = collect_samples(reader, {});
  ASSERT_FALSE(reader.has_problems());
  EXPECT_EQ(profile.samples, 9u);
  EXPECT_EQ(profile.samples_lost, 4u);
  EXPECT_EQ(profile.period_ns, 10'000'000u);
  StackResolver resolver;
  EXPECT_EQ(format_folded(reader, profile, resolver),
            "[unknown stack] 1\n"
            "libfake.so+0x1234 1\n"
            "outputs_test::caller(int) 1\n"
            "outputs_test::caller(int);0x10 1\n"
            "outputs_test::caller(int);rp_out_leaf 5\n");

  FoldedOptions per_thread;
  per_thread.per_thread = true;
  EXPECT_EQ(format_folded(reader, profile, resolver, per_thread),
            "trainer;main (100);outputs_test::caller(int) 1\n"
            "trainer;main (100);outputs_test::caller(int);rp_out_leaf 3\n"
            "trainer;worker (101);[unknown stack] 1\n"
            "trainer;worker (101);libfake.so+0x1234 1\n"
            "trainer;worker (101);outputs_test::caller(int);0x10 1\n"
            "trainer;worker (101);outputs_test::caller(int);rp_out_leaf 2\n");
}

TEST_F(SampleOutputs, ThreadFilterAndWindowSelectSamples) {
  TraceReader reader({path_});
  SampleOptions by_thread;
  by_thread.thread = "101";
  SampleProfile p = collect_samples(reader, by_thread);
  EXPECT_EQ(p.samples, 5u);
  StackResolver resolver;
  EXPECT_EQ(format_folded(reader, p, resolver),
            "[unknown stack] 1\n"
            "libfake.so+0x1234 1\n"
            "outputs_test::caller(int);0x10 1\n"
            "outputs_test::caller(int);rp_out_leaf 2\n");

  // The last 25 ms of the trace hold the last three samples (at +70, +80 and
  // +90 ms; the trace ends at the last one).
  SampleOptions last;
  last.range.last_ns = 25'000'000;
  p = collect_samples(reader, last);
  EXPECT_EQ(p.samples, 3u);
}

TEST_F(SampleOutputs, TableGivesSelfAndTotalShares) {
  TraceReader reader({path_});
  const SampleProfile profile = collect_samples(reader, {});
  StackResolver resolver;
  const SampleTable table = compute_sample_table(reader, profile, resolver, SampleColumn::Self);
  ASSERT_EQ(table.samples, 9u);
  std::map<std::string, std::pair<uint64_t, uint64_t>> rows;
  for (const SampleRow& r : table.rows) rows[r.function] = {r.self, r.total};
  EXPECT_EQ(rows["rp_out_leaf"], std::make_pair(uint64_t{5}, uint64_t{5}));
  EXPECT_EQ(rows["outputs_test::caller(int)"], std::make_pair(uint64_t{1}, uint64_t{7}));
  EXPECT_EQ(rows["0x10"], std::make_pair(uint64_t{1}, uint64_t{1}));
  EXPECT_EQ(rows.size(), 5u);
  EXPECT_EQ(table.rows.front().function, "rp_out_leaf");  // sorted by self

  // The leaf's location is this file, from DWARF.
  EXPECT_NE(table.rows.front().location.find("sampler_outputs_test.cpp:"), std::string::npos)
      << table.rows.front().location;

  const std::string text = format_sample_table(table, TableFormat::Text);
  EXPECT_NE(text.find("55.56"), std::string::npos) << text;  // 5 of 9
  EXPECT_NE(text.find("77.78"), std::string::npos) << text;  // 7 of 9
  EXPECT_NE(text.find("Samples: 9 (90000.000 us of CPU); lost: 4"), std::string::npos) << text;
  const std::string csv = format_sample_table(compute_sample_table(reader, profile, resolver, SampleColumn::Total),
                                              TableFormat::Csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')), "function,self,self_pct,total,total_pct,location");
  EXPECT_EQ(csv.substr(csv.find('\n') + 1, csv.find(',', csv.find('\n')) - csv.find('\n') - 1),
            "outputs_test::caller(int)");  // sorted by total
}

TEST_F(SampleOutputs, PprofProfileHoldsSamplesLocationsAndMappings) {
  TraceReader reader({path_});
  const SampleProfile profile = collect_samples(reader, {});
  StackResolver resolver;
  pprof::Profile p;
  ASSERT_TRUE(p.ParseFromString(build_pprof(reader, profile, resolver)));
  auto str = [&](int64_t i) { return p.string_table(static_cast<int>(i)); };
  ASSERT_EQ(p.sample_type_size(), 2);
  EXPECT_EQ(str(p.sample_type(0).type()), "samples");
  EXPECT_EQ(str(p.sample_type(1).unit()), "nanoseconds");
  EXPECT_EQ(p.period(), 10'000'000);
  EXPECT_EQ(str(p.string_table(0).size()), "");

  // One pprof sample per (thread, stack): main S1, S2; worker S1, S3, S4, 99.
  ASSERT_EQ(p.sample_size(), 6);
  int64_t count = 0, cpu = 0;
  for (const auto& s : p.sample()) {
    count += s.value(0);
    cpu += s.value(1);
    ASSERT_EQ(s.label_size(), 3);
  }
  EXPECT_EQ(count, 9);
  EXPECT_EQ(cpu, 90'000'000);

  std::map<uint64_t, std::string> functions;
  for (const auto& f : p.function()) functions[f.id()] = str(f.name());
  std::map<uint64_t, const pprof::Location*> locations;
  for (const auto& l : p.location()) locations[l.id()] = &l;
  // The first sample is main's S1: leaf rp_out_leaf, then caller.
  const auto& first = p.sample(0);
  ASSERT_EQ(first.location_id_size(), 2);
  EXPECT_EQ(functions[locations[first.location_id(0)]->line(0).function_id()], "rp_out_leaf");
  EXPECT_EQ(functions[locations[first.location_id(1)]->line(0).function_id()], "outputs_test::caller(int)");
  EXPECT_GT(locations[first.location_id(0)]->line(0).line(), 0);

  // Both modules are mappings, with their build IDs, and the leaf's location uses the program's.
  ASSERT_EQ(p.mapping_size(), 2);
  const ModuleInfo exe = main_program();
  const auto& m = p.mapping(static_cast<int>(locations[first.location_id(0)]->mapping_id() - 1));
  EXPECT_EQ(str(m.filename()), exe.path);
  EXPECT_EQ(str(m.build_id()), exe.build_id);
  EXPECT_EQ(m.memory_start(), exe.start);
  // Wall-clock time of the first sample: realtime start + (first sample - monotonic start).
  EXPECT_EQ(p.time_nanos(), 1'700'000'000'000'000'000 + (2'010'000'000 - 1'000'000'000));
  EXPECT_EQ(p.duration_nanos(), 80'000'000);
}

TEST_F(SampleOutputs, GoToolPprofReadsTheProfile) {
  if (test::run_command("command -v go").exit_code != 0) GTEST_SKIP() << "go (Debian golang-go) is not installed";
  const std::string out = dir_.file("cpu.pb.gz");
  const auto made = test::run_command(std::string(RINGPROF_CLI) + " pprof " + test::shell_quote(path_) + " -o " +
                                      test::shell_quote(out));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const auto top = test::run_command("HOME=" + dir_.path() + " GOCACHE=" + dir_.path() +
                                     "/gocache go tool pprof -top -sample_index=samples -symbolize=none " +
                                     test::shell_quote(out));
  ASSERT_EQ(top.exit_code, 0) << top.err;
  // -top lines: flat flat% sum% cum cum% name. rp_out_leaf: flat 5; caller: cum 7.
  std::map<std::string, std::pair<long, long>> rows;
  std::istringstream lines(top.out);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    long flat = 0, cum = 0;
    std::string flat_pct, sum_pct, cum_pct, name;
    if (!(f >> flat >> flat_pct >> sum_pct >> cum >> cum_pct)) continue;
    std::getline(f >> std::ws, name);
    rows[name] = {flat, cum};
  }
  EXPECT_EQ(rows["rp_out_leaf"], std::make_pair(5L, 5L)) << top.out;
  EXPECT_EQ(rows["outputs_test::caller(int)"], std::make_pair(1L, 7L)) << top.out;
}

TEST_F(SampleOutputs, CliCommandsAgreeWithTheLibrary) {
  const std::string folded = dir_.file("out.folded");
  auto r = test::run_command(std::string(RINGPROF_CLI) + " flame " + test::shell_quote(path_) + " -o " +
                             test::shell_quote(folded) + " --thread main");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::read_text(folded),
            "outputs_test::caller(int) 1\n"
            "outputs_test::caller(int);rp_out_leaf 3\n");
  r = test::run_command(std::string(RINGPROF_CLI) + " table --samples --format csv --top 1 " + test::shell_quote(path_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(r.out.find('\n') + 1, std::string("rp_out_leaf,5,55.56,5,55.56,").size()),
            "rp_out_leaf,5,55.56,5,55.56,");
  r = test::run_command(std::string(RINGPROF_CLI) + " table --samples --sort calls " + test::shell_quote(path_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("bad --sort column"), std::string::npos);
  r = test::run_command(std::string(RINGPROF_CLI) + " pprof " + test::shell_quote(path_));
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("pprof needs -o OUT"), std::string::npos);
}

TEST_F(SampleOutputs, ChromeTraceShowsSamplesOnTheirThreadWithTheStack) {
  TraceReader reader({path_});
  ChromeTraceOptions options;
  options.thread = "main";
  std::ostringstream out;
  const ChromeTraceStats stats = write_chrome_trace(reader, options, out);
  EXPECT_EQ(stats.samples_written, 4u);
  const auto json = nlohmann::json::parse(out.str());
  int samples = 0;
  for (const auto& e : json["traceEvents"]) {
    if (e.value("cat", "") != "cpu_sample") continue;
    ++samples;
    EXPECT_EQ(e["tid"], 100);
    EXPECT_EQ(e["ph"], "i");
    const auto& stack = e["args"]["stack"];
    ASSERT_GE(stack.size(), 1u);
    // Root first: the caller, with its source line.
    EXPECT_EQ(stack[0].get<std::string>().rfind("outputs_test::caller(int) (", 0), 0u) << stack[0];
    EXPECT_EQ(e["name"], stack.size() == 2 ? "rp_out_leaf" : "outputs_test::caller(int)");
  }
  EXPECT_EQ(samples, 4);
}

}  // namespace
}  // namespace ringprof

namespace ringprof {
namespace {

TEST_F(SampleOutputs, InfoReportsTheSamplerSamplesAndLosses) {
  TraceReader reader({path_});
  const TraceInfo info = collect_info(reader);
  EXPECT_EQ(info.samples, 9u);
  EXPECT_EQ(info.samples_lost, 4u);
  ASSERT_EQ(info.processes.size(), 1u);
  const ProcessSummary& p = info.processes[0];
  ASSERT_TRUE(p.sampler.has_value());
  EXPECT_EQ(p.sampler->mechanism, "perf_event");
  EXPECT_EQ(p.modules, 2u);
  EXPECT_EQ(p.stacks, 4u);  // stack 99 is never described
  const std::string text = format_info(info);
  EXPECT_NE(text.find("    sampling: perf_event at 100 Hz\n"), std::string::npos) << text;
  EXPECT_NE(text.find("thread 101 \"worker\": 5 events, 5 samples (4 lost)"), std::string::npos) << text;
  EXPECT_NE(text.find("Samples: 9 kept, 4 lost"), std::string::npos) << text;
  EXPECT_NE(text.find("  sample: 9"), std::string::npos) << text;
}

// stop() states the sampler at hz 0 in the last segment: info shows the rate
// it ran at, then that it ended, not a sampler that never ran.
TEST(SamplerInfo, ShowsTheRateItRanAtNotTheStateStopLeft) {
  test::TempDir dir;
  test::TraceBuilder b(4243, 1'000'000'000);
  b.sampler("perf_event", 250);
  const uint32_t stack = b.stack({0x1234});
  const uint32_t th = b.thread(200, "main");
  b.sample(th, 2'000'000'000, stack);
  b.flush();
  b.sampler("perf_event", 0);
  b.sample(th, 2'004'000'000, stack);  // delivered after the stop
  b.flush();
  const std::string path = dir.file("trace.rpf");
  test::write_file(path, b.bytes());
  TraceReader reader({path});
  const TraceInfo info = collect_info(reader);
  ASSERT_EQ(info.processes.size(), 1u);
  const ProcessSummary& p = info.processes[0];
  ASSERT_TRUE(p.sampler && p.sampler_running);
  EXPECT_EQ(p.sampler->hz, 0u);
  EXPECT_EQ(p.sampler_running->hz, 250u);
  const std::string text = format_info(info);
  EXPECT_NE(text.find("    sampling: perf_event at 250 Hz, then off\n"), std::string::npos) << text;
}

}  // namespace
}  // namespace ringprof
