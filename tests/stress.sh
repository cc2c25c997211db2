#!/bin/sh
# Runs the end-to-end suites again and again with two busy loops beside them,
# the way a loaded CI machine runs them, and stops at the first failure.
#   tests/stress.sh [RUNS] [BUILD_DIR ...]
# RUNS defaults to 20; the build folders default to those ./test.sh made
# (build/test-release, build/test-asan, build/test-tsan) that exist. Build
# them first (./test.sh, or RINGPROF_TEST_CONFIGS=asan ./test.sh).
set -eu
cd "$(dirname "$0")/.."
RUNS="${1:-20}"
[ $# -gt 0 ] && shift
DIRS="$*"
if [ -z "$DIRS" ]; then
  for d in build/test-release build/test-asan build/test-tsan; do
    [ -d "$d/tests" ] && DIRS="$DIRS $d"
  done
fi
[ -n "$DIRS" ] || { echo "stress.sh: no build folder found; run ./test.sh first" >&2; exit 2; }
SUITES="end_to_end_test ops_end_to_end_test sampler_end_to_end_test crash_flush_test memory_preload_test"

busy_pids=""
stop_busy() { [ -n "$busy_pids" ] && kill $busy_pids 2>/dev/null; busy_pids=""; }
trap stop_busy EXIT INT TERM
for _ in 1 2; do
  sh -c 'while :; do :; done' &
  busy_pids="$busy_pids $!"
done

log="$(mktemp)"
run=1
while [ "$run" -le "$RUNS" ]; do
  for d in $DIRS; do
    case "$d" in *tsan*) export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 die_after_fork=0" ;; esac
    for s in $SUITES; do
      [ -x "$d/tests/$s" ] || continue
      if ! "$d/tests/$s" --gtest_brief=1 >"$log" 2>&1; then
        cat "$log"
        echo "stress.sh: $d/tests/$s failed in run $run of $RUNS (two busy loops beside it)" >&2
        rm -f "$log"
        exit 1
      fi
    done
    unset TSAN_OPTIONS
  done
  echo "stress.sh: run $run of $RUNS passed ($DIRS)"
  run=$((run + 1))
done
rm -f "$log"
echo "stress.sh: $RUNS runs in a row passed with two busy loops beside them"
