#!/bin/sh
# The benchmark gate: short runs of the zone, encoder, convert and
# sustained-rate benchmarks, each checked against bench/budgets.txt. Prints every figure it
# checks and fails when one breaks its budget or was not measured at all.
#   bench/gate.sh [BUILD_DIR]   (default build/test-release; needs its bench/)
set -eu
cd "$(dirname "$0")/.."
BUILD="${1:-build/test-release}"
BUDGETS=bench/budgets.txt
OUT="$(mktemp)"
trap 'rm -f "$OUT"' EXIT
status=0
run_bench() { prog="$1"; shift; "$BUILD/bench/$prog" --ringprof_budgets="$BUDGETS" "$@" >>"$OUT" 2>&1 || status=1; }
run_bench ringprof_bench_zone --benchmark_filter='^BM_TwoTscReads$|^BM_Zone/threads:1$' \
  --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run_bench ringprof_bench_drainer --benchmark_filter='^BM_EncodeSegment/3$|^BM_ZstdRawEvents$' \
  --benchmark_min_time=0.2 --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run_bench ringprof_bench_convert
export RINGPROF_BENCH_SECONDS=2
run_bench ringprof_bench_sustained --benchmark_filter='^BM_SustainedRate/M:5/T:1/'
grep -E "^dropped at" "$OUT" || true
grep -E "^budget " "$OUT" || true
# Every budget must have been measured by one of the programs.
grep -vE '^(#|$)' "$BUDGETS" | while IFS= read -r line; do
  label="$(printf '%s\n' "$line" | sed -E 's/ (<=|>=) [^ ]+$//')"
  if ! grep -F "budget kept: $label " "$OUT" >/dev/null && ! grep -F "budget BROKEN: $label " "$OUT" >/dev/null; then
    echo "gate: not measured: $label"
    exit 1
  fi
done || status=1
if [ "$status" -ne 0 ]; then
  echo "gate: FAILED (full output follows)"
  cat "$OUT"
  exit 1
fi
echo "gate: every budget kept"
