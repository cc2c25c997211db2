// ringprof demo: a small request pipeline.
//
// A dispatcher thread makes requests and hands them to worker threads through
// a queue; each hand-off is a flow arrow in the trace. Workers handle requests
// in nested zones (parse → compute → serialize), counters track the queue
// depth and bytes produced, every round is a step, and every few rounds a
// checkpoint thread comes, works and goes.
//
//   ringprof_demo [rounds]        (RINGPROF_* variables configure recording)
#include <ringprof/ringprof.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Request {
  uint64_t id;
  int size;
};

class Queue {
 public:
  void push(Request r) {
    {
      std::lock_guard<std::mutex> lock(m_);
      q_.push_back(r);
      RINGPROF_COUNTER("queue_depth", q_.size());
    }
    cv_.notify_one();
  }
  bool pop(Request* r) {
    std::unique_lock<std::mutex> lock(m_);
    cv_.wait(lock, [&] { return closed_ || !q_.empty(); });
    if (q_.empty()) return false;
    *r = q_.front();
    q_.pop_front();
    RINGPROF_COUNTER("queue_depth", q_.size());
    return true;
  }
  void close() {
    {
      std::lock_guard<std::mutex> lock(m_);
      closed_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<Request> q_;
  bool closed_ = false;
};

// Real work, so the zones have honest durations.
uint64_t spin(int iterations) {
  uint64_t x = 1469598103934665603ull;
  for (int i = 0; i < iterations; ++i) x = (x ^ static_cast<uint64_t>(i)) * 1099511628211ull;
  return x;
}

std::atomic<uint64_t> g_sink{0};

void parse(const Request& r) {
  RINGPROF_ZONE("parse");
  g_sink += spin(2000 + r.size * 10);
}

void compute(const Request& r) {
  RINGPROF_ZONE("compute");
  for (int layer = 0; layer < 3; ++layer) {
    RINGPROF_ZONE("layer");
    g_sink += spin(4000 + r.size * 20);
  }
}

void serialize(const Request& r) {
  RINGPROF_ZONE("serialize");
  g_sink += spin(1500);
  RINGPROF_COUNTER("bytes_out", r.size * 64);
}

void worker(Queue& q, int n) {
  ringprof::set_thread_name("worker-" + std::to_string(n));
  Request r;
  while (q.pop(&r)) {
    RINGPROF_ZONE("handle_request");
    ringprof::flow_end(r.id);
    parse(r);
    compute(r);
    serialize(r);
  }
}

void checkpoint(int round) {
  ringprof::set_thread_name("checkpoint");
  RINGPROF_ZONE("checkpoint");
  // A name built at run time: copied into the ring, interned by the drainer.
  ringprof::Zone z("checkpoint/round-" + std::to_string(round));
  g_sink += spin(30000);
  RINGPROF_INSTANT("checkpoint_written");
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 200;
  // Recording as the environment says (RINGPROF_DIR, RINGPROF_MAX_BYTES, ...).
  // No stop() at the end: returning from main flushes everything.
  if (!ringprof::start()) std::fprintf(stderr, "demo: recording is off; running anyway\n");
  ringprof::set_thread_name("dispatcher");

  Queue q;
  std::vector<std::thread> workers;
  for (int i = 0; i < 3; ++i) workers.emplace_back(worker, std::ref(q), i);

  uint64_t next_id = 1;
  for (int round = 0; round < rounds; ++round) {
    ringprof::step();
    RINGPROF_ZONE("dispatch_round");
    for (int i = 0; i < 8; ++i) {
      Request r{next_id++, (round * 7 + i * 13) % 50};
      ringprof::flow_begin(r.id, "request");
      q.push(r);
    }
    if (round % 50 == 49) {
      std::thread(checkpoint, round).join();  // a thread that comes and goes
    }
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  q.close();
  for (auto& t : workers) t.join();
  std::printf("demo: %d rounds, %llu requests handled (checksum %llu)\n", rounds,
              static_cast<unsigned long long>(next_id - 1), static_cast<unsigned long long>(g_sink.load() & 0xffff));
  return 0;
}
