/* ringprof from C: the same recording path through ringprof_c.h. */
#include <ringprof/ringprof_c.h>
#include <stdio.h>
#include <string.h>

static unsigned long long spin(int n) {
  unsigned long long x = 1;
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

int main(void) {
  if (!ringprof_start_from_env()) fprintf(stderr, "c_demo: recording is off\n");
  ringprof_set_thread_name("c-main");
  unsigned long long sum = 0;
  for (int i = 0; i < 100; ++i) {
    RINGPROF_C_LOCATION(loop_loc, "c_loop");
    const int loop_zone = ringprof_zone_begin(&loop_loc); /* 0: not recorded, so no end */
    ringprof_step();
    const char* name = (i % 2) ? "odd" : "even";
    const int inner_zone = ringprof_zone_begin_name(name, strlen(name));
    sum += spin(10000);
    if (inner_zone) ringprof_zone_end();
    ringprof_counter("c_sum_low", (double)(sum & 0xff));
    if (loop_zone) ringprof_zone_end();
  }
  printf("c_demo: done (%llu)\n", sum & 0xff);
  return 0; /* exit() flushes */
}
