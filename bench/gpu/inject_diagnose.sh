#!/bin/bash
# Narrows down a crash of the known-count program under the injection
# library, on the GPU machine (no gdb there): the same program under
# variations, each with segv_report.so printing the crashing thread's frames
# (cuda-gdb, which is there, hung on it). Prints one line per variation.
#   bench/gpu/inject_diagnose.sh      (after prepare_carry.sh; OUT as device_checks.sh)
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CARRY="${RINGPROF_GPU_CARRY:-$ROOT/build/gpu-carry}"
OUT="${OUT:-$ROOT/build/gpu-out}"
W=/tmp/ringprof-diag
rm -rf "$W" && mkdir -p "$W" "$OUT"
CUPTI_DIR="$(dirname "$(find /usr/local/cuda/ /usr/local/cuda-*/ -name 'libcupti.so.1*' 2>/dev/null | head -1)")"
export LD_LIBRARY_PATH="$CARRY/lib:$CUPTI_DIR:${RINGPROF_GPU_EXTRA_LIBS:-}"
INJECT="$CARRY/lib/libringprof_inject.so"
SEGV="$CARRY/lib/segv_report.so"
variant() {  # variant NAME PROGRAM ENV...
  name="$1"; prog="$2"; shift 2
  env LD_PRELOAD="$SEGV" RINGPROF_DIR="$W/$name" "$@" timeout 60 "$CARRY/bin/$prog" >"$W/$name.out" 2>"$W/$name.err"
  rc=$?
  files="$(ls "$W/$name" 2>/dev/null | tr '\n' ' ')"
  echo "$name: exit $rc; stdout $(wc -l <"$W/$name.out") lines; files: ${files:-none}"
  grep -v '^$' "$W/$name.err" | head -30 | sed 's/^/    /'
}
variant base known_counts CUDA_INJECTION64_PATH="$INJECT"
variant detailed known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_MODE=detailed
variant no_gpu known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_GPU=0
variant no_sampling known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_SAMPLE_HZ=0
variant no_exit_flush known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_FLUSH_AT_EXIT=0
variant no_crash_flush known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_CRASH_FLUSH=0
variant no_nvtx known_counts CUDA_INJECTION64_PATH="$INJECT" NVTX_INJECTION64_PATH=/nonexistent
variant disabled known_counts CUDA_INJECTION64_PATH="$INJECT" RINGPROF_DISABLE=1
variant cudart_shared known_counts_shared CUDA_INJECTION64_PATH="$INJECT"
variant preload known_counts LD_PRELOAD="$INJECT:$SEGV"
tar czf "$OUT/diag.tar.gz" -C "$W" . 2>/dev/null
