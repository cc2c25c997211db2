#!/bin/sh
# Quick start, step one: install what is missing, build, record the demo,
# convert the recording to a Perfetto trace and a Chrome trace and print the
# operator table.
set -eu
cd "$(dirname "$0")"
./install-deps.sh
cmake -S . -B build/release -DCMAKE_BUILD_TYPE=Release -DRINGPROF_BUILD_TESTS=OFF -DRINGPROF_BUILD_BENCH=OFF >/dev/null
cmake --build build/release -j"$(nproc)" --target ringprof_demo ringprof_cli
rm -rf build/demo-recording
RINGPROF_DIR=build/demo-recording ./build/release/examples/ringprof_demo 400
./build/release/tools/ringprof info build/demo-recording
./build/release/tools/ringprof convert build/demo-recording -o build/demo-trace.pftrace
./build/release/tools/ringprof convert build/demo-recording -o build/demo-trace.json
./build/release/tools/ringprof table build/demo-recording --top 10
./build/release/tools/ringprof report build/demo-recording -o build/demo-report.html
echo
echo "recording:    $(pwd)/build/demo-recording"
echo "Perfetto trace: $(pwd)/build/demo-trace.pftrace  (open it in https://ui.perfetto.dev, \"Open trace file\")"
echo "Chrome trace:   $(pwd)/build/demo-trace.json  (https://ui.perfetto.dev or chrome://tracing)"
echo "Report page:    $(pwd)/build/demo-report.html  (open it in a browser; offline)"
