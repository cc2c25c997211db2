#!/bin/sh
# Installs what ringprof needs from Debian's packages, and only what is
# missing: safe to run again and again. Used by demo.sh and test.sh.
set -eu

PACKAGES="build-essential cmake pkg-config clang clang-format libclang-rt-14-dev \
libconcurrentqueue-dev libzstd-dev zlib1g-dev libflatbuffers-dev flatbuffers-compiler \
libgtest-dev libbenchmark-dev nlohmann-json3-dev libdw-dev libelf-dev liblzma-dev xz-utils \
libprotobuf-dev protobuf-compiler golang-go libcli11-dev libcurl4-openssl-dev clickhouse-server clickhouse-client \
python3-dev pybind11-dev python3-pybind11 python3-torch libtorch-dev python3-pandas chromium"
# The report page's browser tests (tests/browser) run on Node.js with npm:
# Debian's, unless a node and an npm are on PATH already (NodeSource's nodejs,
# say, which brings its own npm and conflicts with Debian's).
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  PACKAGES="$PACKAGES nodejs npm"
fi

missing=""
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "install-deps: installing:$missing"
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing
