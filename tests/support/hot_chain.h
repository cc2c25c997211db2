// The body of a sampling workload's hot function: a dependency chain of one
// multiply and one add per iteration, with a different odd constant K per
// function, so an iteration costs the same in each (CPU shares are then set
// by iteration counts) and the compiler cannot fold two functions into one.
// Shared by sampler_test and the sampling end-to-end workload.
#pragma once

#include <cstdint>

#define RINGPROF_TEST_HOT_CHAIN(K)   \
  uint64_t x = n ^ (K);              \
  for (uint64_t i = 0; i < n; ++i) { \
    x = x * (K) + i;                 \
    asm volatile("" : "+r"(x));      \
  }                                  \
  return x;
