#!/bin/sh
# Builds, on a machine without a GPU, everything device_checks.sh needs except
# ringprof.torch (which must match the GPU machine's PyTorch): build/gpu-carry/
#   lib/     libringprof.so, libringprof_inject.so
#   bin/     the ringprof CLI, known_counts (bench/gpu/known_counts.cu, for sm_90 and PTX)
#   python/  the ringprof package for PYTHON_FOR_GPU (default: a Python 3.12, the GPU machine's)
#   deps/    the third-party shared libraries they link (by soname), outside
#            glibc and the C++ runtime; device_checks.sh uses one only where
#            the GPU machine lacks it
#
#   PYTHON_FOR_GPU=/path/to/python3.12 bench/gpu/prepare_carry.sh
# Needs the CUDA toolkit (nvcc, CUPTI headers) and the Debian packages of install-deps.sh.
set -eu
cd "$(dirname "$0")/../.."
ROOT="$(pwd)"
BUILD="$ROOT/build/gpu"
CARRY="$ROOT/build/gpu-carry"
PYTHON_FOR_GPU="${PYTHON_FOR_GPU:-$(ls /usr/bin/python3.12 /root/.pyenv/versions/3.12*/bin/python3.12 2>/dev/null | head -1)}"
[ -x "$PYTHON_FOR_GPU" ] || { echo "prepare_carry: no Python 3.12 found: set PYTHON_FOR_GPU" >&2; exit 1; }
NVCC="${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}"

cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRINGPROF_CUPTI=ON \
  -DRINGPROF_BUILD_TESTS=OFF -DRINGPROF_BUILD_BENCH=OFF -DRINGPROF_BUILD_EXAMPLES=OFF \
  -DPython3_EXECUTABLE="$PYTHON_FOR_GPU" -DRINGPROF_PYTHON=ON -DRINGPROF_TORCH=OFF >/dev/null
cmake --build "$BUILD" --target ringprof ringprof_inject ringprof_cli _ringprof _ringprof_tools

rm -rf "$CARRY" && mkdir -p "$CARRY/lib" "$CARRY/bin" "$CARRY/python/ringprof" "$CARRY/deps"
cp -P "$BUILD"/libringprof.so* "$CARRY/lib/"
cp "$BUILD/core/inject/libringprof_inject.so" "$CARRY/lib/"
cp "$BUILD/tools/ringprof" "$CARRY/bin/"
cp "$BUILD"/python/ringprof/*.py "$BUILD"/python/ringprof/*.so "$CARRY/python/ringprof/"
"$NVCC" -O2 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o "$CARRY/bin/known_counts" bench/gpu/known_counts.cu -ldl
# The same program with the CUDA runtime as a shared library (the way
# PyTorch loads it), and a crash reporter for a machine without gdb.
"$NVCC" -O2 -cudart shared -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
  -o "$CARRY/bin/known_counts_shared" bench/gpu/known_counts.cu -ldl
cc -shared -fPIC -O1 -Wall -o "$CARRY/lib/segv_report.so" bench/gpu/segv_report.c -ldl
# Debug sections stay here (the symbolizer reads them from the build tree when
# the recordings come back); the copies that travel are stripped to fit.
find "$CARRY/lib" "$CARRY/bin" "$CARRY/python" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-debug {} +

# Third-party libraries, by soname: glibc's and the C++ runtime stay the GPU
# machine's own (a newer libstdc++ there serves these binaries; an older one
# carried along would break PyTorch).
for f in "$CARRY"/lib/*.so* "$CARRY"/bin/* "$CARRY"/python/ringprof/*.so; do
  LD_LIBRARY_PATH="$CARRY/lib" ldd "$f" | awk '$3 ~ /^\// { print $1, $3 }'
done | sort -u | while read -r so path; do
  case "$so" in
    libc.so*|libm.so*|libdl.so*|librt.so*|libpthread.so*|ld-linux*|libstdc++*|libgcc_s*|libringprof*|libcuda.so*) ;;
    libcudart.so*) ;;  # the GPU machine's toolkit has its own
    *) cp -L "$path" "$CARRY/deps/$so" ;;
  esac
done
ls "$CARRY/deps"
du -sh "$CARRY"
