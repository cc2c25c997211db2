#!/bin/sh
# GPU checks for ringprof's CUPTI tracing. Needs an NVIDIA GPU, its driver,
# the CUDA toolkit (nvcc, CUPTI) and, for the second part, PyTorch with CUDA.
# NOT YET RUN ON A GPU: written and reviewed on a machine without one.
#
#   bench/gpu/run_gpu_checks.sh            # from the repository root
#   RINGPROF_GPU_STEPS=300 bench/gpu/run_gpu_checks.sh
#
# 1. Builds ringprof with CUPTI, builds known_counts.cu, runs it under
#    CUDA_INJECTION64_PATH and under LD_PRELOAD, and checks that `ringprof gpu`
#    reports exactly the kernel launches, copies, memsets and NVTX ranges the
#    program made, no clock order violations and nothing lost.
# 2. Runs train_small.py three times on the same GPU: without a profiler,
#    under ringprof injection and under torch.profiler; prints kernels seen by
#    each (they must match), the step-time slowdown of each against no
#    profiler, and the output size.
# 3. Where the build has the Python package: torch_ops_gpu.py checks that
#    ringprof.torch attributes kernels to the operators that launched them.
set -eu
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
BUILD="$ROOT/build/gpu"
OUT="$BUILD/gpu-checks"
STEPS="${RINGPROF_GPU_STEPS:-200}"
fail() { echo "run_gpu_checks: FAIL: $*" >&2; exit 1; }

command -v nvidia-smi >/dev/null || fail "nvidia-smi not found: this script needs an NVIDIA GPU and driver"
nvidia-smi -L
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"
[ -x "$NVCC" ] || fail "nvcc not found (set NVCC)"

echo "=== build ringprof with CUPTI ==="
cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGPROF_CUPTI=ON -DRINGPROF_BUILD_TESTS=OFF \
  -DRINGPROF_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j"$(nproc)" --target ringprof ringprof_inject ringprof_cli
CLI="$BUILD/tools/ringprof"
INJECT="$BUILD/core/inject/libringprof_inject.so"
CUPTI_DIR="$(dirname "$(grep -m1 '^RINGPROF_CUPTI_LIBRARY:' "$BUILD/CMakeCache.txt" | cut -d= -f2)")"
export LD_LIBRARY_PATH="$CUPTI_DIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

rm -rf "$OUT" && mkdir -p "$OUT"
"$NVCC" -O2 -o "$OUT/known_counts" bench/gpu/known_counts.cu -ldl

# check_counts DIR EXPECT_FILE: compares `ringprof gpu DIR` with the program's "expect" lines.
check_counts() {
  dir="$1"; expect="$2"
  "$CLI" gpu "$dir" >"$dir.gpu.txt" || fail "ringprof gpu $dir"
  "$CLI" info "$dir" >"$dir.info.txt" || fail "ringprof info $dir"
  cat "$dir.gpu.txt"
  # Kernel rows: "  add_one(float*, int)  Calls ..."; the name has spaces, so
  # take the Calls column by position from the end (11 columns follow the name).
  got_add="$(awk '/^  add_one\(/ { print $(NF-10) }' "$dir.gpu.txt")"
  got_scale="$(awk '/^  scale\(/ { print $(NF-10) }' "$dir.gpu.txt")"
  got_htod="$(awk '$1 == "HtoD" { print $2 }' "$dir.gpu.txt")"
  got_dtoh="$(awk '$1 == "DtoH" { print $2 }' "$dir.gpu.txt")"
  got_memset="$(sed -n 's/^Memset: \([0-9]*\) .*/\1/p' "$dir.gpu.txt")"
  got_nvtx="$(sed -n 's/.*NVTX ranges: \([0-9]*\).*/\1/p' "$dir.gpu.txt")"
  for pair in "add_one:$got_add" "scale:$got_scale" "HtoD:$got_htod" "DtoH:$got_dtoh" "memset:$got_memset" \
              "nvtx:$got_nvtx"; do
    name="${pair%%:*}"; got="${pair#*:}"
    want="$(awk -v n="$name" '$1 == "expect" && $2 == n { print $3 }' "$expect")"
    [ "$got" = "$want" ] || fail "$dir: $name: ringprof saw '${got}', the program made $want"
    echo "ok: $name $got"
  done
  grep -q "^Clock order violations: 0$" "$dir.gpu.txt" || fail "$dir: clock order violations"
  grep -q "^Lost: 0 records dropped by CUPTI, 0 buffers refused" "$dir.gpu.txt" || fail "$dir: records lost"
  grep -q "clock order violations: 0" "$dir.info.txt" || fail "$dir: info reports clock order violations"
}

echo "=== known counts: CUDA_INJECTION64_PATH ==="
RINGPROF_DIR="$OUT/inject" CUDA_INJECTION64_PATH="$INJECT" "$OUT/known_counts" >"$OUT/expect.txt"
check_counts "$OUT/inject" "$OUT/expect.txt"
echo "=== known counts: LD_PRELOAD ==="
RINGPROF_DIR="$OUT/preload" LD_PRELOAD="$INJECT" "$OUT/known_counts" >/dev/null
check_counts "$OUT/preload" "$OUT/expect.txt"
"$CLI" convert "$OUT/inject" -o "$OUT/known_counts.json" && echo "trace: $OUT/known_counts.json"

echo "=== PyTorch: no profiler, ringprof injection, torch.profiler (${STEPS} steps each) ==="
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "run_gpu_checks: PyTorch with CUDA not available; skipping the comparison"
  echo "run_gpu_checks: known-count checks passed"
  exit 0
fi
PY=bench/gpu/train_small.py
base="$(python3 "$PY" --mode none --steps "$STEPS" --out "$OUT/none" | tail -1)"
rp="$(RINGPROF_DIR="$OUT/torch-ringprof" CUDA_INJECTION64_PATH="$INJECT" \
      python3 "$PY" --mode ringprof --steps "$STEPS" --out "$OUT/ringprof" | tail -1)"
tp="$(python3 "$PY" --mode torch --steps "$STEPS" --out "$OUT/torch" | tail -1)"
"$CLI" gpu "$OUT/torch-ringprof" >"$OUT/torch-ringprof.gpu.txt"
# Sum of the Calls column over every kernel row.
rp_kernels="$(awk '/^Kernels:/ {on=1; next} /^Memcpy:/ {on=0} on && $1 != "Name" { s += $(NF-10) } END { print s+0 }' \
              "$OUT/torch-ringprof.gpu.txt")"
rp_bytes="$(du -sb "$OUT/torch-ringprof" | cut -f1)"
python3 - "$base" "$rp" "$tp" "$rp_kernels" "$rp_bytes" <<'PYEOF'
import json, sys
base, rp, tp = (json.loads(a) for a in sys.argv[1:4])
rp_kernels, rp_bytes = int(sys.argv[4]), int(sys.argv[5])
b = base["median_step_ms"]
rows = [
    ("no profiler", "-", b, "-", "-"),
    ("ringprof (injected)", rp_kernels, rp["median_step_ms"], f"{(rp['median_step_ms'] / b - 1) * 100:+.1f}%", rp_bytes),
    ("torch.profiler", tp["kernels"], tp["median_step_ms"], f"{(tp['median_step_ms'] / b - 1) * 100:+.1f}%", tp["output_bytes"]),
]
print(f"{'':22} {'kernels':>8} {'step ms':>9} {'slowdown':>9} {'output bytes':>13}")
for name, k, ms, slow, size in rows:
    print(f"{name:22} {k!s:>8} {ms:9.3f} {slow:>9} {size!s:>13}")
if rp_kernels != tp["kernels"]:
    print(f"run_gpu_checks: FAIL: kernels differ: ringprof {rp_kernels}, torch.profiler {tp['kernels']}")
    sys.exit(1)
print("kernels match")
PYEOF
echo "=== ringprof.torch: kernels attributed to the operators that launched them ==="
if cmake --build "$BUILD" -j"$(nproc)" --target _ringprof _ringprof_torch _ringprof_tools >/dev/null 2>&1; then
  PYTHONPATH="$BUILD/python:$ROOT/bench/gpu" LD_LIBRARY_PATH="$CUPTI_DIR" python3 bench/gpu/torch_ops_gpu.py "$OUT" \
    || fail "ringprof.torch: kernels not attributed to operators (above)"
else
  echo "run_gpu_checks: the build has no Python package (pybind11 or PyTorch's headers missing); skipped"
fi
echo "run_gpu_checks: all checks passed"
