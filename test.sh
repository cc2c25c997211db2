#!/bin/sh
# Quick start, step two: the whole test suite. Builds and runs the GoogleTest
# suites three times (release with -Werror, ASan+UBSan, TSan), with the report
# page's headless-Chromium test in the release one, fuzzes the segment decoder
# for a bounded time, builds the benchmarks and holds them to bench/budgets.txt
# (bench/gate.sh), and checks that an installed ringprof works from CMake and
# from pkg-config. First of all, the C++ lines changed since the style was
# written down must follow .clang-format (format-check.sh), and later no build
# may print a compiler or linker warning.
#   RINGPROF_FUZZ_SECONDS (default 60)   RINGPROF_TEST_CONFIGS (default "release asan tsan")
set -eu
cd "$(dirname "$0")"
./install-deps.sh
JOBS="$(nproc)"
CONFIGS="${RINGPROF_TEST_CONFIGS:-release asan tsan}"
FUZZ_SECONDS="${RINGPROF_FUZZ_SECONDS:-60}"
STARTED="$(date +%s)"

# Each configuration, the fuzzer and the install check run whatever failed
# before them, so one run reports every failing configuration.
FAILED=""
TOTAL=0
FAILED_TESTS=0
fail() { FAILED="$FAILED $1"; echo "test.sh: $2" >&2; }

# The report page's browser test (tests/browser) is registered by the release
# configuration only where its npm packages are installed: install them first
# (once; again when package-lock.json changes).
tests/browser/setup.sh || fail browser "npm ci in tests/browser failed: the report page's browser test cannot run"

echo "=== format: lines changed since .clang-format was added ==="
./format-check.sh || fail format "changed lines do not follow .clang-format (./format-check.sh --fix)"

run_config() {
  name="$1"; shift
  echo "=== $name ==="
  dir="build/test-$name"
  rm -f "$dir/build.log"
  if ! cmake -S . -B "$dir" -DRINGPROF_WERROR=ON "$@" >/dev/null || ! cmake --build "$dir" -j"$JOBS" >"$dir/build.log" 2>&1; then
    tail -n 60 "$dir/build.log" 2>/dev/null || true
    fail "$name" "the $name configuration did not build"
    return 0
  fi
  # -Werror makes a compiler warning a failed build; a linker's or a
  # generator's warning (lto-wrapper notes, say) must not pass either.
  if grep -E "warning:|note:" "$dir/build.log"; then
    fail "$name" "the $name build printed warnings (above; the whole log: $dir/build.log)"
  fi
  if (cd "$dir" && ctest --output-on-failure -j"$JOBS" --timeout 600 >ctest.log 2>&1); then
    grep -E "tests passed|did not run|Skipped" "$dir/ctest.log" || true
  else
    cat "$dir/ctest.log"
    fail "$name" "tests failed in the $name configuration"
  fi
  line="$(grep -E "tests passed, [0-9]+ tests? failed out of [0-9]+" "$dir/ctest.log" | tail -n 1)"
  total="$(echo "$line" | sed -n 's/.* out of \([0-9][0-9]*\).*/\1/p')"
  failed="$(echo "$line" | sed -n 's/.*tests passed, \([0-9][0-9]*\) tests\{0,1\} failed.*/\1/p')"
  TOTAL=$((TOTAL + ${total:-0} - ${failed:-0}))
  FAILED_TESTS=$((FAILED_TESTS + ${failed:-0}))
}

for c in $CONFIGS; do
  case "$c" in
    release) run_config release -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGPROF_BUILD_BENCH=ON -DRINGPROF_REQUIRE_BROWSER_TEST=ON ;;
    asan) run_config asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
            -DRINGPROF_SANITIZE=address,undefined -DRINGPROF_BUILD_BENCH=OFF ;;
    # die_after_fork=0: the fork tests start threads in a child of a
    # multi-threaded parent, which TSan otherwise refuses outright.
    tsan) export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0"
          run_config tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
            -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DRINGPROF_SANITIZE=thread -DRINGPROF_BUILD_BENCH=OFF
          unset TSAN_OPTIONS ;;
    *) echo "test.sh: unknown configuration $c (release, asan, tsan)" >&2; exit 2 ;;
  esac
done

run_fuzz() {
  echo "=== fuzz: segment decoder, ${FUZZ_SECONDS}s ==="
  cmake -S . -B build/test-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DRINGPROF_BUILD_FUZZ=ON -DRINGPROF_BUILD_BENCH=OFF -DRINGPROF_BUILD_EXAMPLES=ON >/dev/null &&
    cmake --build build/test-fuzz -j"$JOBS" --target segment_decoder_fuzz ringprof_demo || return 1
  rm -rf build/test-fuzz/corpus build/test-fuzz/seed && mkdir -p build/test-fuzz/corpus
  RINGPROF_DIR=build/test-fuzz/seed RINGPROF_FILE_BYTES=64K ./build/test-fuzz/examples/ringprof_demo 20 >/dev/null || return 1
  cp build/test-fuzz/seed/*.rpf build/test-fuzz/corpus/
  cp tests/data/*.rpf build/test-fuzz/corpus/   # golden files: every event kind, GPU records
  # A crash, leak or sanitizer report makes the fuzzer exit non-zero.
  if ! ./build/test-fuzz/tests/segment_decoder_fuzz -max_total_time="$FUZZ_SECONDS" -max_len=65536 \
       -print_final_stats=1 build/test-fuzz/corpus >build/test-fuzz/fuzz.log 2>&1; then
    tail -n 40 build/test-fuzz/fuzz.log
    return 1
  fi
  grep -E "stat::number_of_executed_units|Done" build/test-fuzz/fuzz.log || true
}
run_fuzz || fail fuzz "the segment decoder fuzzer failed (build, seed or a crash it found)"

if [ -d build/test-release ]; then
  echo "=== benchmark gate: bench/budgets.txt ==="
  bench/gate.sh build/test-release || fail gate "a benchmark broke its budget (bench/budgets.txt)"
  echo "=== install check: find_package and pkg-config ==="
  ./tests/install_check.sh build/test-release || fail install "the install check failed"
else
  echo "test.sh: benchmark gate and install check skipped: the release configuration was not built"
fi

if [ -n "$FAILED" ]; then
  echo "test.sh: FAILED:$FAILED (after $(( ($(date +%s) - STARTED) / 60 )) min)"
  echo "ringprof: $TOTAL passed, $((FAILED_TESTS > 0 ? FAILED_TESTS : 1)) failed"
  exit 1
fi
echo "test.sh: all configurations passed ($CONFIGS, fuzzing, install check) in $(( ($(date +%s) - STARTED) / 60 )) min"
echo "ringprof: $TOTAL passed, 0 failed"
