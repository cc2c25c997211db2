#!/bin/bash
# The GPU checks, as one run on a GPU machine (docs/gpu.md#verified-on-hardware).
#
#   bench/gpu/prepare_carry.sh                  # here: builds build/gpu-carry
#   bench/gpu/device_checks.sh                  # there, from the repository root
#   PYTHONPATH=build/gpu/python python3.12 bench/gpu/analyse_gpu_run.py OUT   # here again: checks, tables
#
# It runs programs and keeps what they leave; every check is made afterwards
# by analyse_gpu_run.py, on a machine without a GPU, from the archive. The
# only thing built here is ringprof.torch, which must match this machine's
# PyTorch; everything else comes prebuilt in build/gpu-carry (the library,
# the injection library, the CLI, the Python package for this Python, the
# known-count CUDA program, and the third-party libraries they link, used
# only where this machine lacks them).
#
# Writes $OUT/log.txt (everything printed) and $OUT/gpu-run.tar.gz.part-NN
# (one archive in parts of at most 15 MiB, what comes back from a lent
# machine: recordings, torch.profiler's kernel and operator lists, each run's
# JSON). Settings: RINGPROF_GPU_STEPS (300), RINGPROF_GPU_REPS (3),
# RINGPROF_GPU_PARTS (which sections), RINGPROF_GPU_PYTESTS (which Python
# test modules), RINGPROF_GPU_PYTESTS_S (the Python tests' time limit, 300),
# RINGPROF_GPU_BUDGET_S (no new PyTorch run after it), PYTHON, RINGPROF_GPU_PYARGS ("--device cpu" tries the script
# on a machine without a GPU).
set -u
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
CARRY="${RINGPROF_GPU_CARRY:-$ROOT/build/gpu-carry}"
OUT="${OUT:-$ROOT/build/gpu-out}"
W=/tmp/ringprof-gpu
STEPS="${RINGPROF_GPU_STEPS:-300}"
REPS="${RINGPROF_GPU_REPS:-3}"
PY="${PYTHON:-python3}"
PYARGS="${RINGPROF_GPU_PYARGS:-}"     # "--device cpu": a dry run on a machine without a GPU
BUDGET="${RINGPROF_GPU_BUDGET_S:-420}"  # no new PyTorch run starts after this many seconds
PARTS="${RINGPROF_GPU_PARTS:-counts,side,breakdown,inject,window,clash,ops,pytests,c10d}"  # which sections run
part() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }
mkdir -p "$OUT"
rm -rf "$W" && mkdir -p "$W/lib" "$W/runs"
exec > >(tee "$OUT/log.txt") 2>&1
section() { echo; echo "=== $* (t=${SECONDS}s) ==="; }
pack() {
  section "pack"
  cp "$OUT/log.txt" "$W/log.txt" 2>/dev/null
  tar czf "$W.tar.gz" -C "$W" --exclude=./lib --exclude='*.o' .
  # What comes back from the machine: files of at most 16 MiB.
  split -b 15M -d "$W.tar.gz" "$OUT/gpu-run.tar.gz.part-" && ls -l "$OUT"
}
trap pack EXIT

section "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
nvidia-smi | head -4 | tail -2
grep -E '^(PRETTY_NAME)=' /etc/os-release; ldd --version | head -1; uname -r; nproc
g++ --version | head -1; nvcc --version | tail -1
"$PY" - <<'EOF' | tee "$W/versions.txt"
import sys, glob, os, torch
import torch.utils.cpp_extension as c
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "cxx11_abi", int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("device", torch.cuda.get_device_name(0), "capability", torch.cuda.get_device_capability(0))
try:
    import pybind11; print("pybind11", pybind11.__version__)
except ImportError:
    print("pybind11 missing")
torch.zeros(1, device="cuda")
maps = open("/proc/self/maps").read()
loaded = sorted({l.split()[-1] for l in maps.splitlines() if "libcupti" in l})
print("libcupti loaded by torch after CUDA init:", loaded)
site = os.path.dirname(os.path.dirname(torch.__file__))
found = sorted(glob.glob(site + "/nvidia/**/libcupti.so.*", recursive=True))
print("cupti in site-packages:", found)
# The one libcupti of the process: torch's (Kineto's), so ringprof never loads a second copy.
open("/tmp/ringprof-gpu/torch_cupti", "w").write((loaded or found or [""])[0])
EOF
TORCH_CUPTI="$(cat "$W/torch_cupti" 2>/dev/null)"
echo "RINGPROF_CUPTI_LIB for the PyTorch runs: ${TORCH_CUPTI:-(search)}"

section "carried binaries: what this machine lacks"
export LD_LIBRARY_PATH="$CARRY/lib"
for f in "$CARRY"/lib/*.so* "$CARRY"/bin/* "$CARRY"/python/ringprof/*.so; do
  ldd "$f" 2>/dev/null | awk '/not found/ { print $1 }'
done | sort -u >"$W/missing.txt"
while read -r so; do
  if [ -e "$CARRY/deps/$so" ]; then ln -sf "$CARRY/deps/$so" "$W/lib/$so"; echo "from build/gpu-carry/deps: $so"
  else echo "MISSING (not carried): $so"; fi
done <"$W/missing.txt"
export LD_LIBRARY_PATH="$CARRY/lib:$W/lib"
for f in "$CARRY"/lib/*.so* "$CARRY"/bin/* "$CARRY"/python/ringprof/*.so; do
  ldd "$f" 2>/dev/null | grep -q "not found" && { echo "still unresolved in $f:"; ldd "$f" | grep "not found"; }
done
echo "ldd checked"

section "build ringprof.torch against this PyTorch (in the background)"
EXT_DIR="$CARRY/python/ringprof"
(
  set -e
  eval "$("$PY" - <<'EOF'
import sysconfig, torch, pybind11
import torch.utils.cpp_extension as c
inc = c.include_paths() + [pybind11.get_include(), sysconfig.get_paths()["include"]]
print("INC='%s'" % " ".join("-isystem " + p for p in inc))
print("LIBDIRS='%s'" % " ".join(c.library_paths()))
print("ABI=%d" % int(torch._C._GLIBCXX_USE_CXX11_ABI))
print("SUFFIX='%s'" % sysconfig.get_config_var("EXT_SUFFIX"))
EOF
)"
  FLAGS="-std=c++20 -O2 -g -fPIC -fvisibility=hidden -DNDEBUG -D_GLIBCXX_USE_CXX11_ABI=$ABI -I$ROOT/python/src -I$ROOT/core/include -I$ROOT/sinks/include $INC"
  # The extension's sources, as python/CMakeLists.txt lists them (one list to keep).
  SRCS="$(grep -o 'src/torch_[a-z_]*\.cpp' "$ROOT/python/CMakeLists.txt" | sed 's|src/||; s|\.cpp||' | sort -u | tr '\n' ' ')"
  echo "sources: $SRCS"
  pids=""
  for src in $SRCS; do
    g++ $FLAGS -c "$ROOT/python/src/$src.cpp" -o "$W/$src.o" & pids="$pids $!"
  done
  for p in $pids; do wait "$p"; done  # set -e: a failed compile ends the build here
  LINK=""
  for d in $LIBDIRS; do LINK="$LINK -L$d -Wl,-rpath,$d"; done
  OBJS=""
  for src in $SRCS; do OBJS="$OBJS $W/$src.o"; done
  # shellcheck disable=SC2086
  g++ -shared -o "$EXT_DIR/_ringprof_torch$SUFFIX" $OBJS \
    -L"$CARRY/lib" -lringprof $LINK -ltorch_cpu -lc10
  echo "built $EXT_DIR/_ringprof_torch$SUFFIX"
) >"$W/torch_ext.log" 2>&1 &
EXT_PID=$!

section "known counts"
CUPTI_DIR="$(dirname "$(find /usr/local/cuda/ /usr/local/cuda-*/ -name 'libcupti.so.1*' 2>/dev/null | head -1)")"
echo "toolkit CUPTI: $CUPTI_DIR"
INJECT="$CARRY/lib/libringprof_inject.so"
kc() {  # kc NAME ENV...: runs the known-count program with RINGPROF_DIR=$W/runs/kc_NAME
  name="$1"; shift
  env "$@" RINGPROF_DIR="$W/runs/kc_$name" LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$CUPTI_DIR" \
    RINGPROF_STATS_FILE="$W/runs/kc_$name.stats" "$CARRY/bin/known_counts" >"$W/runs/kc_$name.expect" 2>"$W/runs/kc_$name.err"
  echo "kc_$name: exit $?"
  head -40 "$W/runs/kc_$name.err" | sed 's/^/    /'
}
# segv_report.so names the frames of a crash (no gdb on the GPU machine).
SEGV="$CARRY/lib/segv_report.so"
if part counts; then
  kc inject_detailed LD_PRELOAD="$SEGV" CUDA_INJECTION64_PATH="$INJECT" RINGPROF_MODE=detailed
  kc preload_detailed LD_PRELOAD="$INJECT:$SEGV" RINGPROF_MODE=detailed
  kc inject_always LD_PRELOAD="$SEGV" CUDA_INJECTION64_PATH="$INJECT" RINGPROF_MODE=always_on
  kc preload_always LD_PRELOAD="$INJECT:$SEGV" RINGPROF_MODE=always_on
  "$CARRY/bin/ringprof" gpu "$W/runs/kc_inject_detailed" | head -40
fi
if part diag; then
  section "injection diagnosis"
  RINGPROF_GPU_CARRY="$CARRY" OUT="$W" bash "$ROOT/bench/gpu/inject_diagnose.sh"
fi

section "wait for ringprof.torch"
wait "$EXT_PID"; echo "build exit $?"; cat "$W/torch_ext.log" | tail -20
export PYTHONPATH="$CARRY/python:$ROOT/bench/gpu"

run_py() {  # run_py NAME ENV... -- ARGS...: one torch_compare.py process, its JSON line kept
  name="$1"; shift
  envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  if [ "$SECONDS" -gt "$BUDGET" ]; then echo "$name: skipped (past ${BUDGET}s)"; return; fi
  start=$SECONDS
  # shellcheck disable=SC2086
  env "${envs[@]}" timeout 150 "$PY" "$ROOT/bench/gpu/torch_compare.py" --out "$W/runs/$name" --steps "$STEPS" $PYARGS "$@" \
    >"$W/runs/$name.json" 2>"$W/runs/$name.err"
  rc=$?
  echo "$name: exit $rc, $((SECONDS - start)) s; stderr: $(grep -v '^\s*$' "$W/runs/$name.err" | tail -5 | tr '\n' '|' | cut -c1-600)"
}

part inject && section "PyTorch under CUDA_INJECTION64_PATH, unchanged"
part inject && run_py inject RINGPROF_CUPTI_LIB="$TORCH_CUPTI" CUDA_INJECTION64_PATH="$INJECT" RINGPROF_DIR="$W/runs/inject/ringprof" -- --mode plain
part window && section "a detailed window in the middle of training"
part window && run_py window RINGPROF_CUPTI_LIB="$TORCH_CUPTI" NVTX_INJECTION64_PATH="$INJECT" -- --mode window
part clash && section "torch.profiler started while ringprof holds CUPTI"
part clash && run_py clash RINGPROF_CUPTI_LIB="$TORCH_CUPTI" -- --mode clash

if part ops; then
  section "ringprof.torch.profile with GPU attribution (torch_ops_gpu.py)"
  mkdir -p "$W/runs/torch_ops"
  RINGPROF_CUPTI_LIB="$TORCH_CUPTI" timeout 120 "$PY" "$ROOT/bench/gpu/torch_ops_gpu.py" "$W/runs/torch_ops" 2>&1 | tail -30
  echo "torch_ops_gpu exit ${PIPESTATUS[0]}"
fi

if part pytests; then
  section "the Python tests that use PyTorch, on this PyTorch"
  # shellcheck disable=SC2086
  (cd "$ROOT/tests/python" && RINGPROF_CLI="$CARRY/bin/ringprof" timeout "${RINGPROF_GPU_PYTESTS_S:-300}" "$PY" -m unittest -v \
    ${RINGPROF_GPU_PYTESTS:-test_torch test_torch_stacks test_torch_distributed test_torch_parity test_torch_modules \
      test_torch_heap test_frames test_python_samples}) >"$W/pytests.log" 2>&1
  echo "pytests exit $?"; grep -E "^(FAIL|ERROR|Ran|OK|FAILED)|skipped" "$W/pytests.log" | head -40
fi
if part c10d; then
  section "what torch.distributed records here (c10d_probe.py)"
  timeout 120 "$PY" "$ROOT/bench/gpu/c10d_probe.py" "$W/runs/c10d" --world 2 --backend gloo 2>&1 | tail -5
  timeout 120 "$PY" "$ROOT/bench/gpu/c10d_probe.py" "$W/runs/c10d" --world 1 --backend nccl 2>&1 | tail -5
  for d in "$W"/runs/c10d/*; do echo "$d"; "$CARRY/bin/ringprof" table "$d" 2>&1 | head -25; done
  "$CARRY/bin/ringprof" ranks "$W"/runs/c10d/gloo_rank* 2>&1 | tail -8
fi

part side && section "PyTorch side by side: $REPS interleaved repetitions of $STEPS steps"
part side && for rep in $(seq 1 "$REPS"); do
  run_py "none_$rep" X=1 -- --mode none
  run_py "rp_always_$rep" RINGPROF_CUPTI_LIB="$TORCH_CUPTI" -- --mode ringprof --level always_on
  run_py "rp_detailed_$rep" RINGPROF_CUPTI_LIB="$TORCH_CUPTI" NVTX_INJECTION64_PATH="$INJECT" -- --mode ringprof --level detailed
  run_py "torch_$rep" X=1 -- --mode torch
  if part breakdown; then  # ringprof's cost split: operators only, GPU tracing only
    run_py "rp_opsonly_$rep" RINGPROF_CUPTI_LIB="$TORCH_CUPTI" -- --mode ringprof --level always_on --gpu 0
    run_py "rp_gpuonly_$rep" RINGPROF_CUPTI_LIB="$TORCH_CUPTI" -- --mode ringprof --level always_on --ops off
  fi
done

section "on-device view of one recording"
"$CARRY/bin/ringprof" gpu "$W/runs/rp_always_1/ringprof" 2>&1 | grep -v '^  ' | head -30
du -sh "$W/runs"/* | sort -k2 | head -50
