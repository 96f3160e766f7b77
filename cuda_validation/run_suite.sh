#!/usr/bin/env bash
# Builds ridgeline_cuda_bench and runs the suite.
#
#   cuda_validation/run_suite.sh OUTPUT.json [quick|full] [extra ridgeline_cuda_bench args...]
#
# quick (the default) runs `--quick`; full runs everything. Extra arguments go
# to the benchmark, e.g. `--only gemm,attention`. Writes OUTPUT.json and, when
# nvidia-smi exists, OUTPUT.nvidia-smi.txt (nvidia-smi -q before the run, its
# clocks and performance state after it).
#
# Environment:
#   RIDGELINE_CUDA_ARCHS       CUDA architectures to build, e.g. "90" or "80;89;90".
#                       Unset: the GPU's own (from nvidia-smi), else 80;89;90.
#   RIDGELINE_CUDA_BUILD_DIR   build directory (default: cuda_validation/build)
#   RIDGELINE_JOBS             parallel build jobs (default: nproc)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ $# -lt 1 || "$1" == -* ]]; then
  echo "usage: $0 OUTPUT.json [quick|full] [ridgeline_cuda_bench args...]" >&2
  exit 2
fi
out="$1"
shift
mode="quick"
if [[ $# -gt 0 && ( "$1" == quick || "$1" == full ) ]]; then
  mode="$1"
  shift
fi
build="${RIDGELINE_CUDA_BUILD_DIR:-$here/build}"
jobs="${RIDGELINE_JOBS:-$(nproc 2>/dev/null || echo 4)}"

archs="${RIDGELINE_CUDA_ARCHS:-}"
if [[ -z "$archs" ]] && command -v nvidia-smi >/dev/null 2>&1; then
  # "9.0" -> "90"; several GPUs -> their distinct architectures.
  archs="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | tr -d ' .' | sort -u | paste -sd ';' || true)"
fi
archs="${archs:-80;89;90}"

echo "run_suite: building ridgeline_cuda_bench for sm ${archs} in ${build} (-j${jobs})" >&2
start=$(date +%s)
cmake -S "$here" -B "$build" -DCMAKE_BUILD_TYPE=Release "-DCMAKE_CUDA_ARCHITECTURES=${archs}" >/dev/null
cmake --build "$build" --target ridgeline_cuda_bench -j "$jobs"
echo "run_suite: build took $(( $(date +%s) - start )) s" >&2

side="${out%.json}.nvidia-smi.txt"
if command -v nvidia-smi >/dev/null 2>&1; then
  { echo "# nvidia-smi -q (before the run)"; nvidia-smi -q; } >"$side" 2>&1 || true
fi

args=(--output "$out")
[[ "$mode" == quick ]] && args+=(--quick)
status=0
"$build/ridgeline_cuda_bench" "${args[@]}" "$@" || status=$?

if command -v nvidia-smi >/dev/null 2>&1; then
  { echo; echo "# nvidia-smi -q -d CLOCK,PERFORMANCE (after the run)"; nvidia-smi -q -d CLOCK,PERFORMANCE; } >>"$side" 2>&1 || true
  echo "run_suite: nvidia-smi report in $side" >&2
fi
echo "run_suite: ridgeline_cuda_bench exited with status $status" >&2
exit "$status"
