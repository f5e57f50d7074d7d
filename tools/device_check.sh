#!/usr/bin/env bash
# Builds murmur's CUDA kernels on a GPU machine, runs their `cuda` tests and
# the GPU benchmark, and writes a short report (docs/compression.md, "GPU
# kernels"; numbers in docs/benchmarks.md).
#
#   tools/device_check.sh --prepare [DIR]   on a Debian machine with murmur's
#       build dependencies: copies into DIR (default .device_deps) the headers
#       and libraries the GPU-only build needs that a bare GPU machine lacks
#       (Eigen, doctest, zstd), about 11 MB.
#   tools/device_check.sh [DIR]             on the GPU machine (nvcc, CMake and
#       a C++20 host compiler; no Debian -dev packages): builds with
#       MURMUR_GPU_ONLY=ON against DIR, runs the tests and the benchmark, and
#       writes REPORT_DIR/device_report.txt (REPORT_DIR: $OUT, else
#       /tmp/murmur-device). With MURMUR_PREBUILT=DIR holding
#       compression_cuda_test and cuda_bench built elsewhere, those run when
#       the build here fails.
# Bounded: the build, the tests and the benchmark each run under a timeout
# (about 8 minutes in all on a fresh H200 machine).
set -uo pipefail
cd "$(dirname "$0")/.."

if [[ "${1:-}" == "--prepare" ]]; then
  deps=${2:-.device_deps}
  mkdir -p "$deps/include" "$deps/lib" "$deps/share"
  cp -r /usr/include/eigen3 "$deps/include/"
  cp -r /usr/share/eigen3 "$deps/share/"
  cp -r /usr/include/doctest "$deps/include/"
  cp /usr/include/zstd.h /usr/include/zstd_errors.h /usr/include/zdict.h "$deps/include/"
  cp /usr/lib/x86_64-linux-gnu/libzstd.a "$deps/lib/"
  du -sh "$deps"
  exit 0
fi

deps=$(realpath "${1:-.device_deps}")
report_dir=${OUT:-/tmp/murmur-device}
mkdir -p "$report_dir"
report=$report_dir/device_report.txt
: >"$report"
say() { echo "$@" | tee -a "$report"; }

say "# murmur device check, $(date -u +%Y-%m-%dT%H:%M:%SZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv,noheader 2>&1 | sed 's/^/gpu: /' | tee -a "$report"
say "nvcc: $(nvcc --version | tail -1)"
say "host: $(nproc) cores, $(g++ --version | head -1)"

start=$(date +%s)
build=build/gpu
bin_test=$build/tests/compression_cuda/compression_cuda_test
bin_bench=$build/bench/cuda_bench
if timeout 120 cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release -DMURMUR_GPU_ONLY=ON -DMURMUR_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 -DMURMUR_TORCH=OFF -DMURMUR_PYTHON=OFF -DMURMUR_MPI=OFF -DMURMUR_METIS=OFF \
    -DCMAKE_PREFIX_PATH="$deps" -DEigen3_DIR="$deps/share/eigen3/cmake" -DMURMUR_DOCTEST_INCLUDE="$deps/include" \
    -DCMAKE_CXX_FLAGS="-I$deps/include" >"$report_dir/configure.log" 2>&1 &&
  timeout 240 cmake --build $build -j "$(nproc)" --target compression_cuda_test cuda_bench >"$report_dir/build.log" 2>&1; then
  say "build: MURMUR_GPU_ONLY, sm_90, $(( $(date +%s) - start )) s"
else
  say "build: FAILED after $(( $(date +%s) - start )) s (configure.log, build.log)"
  tail -30 "$report_dir/configure.log" "$report_dir/build.log" 2>/dev/null | tee -a "$report"
  if [[ -n "${MURMUR_PREBUILT:-}" ]]; then
    bin_test=$MURMUR_PREBUILT/compression_cuda_test
    bin_bench=$MURMUR_PREBUILT/cuda_bench
    say "using the prebuilt programs in $MURMUR_PREBUILT"
  else
    exit 1
  fi
fi

status=0
say ""
say "## cuda tests ($bin_test)"
timeout 240 "$bin_test" --duration=true >"$report_dir/tests.log" 2>&1
rc=$?
grep -E "^\[doctest\] (test cases|assertions|Status)|ERROR|CHECK|FAILED|skipped|^[0-9.]+ s: " "$report_dir/tests.log" | head -80 | tee -a "$report"
[[ $rc -eq 0 ]] || { say "tests: exit $rc"; status=1; }

if command -v compute-sanitizer >/dev/null; then
  say ""
  say "## compute-sanitizer memcheck (a subset of the tests)"
  timeout 90 compute-sanitizer --tool memcheck --leak-check no "$bin_test" \
    -tc="Ties*,Zero*,Mixing*,The GPU refuses*,16-bit*" >"$report_dir/memcheck.log" 2>&1
  rc=$?
  grep -E "ERROR SUMMARY|Status|test cases" "$report_dir/memcheck.log" | tee -a "$report"
  [[ $rc -eq 0 ]] || { say "memcheck: exit $rc"; status=1; }
fi

say ""
say "## benchmark ($bin_bench)"
timeout 150 "$bin_bench" 2>&1 | tee -a "$report"
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
say ""
say "total: $(( $(date +%s) - start )) s, status $status"
exit $status
