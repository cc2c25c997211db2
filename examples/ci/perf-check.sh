#!/bin/sh
# Records RUNS runs of the base build's benchmark and of the head build's,
# interleaved, compares them with `ringprof ab` (the run-to-run noise
# measured), and measures what ringprof costs the head build with
# `ringprof overhead`. Writes into OUT_DIR:
#   base/run-NN, head/run-NN   the recordings (keep them as CI artifacts)
#   diff.md         the comparison as a Markdown table (post it on the pull request)
#   diff.json       the same as JSON
#   overhead.json   each level's slowdown against ringprof off
# Exit status: 0, or 3 when a zone or kernel regressed by more than
# FAIL_ABOVE (default 5%) or a level slowed the head down by more than
# MAX_SLOWDOWN (default 10%), or the status of the step that failed.
#
#   examples/ci/perf-check.sh OUT_DIR "BASE COMMAND" "HEAD COMMAND"
# e.g. examples/ci/perf-check.sh perf "base/build/bench --quick" "head/build/bench --quick"
# RINGPROF (default: ringprof on PATH), RUNS (runs per side, and overhead
# runs per level, default 5).
set -u
if [ $# -ne 3 ]; then
  echo "usage: $0 OUT_DIR \"BASE COMMAND\" \"HEAD COMMAND\"" >&2
  exit 2
fi
OUT="$1"; BASE_CMD="$2"; HEAD_CMD="$3"
RINGPROF="${RINGPROF:-ringprof}"
mkdir -p "$OUT"
# The benchmark records itself (linked against ringprof, or preloaded with
# RINGPROF_AUTOSTART=1); ab sets RINGPROF_DIR per run and the detailed level,
# which records every zone, and alternates base and head runs.
"$RINGPROF" ab "$OUT" --runs "${RUNS:-5}" --base "$BASE_CMD" --head "$HEAD_CMD" --format json >"$OUT/diff.json" ||
  exit $?
"$RINGPROF" diff --runs "$OUT/base" "$OUT/head" --format markdown --fail-above "${FAIL_ABOVE:-5%}" >"$OUT/diff.md"
diff_status=$?
# shellcheck disable=SC2086  # the head command's words are the command line
"$RINGPROF" overhead --runs "${RUNS:-5}" --format json --max-slowdown "${MAX_SLOWDOWN:-10%}" -- $HEAD_CMD \
  >"$OUT/overhead.json"
overhead_status=$?
[ "$diff_status" -ne 0 ] && exit "$diff_status"
exit "$overhead_status"
