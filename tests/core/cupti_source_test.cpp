// The CUPTI source without a GPU: real CUPTI activity records (the structs of
// cupti_activity.h, filled by hand) go through the same path CUPTI's
// callbacks take — a pool buffer from buffer_requested, buffer_completed, the
// lock-free queue, the drainer's conversion — and come out as GpuActivity in
// the batches the sink gets. libcupti itself is replaced by a table of fakes
// (cupti_api.h), so the test also sees what ringprof asks of CUPTI: the
// timestamp callback before any kind is enabled, the kinds, the noisy API
// calls turned off, the forced flush, and everything disabled at stop.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "gpu/cupti/cupti_records.h"
#include "gpu/cupti/cupti_source.h"
#include "gpu/gpu_records.h"
#include "ringprof/ringprof.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

// ---- the fake libcupti ----

struct FakeCupti {
  std::vector<std::string> calls;  // in order
  std::set<int> enabled;
  std::set<uint32_t> runtime_disabled, driver_disabled;
  CUpti_BuffersCallbackRequestFunc requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc completed = nullptr;
  CUpti_TimestampCallbackFunc timestamp = nullptr;
  size_t dropped_per_buffer = 0;
  CUptiResult enable_result = CUPTI_SUCCESS;
};
FakeCupti* g_fake = nullptr;

const std::map<uint32_t, const char*> kRuntimeNames = {
    {17, "cudaGetDevice_v3020"}, {20, "cudaMemcpy_v3020"}, {211, "cudaLaunchKernel_v7000"},
    {132, "cudaStreamQuery_v3020"}, {165, "cudaDeviceSynchronize_v3020"}};
const std::map<uint32_t, const char*> kDriverNames = {{304, "cuCtxGetCurrent"}, {307, "cuLaunchKernel"}};

cupti::Api fake_api() {
  cupti::Api a;
  a.GetVersion = [](uint32_t* v) { *v = CUPTI_API_VERSION; return CUPTI_SUCCESS; };
  a.GetResultString = [](CUptiResult r, const char** s) {
    *s = r == CUPTI_ERROR_INSUFFICIENT_PRIVILEGES            ? "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"
         : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                               : "CUPTI_ERROR_OTHER";
    return CUPTI_SUCCESS;
  };
  a.ActivityRegisterCallbacks = [](CUpti_BuffersCallbackRequestFunc rq, CUpti_BuffersCallbackCompleteFunc cp) {
    g_fake->calls.push_back("register_callbacks");
    g_fake->requested = rq;
    g_fake->completed = cp;
    return CUPTI_SUCCESS;
  };
  a.ActivityRegisterTimestampCallback = [](CUpti_TimestampCallbackFunc f) {
    g_fake->calls.push_back("register_timestamp");
    g_fake->timestamp = f;
    return CUPTI_SUCCESS;
  };
  a.ActivityEnable = [](CUpti_ActivityKind k) {
    if (g_fake->enable_result != CUPTI_SUCCESS) return g_fake->enable_result;
    g_fake->calls.push_back("enable " + std::to_string(k));
    g_fake->enabled.insert(k);
    return CUPTI_SUCCESS;
  };
  a.ActivityDisable = [](CUpti_ActivityKind k) {
    g_fake->calls.push_back("disable " + std::to_string(k));
    g_fake->enabled.erase(k);
    return CUPTI_SUCCESS;
  };
  a.ActivityFlushAll = [](uint32_t flag) {
    g_fake->calls.push_back("flush " + std::to_string(flag));
    return CUPTI_SUCCESS;
  };
  a.ActivityGetNextRecord = cupti::next_record_by_header;
  a.ActivityGetNumDroppedRecords = [](CUcontext, uint32_t, size_t* n) {
    *n = g_fake->dropped_per_buffer;
    return CUPTI_SUCCESS;
  };
  a.ActivityEnableRuntimeApi = [](CUpti_CallbackId cbid, uint8_t on) {
    if (!on) g_fake->runtime_disabled.insert(cbid);
    return CUPTI_SUCCESS;
  };
  a.ActivityEnableDriverApi = [](CUpti_CallbackId cbid, uint8_t on) {
    if (!on) g_fake->driver_disabled.insert(cbid);
    return CUPTI_SUCCESS;
  };
  a.GetCallbackName = [](CUpti_CallbackDomain domain, uint32_t cbid, const char** name) {
    const auto& table = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? kRuntimeNames : kDriverNames;
    auto it = table.find(cbid);
    if (it == table.end()) return CUPTI_ERROR_INVALID_PARAMETER;
    *name = it->second;
    return CUPTI_SUCCESS;
  };
  return a;
}

// ---- hand-built records ----

class RecordWriter {
 public:
  RecordWriter(uint8_t* buffer, size_t size) : buffer_(buffer), size_(size) {}
  template <typename T>
  T& add(CUpti_ActivityKind kind) {
    EXPECT_LE(used_ + sizeof(T), size_);
    T* r = reinterpret_cast<T*>(buffer_ + used_);
    std::memset(static_cast<void*>(r), 0, sizeof(T));
    r->kind = kind;
    used_ += sizeof(T);
    return *r;
  }
  size_t used() const { return used_; }

 private:
  uint8_t* buffer_;
  size_t size_;
  size_t used_ = 0;
};

CUpti_ActivityAPI& api_call(RecordWriter& w, CUpti_ActivityKind kind, uint32_t cbid, uint64_t start, uint64_t end,
                            uint32_t corr, uint32_t tid) {
  auto& a = w.add<CUpti_ActivityAPI>(kind);
  a.cbid = cbid;
  a.start = start;
  a.end = end;
  a.correlationId = corr;
  a.threadId = tid;
  a.processId = 1;
  return a;
}

CUpti_ActivityKernel10& kernel(RecordWriter& w, const char* name, uint64_t start, uint64_t end, uint32_t corr) {
  auto& k = w.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = name;
  k.start = start;
  k.end = end;
  k.correlationId = corr;
  k.deviceId = 0;
  k.contextId = 1;
  k.streamId = 7;
  k.gridX = 1024;
  k.gridY = 1;
  k.gridZ = 1;
  k.blockX = 256;
  k.blockY = 1;
  k.blockZ = 1;
  k.registersPerThread = 32;
  k.staticSharedMemory = 4096;
  k.dynamicSharedMemory = 1024;
  k.localMemoryPerThread = 16;
  return k;
}

// What each detail level enables.
const std::set<int> kAlwaysOnKinds = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                      CUPTI_ACTIVITY_KIND_MEMSET,            CUPTI_ACTIVITY_KIND_RUNTIME,
                                      CUPTI_ACTIVITY_KIND_DRIVER,            CUPTI_ACTIVITY_KIND_DEVICE};
const std::set<int> kAllKinds = [] {
  std::set<int> k = kAlwaysOnKinds;
  k.insert({CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_OVERHEAD,
            CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_MARKER_DATA});
  return k;
}();

// ---- a sink that keeps the GPU side of every batch ----

class GpuCaptureSink : public Sink {
 public:
  void begin_session(const SessionInfo&) override {}
  bool write(const Batch& b) override {
    std::lock_guard<std::mutex> lock(mutex);
    for (const GpuActivity& a : b.gpu) {
      records.push_back(a);
      names.push_back(a.name >= 1 && a.name <= b.gpu_names.size() ? b.gpu_names[a.name - 1] : "");
      EXPECT_GE(a.start_ns, b.first_ns);
      EXPECT_LE(a.end_ns, b.last_ns);
    }
    devices.assign(b.gpu_devices.begin(), b.gpu_devices.end());
    if (b.gpu_stats) stats = *b.gpu_stats;
    cpu_events += b.events.size();
    return true;
  }
  void end_session() override {}

  std::mutex mutex;
  std::vector<GpuActivity> records;
  std::vector<std::string> names;
  std::vector<GpuDevice> devices;
  GpuStats stats;
  uint64_t cpu_events = 0;
};

class CuptiSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    g_fake = &fake_;
    api_ = fake_api();
    cupti::use_api_for_testing(&api_);
  }
  void TearDown() override {
    ringprof::stop();
    cupti::use_api_for_testing(nullptr);
    g_fake = nullptr;
  }
  bool start(uint32_t buffers = 8, Level mode = Level::AlwaysOn) {
    Config c;
    c.ops.mode = mode;
    c.cupti_buffers = buffers;
    c.cupti_buffer_bytes = 64 << 10;
    sink_ = std::make_shared<GpuCaptureSink>();
    return ringprof::start(c, sink_);
  }
  // A buffer from the pool, as CUPTI gets it.
  uint8_t* request(size_t* size) {
    uint8_t* buffer = nullptr;
    size_t max_records = 1;
    fake_.requested(&buffer, size, &max_records);
    EXPECT_EQ(max_records, 0u);
    return buffer;
  }
  void complete(uint8_t* buffer, size_t size, size_t valid) { fake_.completed(nullptr, 0, buffer, size, valid); }

  FakeCupti fake_;
  cupti::Api api_;
  std::shared_ptr<GpuCaptureSink> sink_;
};

TEST_F(CuptiSourceTest, StartRegistersClockFirstEnablesKindsAndTurnsNoisyCallsOff) {
  ASSERT_TRUE(start());
  ASSERT_GE(fake_.calls.size(), 3u);
  // The timestamp callback must precede every enable, or early records keep CUPTI's clock.
  EXPECT_EQ(fake_.calls[0], "register_timestamp");
  EXPECT_EQ(fake_.calls[1], "register_callbacks");
  // The session starts always_on: kernel timing and launch correlation only.
  ringprof::flush();  // the drainer's first level callback has run: it changes nothing
  EXPECT_EQ(fake_.enabled, kAlwaysOnKinds);
  EXPECT_EQ(fake_.runtime_disabled, (std::set<uint32_t>{17, 132}));  // cudaGetDevice, cudaStreamQuery
  EXPECT_EQ(fake_.driver_disabled, (std::set<uint32_t>{304}));       // cuCtxGetCurrent
  // ringprof's clock: CLOCK_MONOTONIC ns, the clock of the CPU events.
  ASSERT_NE(fake_.timestamp, nullptr);
  const uint64_t before = internal::monotonic_ns();
  const uint64_t t = fake_.timestamp();
  EXPECT_GE(t, before);
  EXPECT_LE(t, internal::monotonic_ns());
  ringprof::stop();
  EXPECT_TRUE(fake_.enabled.empty()) << "every kind is disabled at stop";
}

// The detail level switches the detailed kinds on and off at run time
// (cuptiActivityEnable/Disable from the drainer's level callback).
TEST_F(CuptiSourceTest, DetailLevelEnablesAndDisablesTheDetailedKinds) {
  ASSERT_TRUE(start());
  ringprof::flush();  // flush() returns after a drainer round, which runs the level callbacks
  EXPECT_EQ(fake_.enabled, kAlwaysOnKinds);
  const size_t calls_before = fake_.calls.size();

  set_mode(Level::Detailed);
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAllKinds);
  set_mode(Level::Off);  // off pauses recording; GPU tracing stays at the always_on kinds
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAlwaysOnKinds);
  set_mode(Level::Detailed);
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAllKinds);
  set_mode(Level::AlwaysOn);
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAlwaysOnKinds);

  // Only detailed kinds were ever switched: the always_on ones stayed enabled throughout.
  for (size_t i = calls_before; i < fake_.calls.size(); ++i) {
    const std::string& c = fake_.calls[i];
    if (c.rfind("enable ", 0) != 0 && c.rfind("disable ", 0) != 0) continue;
    const int kind = std::stoi(c.substr(c.find(' ') + 1));
    EXPECT_FALSE(kAlwaysOnKinds.count(kind)) << c;
  }
  ringprof::stop();
  EXPECT_TRUE(fake_.enabled.empty()) << "every kind is disabled at stop";
}

TEST_F(CuptiSourceTest, SessionStartingDetailedEnablesEveryKindAtOnce) {
  ASSERT_TRUE(start(8, Level::Detailed));
  EXPECT_EQ(fake_.enabled, kAllKinds);
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAllKinds);
  set_mode(Level::AlwaysOn);
  ringprof::flush();
  EXPECT_EQ(fake_.enabled, kAlwaysOnKinds);
}

// torch.profiler (Kineto) replaces ringprof's CUPTI callbacks when it starts.
// Handed over, ringprof first takes back the buffers it has in CUPTI (a
// forced flush, while its callbacks are still the registered ones), turns its
// kinds and clock off and leaves CUPTI alone; taken back, it registers its
// clock and callbacks before enabling the kinds of the level of that moment.
TEST_F(CuptiSourceTest, HandOverLetsGoOfCuptiAndTakeBackRestoresIt) {
  ASSERT_TRUE(start());
  ringprof::flush();
  const auto ours_requested = fake_.requested;
  const auto ours_timestamp = fake_.timestamp;
  size_t calls = fake_.calls.size();

  testing::internal::CaptureStderr();
  EXPECT_TRUE(gpu_hand_over("torch.profiler"));
  const std::string said = testing::internal::GetCapturedStderr();
  EXPECT_NE(said.find("torch.profiler takes CUPTI"), std::string::npos) << said;
  EXPECT_EQ(std::count(said.begin(), said.end(), '\n'), 1) << "one line: " << said;
  ASSERT_GT(fake_.calls.size(), calls);
  EXPECT_EQ(fake_.calls[calls], "flush " + std::to_string(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED))
      << "ringprof's buffers come back before anything is turned off";
  EXPECT_TRUE(fake_.enabled.empty());
  EXPECT_EQ(fake_.calls.back(), "register_timestamp");
  EXPECT_EQ(fake_.timestamp, nullptr) << "the other client gets CUPTI's own clock";
  EXPECT_FALSE(gpu_hand_over("torch.profiler")) << "already handed over";

  // The other client's callbacks; ringprof's drainer rounds and a level change
  // meanwhile do not touch CUPTI.
  fake_.requested = nullptr;
  calls = fake_.calls.size();
  set_mode(Level::Detailed);
  ringprof::flush();
  ringprof::flush();
  EXPECT_EQ(fake_.calls.size(), calls) << fake_.calls.back();
  EXPECT_TRUE(fake_.enabled.empty());

  testing::internal::CaptureStderr();
  EXPECT_TRUE(gpu_take_back("torch.profiler"));
  EXPECT_NE(testing::internal::GetCapturedStderr().find("resumed after torch.profiler"), std::string::npos);
  ASSERT_GE(fake_.calls.size(), calls + 2);
  EXPECT_EQ(fake_.calls[calls], "register_timestamp");
  EXPECT_EQ(fake_.calls[calls + 1], "register_callbacks");
  EXPECT_EQ(fake_.timestamp, ours_timestamp);
  EXPECT_EQ(fake_.requested, ours_requested);
  EXPECT_EQ(fake_.enabled, kAllKinds) << "the level set while handed over (detailed) applies";
  EXPECT_FALSE(gpu_take_back("torch.profiler")) << "nothing to take back";

  // Recording goes on through ringprof's callbacks: a kernel completed now is written.
  size_t size = 0;
  uint8_t* buffer = request(&size);
  ASSERT_NE(buffer, nullptr);
  RecordWriter w(buffer, size);
  kernel(w, "after_take_back", 100, 200, 1);
  complete(buffer, size, w.used());
  ringprof::stop();
  EXPECT_TRUE(fake_.enabled.empty());
  ASSERT_EQ(sink_->records.size(), 1u);
  EXPECT_EQ(sink_->names[0], "after_take_back");
}

TEST_F(CuptiSourceTest, HandOverWithoutGpuTracingDoesNothing) {
  EXPECT_FALSE(gpu_hand_over("torch.profiler")) << "not recording";
  EXPECT_FALSE(gpu_take_back("torch.profiler"));
  EXPECT_TRUE(fake_.calls.empty());
}

// At exit CUPTI gets one last forced flush and is never called again: the
// drainer's last round and stop() convert and write what it handed over.
TEST_F(CuptiSourceTest, ClosedAtExitCuptiIsNotCalledAgain) {
  ASSERT_TRUE(start());
  ringprof::flush();
  size_t size = 0;
  uint8_t* buffer = request(&size);
  ASSERT_NE(buffer, nullptr);
  RecordWriter w(buffer, size);
  kernel(w, "last_kernel", 100, 200, 1);
  complete(buffer, size, w.used());  // as CUPTI's forced flush would hand it over
  const size_t calls = fake_.calls.size();
  cupti::close_at_exit();
  ASSERT_EQ(fake_.calls.size(), calls + 1);
  EXPECT_EQ(fake_.calls.back(), "flush " + std::to_string(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
  set_mode(Level::Detailed);
  ringprof::flush();
  EXPECT_FALSE(gpu_hand_over("torch.profiler"));
  ringprof::stop();
  EXPECT_EQ(fake_.calls.size(), calls + 1) << "called after the exit flush: " << fake_.calls.back();
  ASSERT_EQ(sink_->records.size(), 1u) << "what CUPTI handed over is written";
  EXPECT_EQ(sink_->names[0], "last_kernel");
}

TEST_F(CuptiSourceTest, RecordsReachTheBatchThroughTheCallbacks) {
  ASSERT_TRUE(start());
  size_t size = 0;
  uint8_t* buffer = request(&size);
  ASSERT_NE(buffer, nullptr);
  EXPECT_EQ(size, 64u << 10);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer) % 8, 0u) << "CUPTI needs 8-byte aligned buffers";
  const uint64_t t0 = internal::monotonic_ns();
  RecordWriter w(buffer, size);

  auto& dev = w.add<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  dev.id = 0;
  dev.name = "NVIDIA A100-SXM4-40GB";
  dev.computeCapabilityMajor = 8;
  dev.numMultiprocessors = 108;
  dev.maxWarpsPerMultiprocessor = 64;
  dev.maxBlocksPerMultiprocessor = 32;
  dev.maxRegistersPerMultiprocessor = 65536;
  dev.maxSharedMemoryPerMultiprocessor = 167936;
  dev.numThreadsPerWarp = 32;
  dev.maxThreadsPerBlock = 1024;

  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 211, t0 + 1000, t0 + 1500, 7, 4321);          // cudaLaunchKernel
  api_call(w, CUPTI_ACTIVITY_KIND_DRIVER, 307, t0 + 1100, t0 + 1400, 7, 4321);           // cuLaunchKernel
  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 17, t0 + 1600, t0 + 1610, 8, 4321);           // cudaGetDevice: noisy
  kernel(w, "_Z6matmulPfS_S_i", t0 + 2000, t0 + 5000, 7);
  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 20, t0 + 6000, t0 + 9000, 9, 4321);           // cudaMemcpy
  auto& cp = w.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  cp.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  cp.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  cp.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  cp.bytes = 1 << 20;
  cp.start = t0 + 6500;
  cp.end = t0 + 8500;
  cp.streamId = 7;
  cp.correlationId = 9;
  auto& ms = w.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  ms.value = 0xab;
  ms.bytes = 4096;
  ms.start = t0 + 9500;
  ms.end = t0 + 9600;
  ms.streamId = 7;
  ms.correlationId = 10;
  auto& sync = w.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  sync.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
  sync.start = t0 + 9700;
  sync.end = t0 + 9900;
  sync.streamId = 7;
  sync.correlationId = 11;
  auto& mem = w.add<CUpti_ActivityMemory4>(CUPTI_ACTIVITY_KIND_MEMORY2);
  mem.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  mem.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  mem.bytes = 1 << 24;
  mem.address = 0x7f0000000000;
  mem.timestamp = t0 + 500;
  mem.correlationId = 6;
  auto& ovh = w.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  ovh.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  ovh.start = t0 + 100;
  ovh.end = t0 + 200;
  auto& ext = w.add<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  ext.externalKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
  ext.externalId = 424242;
  ext.correlationId = 7;
  // An NVTX range (start, data, end) and a mark.
  auto& m1 = w.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m1.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  m1.id = 3;
  m1.timestamp = t0 + 900;
  m1.name = "forward";
  m1.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m1.objectId.pt.threadId = 4321;
  auto& md = w.add<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  md.id = 3;
  md.flags = CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB;
  md.color = 0xff00ff00;
  auto& m2 = w.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m2.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  m2.id = 3;
  m2.timestamp = t0 + 9950;
  auto& m3 = w.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m3.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  m3.id = 4;
  m3.timestamp = t0 + 9960;
  m3.name = "checkpoint";
  m3.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m3.objectId.pt.threadId = 4321;

  fake_.dropped_per_buffer = 5;
  complete(buffer, size, w.used());
  ringprof::flush();
  ringprof::stop();

  std::lock_guard<std::mutex> lock(sink_->mutex);
  // The forced flush reached CUPTI.
  EXPECT_NE(std::find(fake_.calls.begin(), fake_.calls.end(), "flush 1"), fake_.calls.end());
  ASSERT_EQ(sink_->devices.size(), 1u);
  EXPECT_EQ(sink_->devices[0].name, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(sink_->devices[0].sm_count, 108u);
  EXPECT_EQ(sink_->devices[0].smem_per_sm, 167936u);

  std::map<std::string, std::vector<GpuActivity>> by;  // "kind name"
  for (size_t i = 0; i < sink_->records.size(); ++i)
    by[std::string(gpu_kind_name(sink_->records[i].kind)) + " " + sink_->names[i]].push_back(sink_->records[i]);
  std::vector<std::string> keys;
  for (auto& [k, v] : by) keys.push_back(k + " x" + std::to_string(v.size()));
  EXPECT_EQ(keys, (std::vector<std::string>{
                      "driver_api cuLaunchKernel x1", "external_correlation  x1", "kernel _Z6matmulPfS_S_i x1",
                      "marker checkpoint x1", "marker forward x1", "memcpy  x1", "memory  x1", "memset  x1",
                      "overhead CUPTI buffer flush x1", "runtime_api cudaLaunchKernel x1",
                      "runtime_api cudaMemcpy x1", "sync  x1"}));

  const GpuActivity& k = by["kernel _Z6matmulPfS_S_i"][0];
  EXPECT_EQ(k.start_ns, t0 + 2000);
  EXPECT_EQ(k.end_ns, t0 + 5000);
  EXPECT_EQ(k.correlation, 7u);
  EXPECT_EQ(k.stream, 7u);
  EXPECT_EQ(k.context, 1u);
  EXPECT_EQ(k.grid[0], 1024);
  EXPECT_EQ(k.block[0], 256);
  EXPECT_EQ(k.registers, 32u);
  EXPECT_EQ(k.static_smem, 4096u);
  EXPECT_EQ(k.dynamic_smem, 1024u);
  EXPECT_EQ(k.local_mem, 16u);
  const GpuActivity& launch = by["runtime_api cudaLaunchKernel"][0];
  EXPECT_EQ(launch.tid, 4321u);
  EXPECT_EQ(launch.correlation, 7u);
  EXPECT_EQ(launch.start_ns, t0 + 1000);
  const GpuActivity& copy = by["memcpy "][0];
  EXPECT_EQ(static_cast<GpuCopyKind>(copy.sub_kind), GpuCopyKind::HtoD);
  EXPECT_EQ(copy.bytes, 1u << 20);
  EXPECT_EQ(copy.src_kind, CUPTI_ACTIVITY_MEMORY_KIND_PINNED);
  EXPECT_EQ(copy.dst_kind, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE);
  EXPECT_EQ(by["memset "][0].value, 0xabu);
  EXPECT_EQ(by["sync "][0].sub_kind, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE);
  EXPECT_EQ(by["memory "][0].sub_kind, 1);
  EXPECT_EQ(by["memory "][0].value, 0x7f0000000000u);
  EXPECT_EQ(by["external_correlation "][0].value, 424242u);
  const GpuActivity& range = by["marker forward"][0];
  EXPECT_EQ(range.sub_kind, 1);
  EXPECT_EQ(range.start_ns, t0 + 900);
  EXPECT_EQ(range.end_ns, t0 + 9950);
  EXPECT_EQ(range.tid, 4321u);
  EXPECT_EQ(range.value, 0xff00ff00u);
  EXPECT_EQ(by["marker checkpoint"][0].sub_kind, 0);

  EXPECT_EQ(sink_->stats.dropped_records, 5u);
  EXPECT_EQ(sink_->stats.clock_violations, 0u);
  EXPECT_EQ(sink_->stats.records, sink_->records.size());
}

TEST_F(CuptiSourceTest, PoolIsBoundedAndRefusalsAreCounted) {
  ASSERT_TRUE(start(/*buffers=*/2));
  size_t s1 = 0, s2 = 0, s3 = 0;
  uint8_t* b1 = request(&s1);
  uint8_t* b2 = request(&s2);
  uint8_t* b3 = request(&s3);
  EXPECT_NE(b1, nullptr);
  EXPECT_NE(b2, nullptr);
  EXPECT_EQ(b3, nullptr) << "a third buffer would exceed RINGPROF_CUPTI_BUFFERS=2";
  EXPECT_EQ(s3, 0u);
  complete(b1, s1, 0);  // an empty buffer goes straight back to the pool
  size_t s4 = 0;
  uint8_t* b4 = request(&s4);
  EXPECT_EQ(b4, b1) << "buffers are recycled, not allocated again";
  complete(b2, s2, 0);
  complete(b4, s4, 0);
  EXPECT_EQ(cupti::refused_buffers(), 1u);
  ringprof::stop();
}

TEST_F(CuptiSourceTest, KernelBeforeItsLaunchIsAClockViolation) {
  ASSERT_TRUE(start());
  size_t size = 0;
  uint8_t* buffer = request(&size);
  RecordWriter w(buffer, size);
  const uint64_t t0 = internal::monotonic_ns();
  // Correlation 1: fine. 2: the kernel starts 1 us before its launch call.
  // 3: the kernel comes first in the buffer and is still checked when its
  // call arrives.
  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 211, t0 + 1000, t0 + 1200, 1, 10);
  kernel(w, "k1", t0 + 1100, t0 + 2000, 1);
  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 211, t0 + 3000, t0 + 3200, 2, 10);
  kernel(w, "k2", t0 + 2000, t0 + 4000, 2);
  kernel(w, "k3", t0 + 4500, t0 + 5000, 3);
  api_call(w, CUPTI_ACTIVITY_KIND_RUNTIME, 211, t0 + 4600, t0 + 4700, 3, 10);
  complete(buffer, size, w.used());
  ringprof::stop();
  std::lock_guard<std::mutex> lock(sink_->mutex);
  EXPECT_EQ(sink_->stats.clock_violations, 2u);
}

TEST_F(CuptiSourceTest, CuptiErrorsSayWhatToDo) {
  fake_.enable_result = CUPTI_ERROR_INSUFFICIENT_PRIVILEGES;
  testing::internal::CaptureStderr();
  ASSERT_TRUE(start()) << "CPU recording starts anyway";
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("GPU tracing off"), std::string::npos) << err;
  EXPECT_NE(err.find("NVreg_RestrictProfilingToAdminUsers=0"), std::string::npos) << err;
  ringprof::stop();
  EXPECT_NE(cupti::explain(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, "x").find("another CUPTI client"),
            std::string::npos);
  EXPECT_NE(cupti::explain(CUPTI_ERROR_NOT_COMPATIBLE, "x").find("version mismatch"), std::string::npos);
  EXPECT_NE(cupti::explain(CUPTI_ERROR_UNKNOWN, "x").find("no NVIDIA device"), std::string::npos);
}

TEST(CuptiNames, VersionSuffixesAndNoisyCalls) {
  EXPECT_EQ(cupti::api_base_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(cupti::api_base_name("cuLaunchKernel"), "cuLaunchKernel");
  EXPECT_EQ(cupti::api_base_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
  EXPECT_TRUE(cupti::is_noisy_api("cudaStreamQuery_ptsz"));
  EXPECT_TRUE(cupti::is_noisy_api("cuCtxGetCurrent"));
  EXPECT_TRUE(cupti::is_noisy_api("cuDeviceGet"));
  EXPECT_FALSE(cupti::is_noisy_api("cudaLaunchKernel"));
  EXPECT_FALSE(cupti::is_noisy_api("cudaStreamSynchronize"));
}

// This machine class (CI) has no GPU and no driver: a CUPTI build must start,
// record and stop normally there. A program that never touches CUDA (the test
// helper) hears nothing of the missing driver; one that asked for GPU tracing
// with RINGPROF_GPU=1 gets exactly one warning.
class CuptiWithoutGpu : public testing::TestWithParam<bool> {};

TEST_P(CuptiWithoutGpu, RecordsCpuEventsAndWarnsOnlyWhenAsked) {
  if (void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL)) {
    dlclose(cuda);
    GTEST_SKIP() << "this machine has an NVIDIA driver";
  }
  const bool requested = GetParam();
  test::TempDir dir;
  const std::string cmd = std::string(requested ? "RINGPROF_GPU=1 " : "") +
                          "RINGPROF_DIR=" + test::shell_quote(dir.path()) + " " +
                          test::shell_quote(RINGPROF_TEST_HELPER) + " record 2 1000 stop";
  const test::CommandResult r = test::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("recorded 2000 written 2000 dropped_ring 0 dropped_io 0"), std::string::npos) << r.out;
  size_t warnings = 0;
  for (size_t p = r.err.find("ringprof: warning"); p != std::string::npos; p = r.err.find("ringprof: warning", p + 1))
    ++warnings;
  EXPECT_EQ(warnings, requested ? 1u : 0u) << r.err;
  EXPECT_EQ(r.err.find("GPU tracing off") != std::string::npos, requested) << r.err;
  const test::FileTally t = test::tally_dir(dir.path());
  EXPECT_EQ(t.by_kind.at(static_cast<int>(EventKind::Counter)), 2000u);
  EXPECT_TRUE(t.problems.empty());
}

INSTANTIATE_TEST_SUITE_P(Cupti, CuptiWithoutGpu, testing::Bool(),
                         [](const testing::TestParamInfo<bool>& i) { return i.param ? "Requested" : "Default"; });

// The record walker used in place of libcupti's knows each kind's size.
TEST(CuptiRecords, WalkerStopsAtTheEndAndOnUnknownKinds) {
  alignas(8) uint8_t buf[512] = {};
  RecordWriter w(buf, sizeof buf);
  w.add<CUpti_ActivityAPI>(CUPTI_ACTIVITY_KIND_RUNTIME);
  w.add<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  CUpti_Activity* r = nullptr;
  ASSERT_EQ(cupti::next_record_by_header(buf, w.used(), &r), CUPTI_SUCCESS);
  EXPECT_EQ(r->kind, CUPTI_ACTIVITY_KIND_RUNTIME);
  ASSERT_EQ(cupti::next_record_by_header(buf, w.used(), &r), CUPTI_SUCCESS);
  EXPECT_EQ(r->kind, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  EXPECT_EQ(cupti::next_record_by_header(buf, w.used(), &r), CUPTI_ERROR_MAX_LIMIT_REACHED);
  w.add<CUpti_Activity>(CUPTI_ACTIVITY_KIND_PCIE);
  r = reinterpret_cast<CUpti_Activity*>(buf + sizeof(CUpti_ActivityAPI));
  EXPECT_EQ(cupti::next_record_by_header(buf, w.used() + 64, &r), CUPTI_ERROR_INVALID_KIND);

  GpuRecords out;
  cupti::Api a;
  a.ActivityGetNextRecord = cupti::next_record_by_header;
  cupti::Converter c(out, a);
  c.convert_buffer(buf, w.used() + 64);
  EXPECT_EQ(out.pending().size(), 2u);  // the API call (named from its cbid) and the correlation
  EXPECT_EQ(out.stats().unknown_records, 1u);
}

}  // namespace
}  // namespace ringprof
