// The file format's GPU parts: records of every kind, device properties and
// counters survive encode -> decode exactly; a kernel name is stored once per
// file (again in the next file, and again after a lost frame is rolled back);
// and malformed GPU columns are rejected, never read past.
#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "support/owned_batch.h"
#include "support/frame_stream.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof {
namespace {

SessionInfo session() {
  SessionInfo s;
  s.pid = 99;
  s.command_line = {"./train"};
  return s;
}

using Decoded = test::DecodedStream;
::testing::AssertionResult decode(const std::vector<uint8_t>& bytes, Decoded* out) {
  return test::decode_stream(bytes, out);
}

struct GpuBatch {
  test::OwnedBatch cpu;
  std::vector<GpuActivity> gpu;
  std::vector<std::string> names{"_Z6matmulPfS_S_i", "cudaLaunchKernel", "forward", "CUPTI buffer flush"};
  std::vector<GpuDevice> devices;
  GpuStats stats;
  Batch batch() const {
    Batch b = cpu.batch();
    b.gpu = gpu;
    b.gpu_names = names;
    b.gpu_devices = devices;
    b.gpu_stats = &stats;
    for (const GpuActivity& a : gpu) {
      b.first_ns = b.first_ns == 0 ? a.start_ns : std::min(b.first_ns, a.start_ns);
      b.last_ns = std::max(b.last_ns, a.end_ns);
    }
    return b;
  }
};

GpuBatch every_kind() {
  GpuBatch g;
  GpuDevice d;
  d.id = 0;
  d.name = "NVIDIA H100 80GB HBM3";
  d.cc_major = 9;
  d.sm_count = 132;
  d.max_threads_per_block = 1024;
  d.max_warps_per_sm = 64;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_sm = 233472;
  d.smem_per_block = 49152;
  d.global_memory_bytes = 85899345920ull;
  d.core_clock_khz = 1980000;
  g.devices.push_back(d);
  g.stats = GpuStats{12, 3, 1, 0, 2, 5};

  auto add = [&](GpuKind k, uint64_t start, uint64_t end) -> GpuActivity& {
    GpuActivity a;
    a.kind = k;
    a.start_ns = start;
    a.end_ns = end;
    g.gpu.push_back(a);
    return g.gpu.back();
  };
  GpuActivity& api = add(GpuKind::RuntimeApi, 5'000'000'000ull, 5'000'001'000ull);
  api.name = 2;
  api.tid = 4321;
  api.correlation = 100;
  GpuActivity& k = add(GpuKind::Kernel, 5'000'002'000ull, 5'000'052'000ull);
  k.name = 1;
  k.device = 0;
  k.context = 1;
  k.stream = 7;
  k.correlation = 100;
  k.grid[0] = 1024;
  k.grid[1] = 2;
  k.grid[2] = 1;
  k.block[0] = 256;
  k.block[1] = 1;
  k.block[2] = 1;
  k.registers = 40;
  k.static_smem = 8192;
  k.dynamic_smem = 1024;
  k.local_mem = 8;
  GpuActivity& cp = add(GpuKind::Memcpy, 4'999'000'000ull, 4'999'100'000ull);  // earlier: negative delta
  cp.sub_kind = static_cast<uint8_t>(GpuCopyKind::DtoH);
  cp.src_kind = 3;
  cp.dst_kind = 2;
  cp.bytes = 123456789;
  cp.correlation = 98;
  cp.stream = 7;
  GpuActivity& ms = add(GpuKind::Memset, 5'000'060'000ull, 5'000'061'000ull);
  ms.bytes = 4096;
  ms.value = 0xff;
  ms.correlation = 101;
  add(GpuKind::DriverApi, 5'000'000'100ull, 5'000'000'900ull).correlation = 100;
  GpuActivity& sync = add(GpuKind::Sync, 5'000'062'000ull, 5'000'090'000ull);
  sync.sub_kind = 3;
  sync.stream = 7;
  sync.correlation = 102;
  GpuActivity& mem = add(GpuKind::Memory, 4'900'000'000ull, 4'900'000'000ull);
  mem.sub_kind = 1;
  mem.src_kind = 1;
  mem.bytes = 1ull << 30;
  mem.value = 0x7f1234560000ull;
  mem.correlation = 90;
  GpuActivity& ovh = add(GpuKind::Overhead, 5'000'100'000ull, 5'000'200'000ull);
  ovh.name = 4;
  ovh.sub_kind = 1;
  GpuActivity& ext = add(GpuKind::ExternalCorrelation, 5'000'200'000ull, 5'000'200'000ull);
  ext.sub_kind = 3;
  ext.value = 77;
  ext.correlation = 100;
  GpuActivity& mk = add(GpuKind::Marker, 4'999'999'000ull, 5'000'300'000ull);
  mk.name = 3;
  mk.sub_kind = 1;
  mk.tid = 4321;
  mk.value = 0xff00ff00;
  return g;
}

bool same(const GpuActivity& a, const GpuActivity& b) {
  return a.kind == b.kind && a.sub_kind == b.sub_kind && a.src_kind == b.src_kind && a.dst_kind == b.dst_kind &&
         a.start_ns == b.start_ns && a.end_ns == b.end_ns && a.device == b.device && a.context == b.context &&
         a.stream == b.stream && a.correlation == b.correlation && a.tid == b.tid && a.bytes == b.bytes &&
         a.value == b.value && std::equal(a.grid, a.grid + 3, b.grid) && std::equal(a.block, a.block + 3, b.block) &&
         a.registers == b.registers && a.static_smem == b.static_smem && a.dynamic_smem == b.dynamic_smem &&
         a.local_mem == b.local_mem;
}

std::string name_of(const DecodedSegment& seg, const GpuActivity& a) {
  return a.name == 0 ? "" : seg.gpu_names.at(a.name - 1);
}

TEST(GpuCodec, EveryKindRoundTrips) {
  const GpuBatch g = every_kind();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(g.batch(), bytes), 0u);
  Decoded d;
  ASSERT_TRUE(decode(bytes, &d));
  const DecodedSegment& seg = d.segments.at(0);
  ASSERT_EQ(seg.gpu.size(), g.gpu.size());
  for (size_t i = 0; i < g.gpu.size(); ++i) {
    EXPECT_TRUE(same(seg.gpu[i], g.gpu[i])) << "record " << i << " (" << gpu_kind_name(g.gpu[i].kind) << ")";
    const std::string want = g.gpu[i].name ? g.names[g.gpu[i].name - 1] : "";
    EXPECT_EQ(name_of(seg, seg.gpu[i]), want) << "record " << i;
  }
  ASSERT_EQ(seg.gpu_devices.size(), 1u);
  const GpuDevice& dev = seg.gpu_devices[0];
  EXPECT_EQ(dev.name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(dev.cc_major, 9u);
  EXPECT_EQ(dev.sm_count, 132u);
  EXPECT_EQ(dev.smem_per_sm, 233472u);
  EXPECT_EQ(dev.global_memory_bytes, 85899345920ull);
  EXPECT_EQ(dev.core_clock_khz, 1980000u);
  ASSERT_TRUE(seg.gpu_stats.has_value());
  EXPECT_EQ(seg.gpu_stats->records, 12u);
  EXPECT_EQ(seg.gpu_stats->dropped_records, 3u);
  EXPECT_EQ(seg.gpu_stats->refused_buffers, 1u);
  EXPECT_EQ(seg.gpu_stats->unknown_records, 2u);
  // The frame's time range covers the GPU records (no CPU events here).
  EXPECT_EQ(seg.header.first_ns, 4'900'000'000ull);
  EXPECT_EQ(seg.header.last_ns, 5'000'300'000ull);
  EXPECT_EQ(seg.header.event_count, 0u);
}

size_t count(const std::vector<std::string>& strings, const std::string& s) {
  return static_cast<size_t>(std::count(strings.begin(), strings.end(), s));
}

TEST(GpuCodec, NamesAndDevicesOncePerFileAndRestatedAfterRollback) {
  GpuBatch g = every_kind();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> file1;
  ASSERT_GT(enc.encode(g.batch(), file1), 0u);
  ASSERT_GT(enc.encode(g.batch(), file1), 0u);  // same names, same device, same stats version
  Decoded d1;
  ASSERT_TRUE(decode(file1, &d1));
  EXPECT_EQ(count(d1.strings, "_Z6matmulPfS_S_i"), 1u) << "a kernel name is stored once per file";
  EXPECT_TRUE(d1.segments[1].gpu_devices.empty());
  EXPECT_FALSE(d1.segments[1].gpu_stats.has_value()) << "unchanged counters are not restated";
  EXPECT_EQ(name_of(d1.segments[1], d1.segments[1].gpu[1]), "_Z6matmulPfS_S_i");

  // A frame the sink could not store: rolled back, so the next restates.
  std::vector<uint8_t> lost;
  enc.start_file(session());
  ASSERT_GT(enc.encode(g.batch(), lost), 0u);
  enc.rollback_last();
  std::vector<uint8_t> file2;
  ASSERT_GT(enc.encode(g.batch(), file2), 0u);
  Decoded d2;
  ASSERT_TRUE(decode(file2, &d2));
  EXPECT_EQ(count(d2.strings, "_Z6matmulPfS_S_i"), 1u);
  EXPECT_EQ(d2.segments[0].gpu_devices.size(), 1u);
  EXPECT_TRUE(d2.segments[0].gpu_stats.has_value());
  EXPECT_EQ(name_of(d2.segments[0], d2.segments[0].gpu[1]), "_Z6matmulPfS_S_i");

  // Changed counters are stated again.
  g.stats.clock_violations = 4;
  ++g.stats.version;
  std::vector<uint8_t> more;
  ASSERT_GT(enc.encode(g.batch(), more), 0u);
  file2.insert(file2.end(), more.begin(), more.end());
  Decoded d3;
  ASSERT_TRUE(decode(file2, &d3));
  ASSERT_TRUE(d3.segments[1].gpu_stats.has_value());
  EXPECT_EQ(d3.segments[1].gpu_stats->clock_violations, 4u);
}

TEST(GpuCodec, NameIdsTheBatchCannotDescribeBecomeNoName) {
  GpuBatch g = every_kind();
  g.gpu[1].name = 999;
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(g.batch(), bytes), 0u);
  Decoded d;
  ASSERT_TRUE(decode(bytes, &d));
  EXPECT_EQ(d.segments[0].gpu[1].name, 0u);
}

TEST(GpuCodec, BatchesWithoutGpuDataHaveNoGpuTables) {
  test::OwnedBatch b;
  b.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0, 0});
  Event e{};
  e.ts = 1000;
  e.kind = EventKind::Step;
  e.p1 = 3;
  b.events.push_back(e);
  b.runs.push_back(EventRun{1, 0, 1});
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(b.batch(), bytes), 0u);
  Decoded d;
  ASSERT_TRUE(decode(bytes, &d));
  EXPECT_TRUE(d.segments[0].gpu.empty());
  EXPECT_TRUE(d.segments[0].gpu_devices.empty());
  EXPECT_FALSE(d.segments[0].gpu_stats.has_value());
}

// Every truncation of every GPU column must be rejected cleanly: re-encode
// the payload uncompressed with one column shortened and decode it.
TEST(GpuCodec, DamagedPayloadsNeverCrash) {
  const GpuBatch g = every_kind();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(g.batch(), bytes), 0u);
  std::string err;
  auto h = format::parse_frame_header(bytes, &err);
  ASSERT_TRUE(h);
  // Flip every byte of the payload in turn, fixing the checksum so the
  // damage reaches zstd, the verifier and the column checks.
  std::vector<uint8_t> payload(bytes.begin() + h->header_size, bytes.end());
  size_t rejected = 0;
  for (size_t i = 0; i < payload.size(); ++i) {
    std::vector<uint8_t> bad = payload;
    bad[i] ^= 0x5a;
    format::FrameHeader hh = *h;
    hh.payload_crc32 = format::crc32(bad);
    std::vector<std::string> strings;
    DecodedSegment seg;
    if (!decode_segment(hh, bad, strings, seg, &err)) ++rejected;
  }
  EXPECT_GT(rejected, 0u);
}

}  // namespace
}  // namespace ringprof
