#!/bin/sh
# Checks that the C and C++ lines changed since BASE follow .clang-format
# (clang-format 14, Debian's clang-format package): prints what clang-format
# would change and exits 1 when anything would. Lines nobody touched since
# the style was written down are left alone, so history stays readable.
#   ./format-check.sh [BASE]   BASE: a commit (default $RINGPROF_FORMAT_BASE,
#                              else the commit that added .clang-format)
#   ./format-check.sh --fix [BASE]   rewrites those lines in place instead
set -eu
cd "$(dirname "$0")"
fix=""
if [ "${1:-}" = "--fix" ]; then fix=1; shift; fi
base="${1:-${RINGPROF_FORMAT_BASE:-}}"
if [ -z "$base" ]; then
  base="$(git log --diff-filter=A --format=%H -- .clang-format | tail -n 1)"
fi
if [ -z "$base" ] || ! git rev-parse --verify --quiet "$base^{commit}" >/dev/null; then
  echo "format-check: no base commit to compare with (a shallow clone? pass one, or set RINGPROF_FORMAT_BASE)" >&2
  exit 2
fi
run() { git clang-format-14 --binary clang-format-14 --extensions c,cc,cpp,h "$@" "$base" -- \
  core sinks tools python bench tests examples; }
if [ -n "$fix" ]; then
  run --force >/dev/null
  exit 0
fi
out="$(run --diff)"
case "$out" in
  "" | "no modified files to format" | "clang-format did not modify any files") 
    echo "format-check: the lines changed since $(git rev-parse --short "$base") follow .clang-format"
    exit 0 ;;
esac
printf '%s\n' "$out"
echo "format-check: these lines do not follow .clang-format (./format-check.sh --fix rewrites them)" >&2
exit 1
