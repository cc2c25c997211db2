/* Two call sites that allocate known bytes, for the heap profile's accuracy
 * test (tests/end_to_end/heap_profile_test.cpp), run with
 * libringprof_malloc.so preloaded. site_a asks for 70% of the bytes and
 * site_b for 30%, in blocks of mixed sizes (16 B to 128 KiB, log-uniform);
 * one block in four is kept to the end, the rest freed at once. Prints what
 * each site allocated and what it still holds, in bytes:
 *   a_alloc b_alloc a_held b_held
 * Built without frame pointers: the stacks come from the unwind tables. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define TOTAL (1024ull << 20)
#define MAX_KEPT (1u << 20)

static void* kept[MAX_KEPT];
static unsigned n_kept;
static uint64_t rng = 0x9E3779B97F4A7C15ull;

static uint64_t next_random(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* 16 << (0..12), times 1 to 2: sizes from 16 B to 128 KiB (below the mmap threshold). */
static size_t mixed_size(void) {
  const unsigned shift = (unsigned)(next_random() % 13);
  const size_t base = (size_t)16 << shift;
  return base + (size_t)(next_random() % base);
}

static void keep_or_free(void* p, size_t n, uint64_t* held, char mark) {
  if (p == NULL) abort();
  ((volatile char*)p)[0] = mark; /* touched, so the allocation is not elided */
  if (n_kept < MAX_KEPT && next_random() % 4 == 0) {
    kept[n_kept++] = p;
    *held += n;
  } else {
    free(p);
  }
}

/* Different bodies (the mark), so no compiler folds the two into one. */
__attribute__((noinline)) void site_a(size_t n, uint64_t* held) { keep_or_free(malloc(n), n, held, 'a'); }
__attribute__((noinline)) void site_b(size_t n, uint64_t* held) { keep_or_free(malloc(n), n, held, 'b'); }

int main(void) {
  uint64_t a = 0, b = 0, a_held = 0, b_held = 0;
  /* Interleaved so both sites see the same moments: whichever is behind its
   * share of the bytes so far allocates next. */
  while (a + b < TOTAL) {
    const size_t n = mixed_size();
    if (a * 3 <= b * 7) {
      site_a(n, &a_held);
      a += n;
    } else {
      site_b(n, &b_held);
      b += n;
    }
  }
  printf("%llu %llu %llu %llu\n", (unsigned long long)a, (unsigned long long)b, (unsigned long long)a_held,
         (unsigned long long)b_held);
  return 0; /* the kept blocks are still held at exit */
}
