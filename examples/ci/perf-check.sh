#!/bin/sh
# Records one benchmark run of the base and of the head build, compares them
# with `ringprof diff`, and measures what ringprof costs the head build with
# `ringprof overhead`. Writes into OUT_DIR:
#   base/, head/    the two recordings (keep them as CI artifacts)
#   diff.md         the comparison as a Markdown table (post it on the pull request)
#   diff.json       the same as JSON
#   overhead.json   each level's slowdown against ringprof off
# Exit status: 0, or 3 when a zone or kernel regressed by more than
# FAIL_ABOVE (default 5%) or a level slowed the head down by more than
# MAX_SLOWDOWN (default 10%), or the status of the step that failed.
#
#   examples/ci/perf-check.sh OUT_DIR "BASE COMMAND" "HEAD COMMAND"
# e.g. examples/ci/perf-check.sh perf "base/build/bench --quick" "head/build/bench --quick"
# RINGPROF (default: ringprof on PATH), RUNS (overhead runs per level, default 5).
set -u
if [ $# -ne 3 ]; then
  echo "usage: $0 OUT_DIR \"BASE COMMAND\" \"HEAD COMMAND\"" >&2
  exit 2
fi
OUT="$1"; BASE_CMD="$2"; HEAD_CMD="$3"
RINGPROF="${RINGPROF:-ringprof}"
rm -rf "$OUT/base" "$OUT/head"
mkdir -p "$OUT"
# The benchmark records itself (linked against ringprof, or preloaded with
# RINGPROF_AUTOSTART=1); the detailed level records every zone.
RINGPROF_DIR="$OUT/base" RINGPROF_MODE=detailed sh -c "$BASE_CMD" || exit $?
RINGPROF_DIR="$OUT/head" RINGPROF_MODE=detailed sh -c "$HEAD_CMD" || exit $?
"$RINGPROF" diff "$OUT/base" "$OUT/head" --format json >"$OUT/diff.json"
"$RINGPROF" diff "$OUT/base" "$OUT/head" --format markdown --fail-above "${FAIL_ABOVE:-5%}" >"$OUT/diff.md"
diff_status=$?
# shellcheck disable=SC2086  # the head command's words are the command line
"$RINGPROF" overhead --runs "${RUNS:-5}" --format json --max-slowdown "${MAX_SLOWDOWN:-10%}" -- $HEAD_CMD \
  >"$OUT/overhead.json"
overhead_status=$?
[ "$diff_status" -ne 0 ] && exit "$diff_status"
exit "$overhead_status"
