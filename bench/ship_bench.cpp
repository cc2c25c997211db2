// `ringprof ship` into a local ClickHouse server: how fast, and how large.
//
// A real recording first: one thread records STEPS steps, each an "outer"
// zone around 8 "inner" zones (every other one with an argument) and a
// counter, into a temporary directory with the default settings (the CPU
// sampler off, so that the figures are per event of known kinds). Then a
// clickhouse-server (Debian's, /usr/sbin/clickhouse-server) is started on
// loopback in a temporary directory, and each repetition ships the whole
// recording into a fresh database.
//
// Figures: events shipped per second of the shipping process's CPU (reading,
// decoding, pairing, RowBinary, HTTP), the same counting the server's CPU
// during the ship too (its inserts and the rollup's materialized view), and
// the bytes ClickHouse keeps per event (active parts, after the inserts; its
// background merges shrink them later) against the .rpf files' bytes per event.
// RINGPROF_BENCH_SHIP_STEPS sets the size (default 100000 steps: 1.9 M events).
#include <benchmark/benchmark.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include "bench_main.h"
#include "fleet/clickhouse_http.h"
#include "ringprof/ringprof.h"
#include "ringprof/tools/ship.h"

namespace {

namespace fs = std::filesystem;
using ringprof::bench::report_figure;

double process_cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

// utime + stime of another process, from /proc/PID/stat.
double other_cpu_s(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::istringstream fields(text.substr(text.rfind(')') + 2));
  std::string f;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stoull(f);
    if (i == 15) stime = std::stoull(f);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

int free_port() {
  static int next = 20000 + getpid() % 20000;
  return next++;
}

struct Server {
  pid_t pid = -1;
  std::string url, root;
  bool start(std::string* error) {
    const char* binary = "/usr/sbin/clickhouse-server";
    if (access(binary, X_OK) != 0) {
      *error = "no clickhouse-server (install-deps.sh installs Debian's)";
      return false;
    }
    root = (fs::temp_directory_path() / ("ringprof-ship-bench-" + std::to_string(getpid()))).string();
    fs::remove_all(root);
    for (const char* d : {"data", "tmp", "log"}) fs::create_directories(root + "/" + d);
    const int http = free_port(), tcp = free_port();
    std::ofstream(root + "/users.xml")
        << "<?xml version=\"1.0\"?><yandex><profiles><default></default></profiles><users><default><password>"
           "</password><networks><ip>127.0.0.1</ip></networks><profile>default</profile><quota>default</quota>"
           "</default></users><quotas><default></default></quotas></yandex>";
    std::ofstream(root + "/config.xml") << "<?xml version=\"1.0\"?><yandex><logger><level>warning</level><log>" << root
                                        << "/log/server.log</log><errorlog>" << root
                                        << "/log/error.log</errorlog><console>0</console></logger><http_port>" << http
                                        << "</http_port><tcp_port>" << tcp
                                        << "</tcp_port><listen_host>127.0.0.1</listen_host><path>" << root
                                        << "/data/</path><tmp_path>" << root << "/tmp/</tmp_path><users_config>" << root
                                        << "/users.xml</users_config><mark_cache_size>268435456</mark_cache_size>"
                                           "<default_profile>default</default_profile></yandex>";
    const std::string config = "--config-file=" + root + "/config.xml";
    pid = fork();
    if (pid == 0) {
      if (chdir(root.c_str()) != 0) _exit(127);
      execl(binary, binary, config.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    url = "http://127.0.0.1:" + std::to_string(http);
    ringprof::internal::ClickHouseHttp client(url);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (std::chrono::steady_clock::now() < deadline) {
      try {
        client.query("SELECT 1");
        return true;
      } catch (const ringprof::internal::ClickHouseError&) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));  // a server's start has no other signal
      }
    }
    *error = "clickhouse-server did not answer within 60 s";
    return false;
  }
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
    if (!root.empty()) fs::remove_all(root);
  }
};

std::string record(uint64_t* bytes) {
  const std::string dir = (fs::temp_directory_path() / ("ringprof-ship-rec-" + std::to_string(getpid()))).string();
  fs::remove_all(dir);
  ringprof::Config c;
  c.dir = dir;
  c.sample_hz = 0;
  c.detailed_sample_hz = 0;
  c.heap_interval = 0;
  c.gpu = false;
  const char* env = std::getenv("RINGPROF_BENCH_SHIP_STEPS");
  const uint64_t steps = env ? std::strtoull(env, nullptr, 10) : 100000;
  ringprof::start(c);
  for (uint64_t s = 0; s < steps; ++s) {
    ringprof::step(s);
    RINGPROF_ZONE("outer");
    for (int k = 0; k < 8; ++k) {
      RINGPROF_ZONE("inner");
      if (k % 2) ringprof::zone_arg("k", "odd");
    }
    RINGPROF_COUNTER("queue", static_cast<double>(s % 64));
    if (s % 1000 == 999) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // the rings drain
  }
  ringprof::stop();
  *bytes = 0;
  for (const auto& e : fs::directory_iterator(dir)) *bytes += e.file_size();
  return dir;
}

void BM_Ship(benchmark::State& state) {
  uint64_t file_bytes = 0;
  const std::string dir = record(&file_bytes);
  Server server;
  std::string error;
  if (!server.start(&error)) {
    state.SkipWithError(error.c_str());
    fs::remove_all(dir);
    return;
  }
  ringprof::internal::ClickHouseHttp client(server.url);
  ringprof::ShipOptions o;
  o.url = server.url;
  o.database = "bench";
  double own = 0, theirs = 0, stored = 0;
  uint64_t shipped = 0;
  for (auto _ : state) {
    state.PauseTiming();
    client.query("DROP DATABASE IF EXISTS bench");
    state.ResumeTiming();
    const double own0 = process_cpu_s(), theirs0 = other_cpu_s(server.pid);
    const ringprof::ShipResult r = ringprof::ship_files({dir}, o);
    own += process_cpu_s() - own0;
    theirs += other_cpu_s(server.pid) - theirs0;
    if (!r.ok) {
      state.SkipWithError(r.error.c_str());
      break;
    }
    shipped += r.events;
    state.PauseTiming();
    stored = std::stod(client.query("SELECT sum(bytes_on_disk) FROM system.parts WHERE database = 'bench' AND active"));
    state.ResumeTiming();
  }
  if (shipped) {
    const double per_rep = static_cast<double>(shipped) / static_cast<double>(state.iterations());
    report_figure("ship: M events per second of the shipping process's CPU", static_cast<double>(shipped) / own / 1e6,
                  "M/s");
    report_figure("ship: M events per CPU second, ship and server together",
                  static_cast<double>(shipped) / (own + theirs) / 1e6, "M/s");
    report_figure("ship: bytes per event in ClickHouse (active parts)", stored / per_rep, "B");
    report_figure("ship: bytes per event in the .rpf files", static_cast<double>(file_bytes) / per_rep, "B");
    state.counters["events"] = per_rep;
  }
  fs::remove_all(dir);
}
BENCHMARK(BM_Ship)->Unit(benchmark::kMillisecond)->Iterations(3)->UseRealTime();

}  // namespace
