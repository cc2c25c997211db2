// A program with known heap traffic, run by memory_preload_test with
// libringprof_malloc.so preloaded:
//   always_on: kBlocks mallocs and frees (must record nothing)
//   detailed:  inside zone "alloc_burst", kBlocks mallocs of 16 + 8*i bytes,
//              each realloc'ed to twice that, then their frees (must all be
//              recorded, in that zone)
//   always_on: kBlocks more (nothing)
// After recording stops it prints "address size" for each detailed block
// (after its realloc), so
// the test can check every one against the files.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ringprof/ringprof.h"

namespace {

constexpr int kBlocks = 1000;
void* volatile g_blocks[kBlocks];  // volatile: the compiler may not elide the calls
size_t g_sizes[kBlocks];

void churn(bool keep) {
  for (int i = 0; i < kBlocks; ++i) {
    g_sizes[i] = 16 + 8 * static_cast<size_t>(i);
    void* p = std::malloc(g_sizes[i]);
    std::memset(p, 1, g_sizes[i]);
    g_blocks[i] = p;
  }
  // Each block grows to twice its size: a Free of the old block and an Alloc
  // of the new one, whether realloc moves it or not.
  for (int i = 0; i < kBlocks; ++i) {
    g_sizes[i] *= 2;
    void* p = std::realloc(g_blocks[i], g_sizes[i]);
    if (p == nullptr) std::abort();
    g_blocks[i] = p;
  }
  for (int i = 0; i < kBlocks; ++i) {
    void* p = g_blocks[i];
    std::free(p);
    if (!keep) g_blocks[i] = nullptr;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIR\n", argv[0]);
    return 2;
  }
  ringprof::Config c = ringprof::config_from_env();
  c.dir = argv[1];
  if (!ringprof::start(c)) return 1;
  ringprof::set_mode(ringprof::Level::AlwaysOn);
  churn(false);
  ringprof::set_mode(ringprof::Level::Detailed);
  {
    RINGPROF_ZONE("alloc_burst");
    churn(true);
  }
  ringprof::set_mode(ringprof::Level::AlwaysOn);
  void* const* kept = const_cast<void* const*>(g_blocks);
  void* detailed_blocks[kBlocks];
  for (int i = 0; i < kBlocks; ++i) detailed_blocks[i] = kept[i];
  churn(false);
  ringprof::stop();
  for (int i = 0; i < kBlocks; ++i)
    std::printf("%llu %zu\n", static_cast<unsigned long long>(reinterpret_cast<uintptr_t>(detailed_blocks[i])),
                g_sizes[i]);
  return 0;
}
