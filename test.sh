#!/bin/sh
# Quick start, step two: the whole test suite. Builds and runs the GoogleTest
# suites three times (release with -Werror, ASan+UBSan, TSan), fuzzes the
# segment decoder for a bounded time, builds the benchmarks, and checks that
# an installed ringprof works from CMake and from pkg-config.
#   RINGPROF_FUZZ_SECONDS (default 60)   RINGPROF_TEST_CONFIGS (default "release asan tsan")
set -eu
cd "$(dirname "$0")"
./install-deps.sh
JOBS="$(nproc)"
CONFIGS="${RINGPROF_TEST_CONFIGS:-release asan tsan}"
FUZZ_SECONDS="${RINGPROF_FUZZ_SECONDS:-60}"

run_config() {
  name="$1"; shift
  echo "=== $name ==="
  cmake -S . -B "build/test-$name" -DRINGPROF_WERROR=ON "$@" >/dev/null
  cmake --build "build/test-$name" -j"$JOBS"
  if ! (cd "build/test-$name" && ctest --output-on-failure -j"$JOBS" --timeout 600 >ctest.log 2>&1); then
    cat "build/test-$name/ctest.log"
    echo "test.sh: tests failed in the $name configuration" >&2
    exit 1
  fi
  grep -E "tests passed|did not run|Skipped" "build/test-$name/ctest.log" || true
  n="$(sed -n 's/.*tests passed, 0 tests failed out of \([0-9][0-9]*\).*/\1/p' "build/test-$name/ctest.log")"
  TOTAL=$((TOTAL + ${n:-0}))
}
TOTAL=0

for c in $CONFIGS; do
  case "$c" in
    release) run_config release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGPROF_BUILD_BENCH=ON ;;
    asan) run_config asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
            -DRINGPROF_SANITIZE=address,undefined -DRINGPROF_BUILD_BENCH=OFF ;;
    # die_after_fork=0: the fork tests start threads in a child of a
    # multi-threaded parent, which TSan otherwise refuses outright.
    tsan) export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0"
          run_config tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRINGPROF_SANITIZE=thread -DRINGPROF_BUILD_BENCH=OFF
          unset TSAN_OPTIONS ;;
    *) echo "test.sh: unknown configuration $c" >&2; exit 1 ;;
  esac
done

echo "=== fuzz: segment decoder, ${FUZZ_SECONDS}s ==="
cmake -S . -B build/test-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DRINGPROF_BUILD_FUZZ=ON -DRINGPROF_BUILD_BENCH=OFF -DRINGPROF_BUILD_EXAMPLES=ON >/dev/null
cmake --build build/test-fuzz -j"$JOBS" --target segment_decoder_fuzz ringprof_demo
rm -rf build/test-fuzz/corpus build/test-fuzz/seed && mkdir -p build/test-fuzz/corpus
RINGPROF_DIR=build/test-fuzz/seed RINGPROF_FILE_BYTES=64K ./build/test-fuzz/examples/ringprof_demo 20 >/dev/null
cp build/test-fuzz/seed/*.rpf build/test-fuzz/corpus/
cp tests/data/*.rpf build/test-fuzz/corpus/   # golden files: every event kind, GPU records
# A crash, leak or sanitizer report makes the fuzzer exit non-zero, and set -e stops here.
if ! ./build/test-fuzz/tests/segment_decoder_fuzz -max_total_time="$FUZZ_SECONDS" -max_len=65536 \
     -print_final_stats=1 build/test-fuzz/corpus >build/test-fuzz/fuzz.log 2>&1; then
  tail -n 40 build/test-fuzz/fuzz.log
  echo "test.sh: the segment decoder fuzzer found a crash" >&2
  exit 1
fi
grep -E "stat::number_of_executed_units|Done" build/test-fuzz/fuzz.log || true

echo "=== install check: find_package and pkg-config ==="
./tests/install_check.sh build/test-release
echo "test.sh: all configurations passed ($CONFIGS, fuzzing, install check)"
echo "ringprof: $TOTAL passed, 0 failed"
