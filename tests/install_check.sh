#!/bin/sh
# Installs a built ringprof into a scratch prefix and builds a user's program
# against it twice: with CMake's find_package(ringprof) and with a plain
# compiler line from pkg-config. Both programs must record a readable file.
#   tests/install_check.sh BUILD_DIR
set -eu
build="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cmake --install "$build" --prefix "$prefix" >/dev/null

mkdir -p "$work/app"
cat >"$work/app/main.cpp" <<'SRC'
#include <ringprof/ringprof.h>
int main() {
  ringprof::start();
  for (int i = 0; i < 1000; ++i) { RINGPROF_ZONE("user_zone"); }
  return 0;
}
SRC
cat >"$work/app/CMakeLists.txt" <<'SRC'
cmake_minimum_required(VERSION 3.25)
project(user_app CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(ringprof REQUIRED)
add_executable(user_app main.cpp)
target_link_libraries(user_app PRIVATE ringprof::ringprof)
SRC
cmake -S "$work/app" -B "$work/app/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$work/app/build" >/dev/null
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" RINGPROF_DIR="$work/rec-cmake" "$work/app/build/user_app"

export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib/x86_64-linux-gnu/pkgconfig"
# shellcheck disable=SC2046
c++ -std=c++20 "$work/app/main.cpp" -o "$work/app/user_app_pc" $(pkg-config --cflags --libs ringprof)
LD_LIBRARY_PATH="$prefix/lib:$prefix/lib/x86_64-linux-gnu" RINGPROF_DIR="$work/rec-pc" "$work/app/user_app_pc"

for rec in rec-cmake rec-pc; do
  out="$("$prefix/bin/ringprof" table "$work/$rec")"
  echo "$out" | grep -q "user_zone" || { echo "install_check: no user_zone in $rec" >&2; exit 1; }
  echo "$out" | grep -E "user_zone +1000 " >/dev/null || { echo "install_check: user_zone calls != 1000 in $rec:" >&2; echo "$out" >&2; exit 1; }
done
echo "install_check: find_package and pkg-config builds both recorded 1000 zones"

# The Python package, where the build has one: imported from the prefix's
# site directory with nothing else set, it records too.
site="$(sed -n 's/^RINGPROF_PYTHON_INSTALL_DIR:PATH=//p' "$build/CMakeCache.txt")"
python="$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")"
if [ -n "$site" ] && [ -n "$python" ]; then
  case "$site" in /*) ;; *) site="$prefix/$site" ;; esac
  PYTHONPATH="$site" RINGPROF_DIR="$work/rec-py" "$python" -c '
import ringprof
ringprof.start(sample_hz=0)
for _ in range(1000):
    with ringprof.zone("python_zone"):
        pass
ringprof.stop()
'
  out="$("$prefix/bin/ringprof" table "$work/rec-py")"
  echo "$out" | grep -E "python_zone +1000 " >/dev/null || { echo "install_check: python_zone calls != 1000:" >&2; echo "$out" >&2; exit 1; }
  echo "install_check: the installed Python package recorded 1000 zones"
fi

# Every installed header compiles alone, and the recording API stays small:
# instrumenting a file does not pull in the sink model or the settings.
inc="$prefix/include"
n=0
for h in "$inc"/ringprof/*.h "$inc"/ringprof/internal/*.h; do
  rel="${h#"$inc"/}"
  printf '#include <%s>\n' "$rel" | c++ -std=c++20 -Wall -Wextra -Werror -fsyntax-only -x c++ -I"$inc" - ||
    { echo "install_check: $rel does not compile alone" >&2; exit 1; }
  n=$((n + 1))
done
printf '#include <ringprof/recording.h>\n#include <ringprof/detail_zone.h>\n' |
  c++ -std=c++20 -E -x c++ -I"$inc" - >"$work/recording.i" ||
  { echo "install_check: ringprof/recording.h does not preprocess" >&2; exit 1; }
grep -q 'zone_begin' "$work/recording.i" || { echo "install_check: no zone_begin in recording.h's expansion" >&2; exit 1; }
if grep -Eq 'class Sink\b|struct Config\b' "$work/recording.i"; then
  echo "install_check: ringprof/recording.h pulls in the sink model or Config" >&2; exit 1
fi
echo "install_check: $n installed headers compile alone; recording.h names no sink"

# The CLI and the Python reader read files through the format library alone:
# no recorder inside. The same symbols are looked for in libringprof first, so
# the pattern is known to find a recorder where there is one.
recorder='ringprof::(stop\(\)|recorder_stats\(\)|Drainer::|internal::attach_thread)'
lib="$(find "$prefix" -name 'libringprof.so' | head -n 1)"
nm -C --defined-only "$lib" | grep -Eq "$recorder" || { echo "install_check: no recorder symbols found in $lib" >&2; exit 1; }
readers="$prefix/bin/ringprof"
if [ -n "${site:-}" ] && [ -d "$site/ringprof" ]; then readers="$readers $(ls "$site"/ringprof/_ringprof_tools*.so)"; fi
for f in $readers; do
  nm -C --defined-only "$f" >"$work/symbols.txt" 2>/dev/null || true
  # A stripped reader would pass the check below unseen: its symbols must be there.
  grep -q 'ringprof::' "$work/symbols.txt" || { echo "install_check: $f has no ringprof symbols to check" >&2; exit 1; }
  if grep -E "$recorder" "$work/symbols.txt"; then echo "install_check: $f contains a recorder" >&2; exit 1; fi
  if ldd "$f" | grep -q libringprof; then echo "install_check: $f links libringprof" >&2; exit 1; fi
done
echo "install_check: no recorder in $(echo "$readers" | wc -w) reader(s)"
