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
for tool in git-clang-format-14 clang-format-14; do
  command -v "$tool" >/dev/null 2>&1 ||
    { echo "format-check: $tool not found (Debian's clang-format package; ./install-deps.sh installs it)" >&2; exit 2; }
done
dirs="core sinks tools python bench tests examples"
run() { git clang-format-14 --binary clang-format-14 --extensions c,cc,cpp,h "$@" "$base" -- $dirs; }
# New files git does not track yet are all changed lines: git clang-format
# sees only tracked ones, so they are checked whole.
untracked="$(git ls-files --others --exclude-standard -- $dirs | grep -E '\.(c|cc|cpp|h)$' || true)"
if [ -n "$fix" ]; then
  run --force >/dev/null || true
  for f in $untracked; do clang-format-14 -i "$f"; done
  exit 0
fi
status=0
out="$(run --diff)" || true
case "$out" in
  "" | "no modified files to format" | "clang-format did not modify any files") ;;
  *) printf '%s\n' "$out"; status=1 ;;
esac
for f in $untracked; do
  clang-format-14 --dry-run --Werror "$f" 2>/dev/null || { echo "format-check: $f (new file)"; status=1; }
done
if [ "$status" -ne 0 ]; then
  echo "format-check: these lines do not follow .clang-format (./format-check.sh --fix rewrites them)" >&2
  exit 1
fi
echo "format-check: the lines changed since $(git rev-parse --short "$base") follow .clang-format"
