#!/usr/bin/env bash
# One command on a GPU machine: build the CUDA suite, run its quick suite and
# the PyTorch step suite, and leave every result under OUTDIR.
#
#   cuda_validation/run_device.sh OUTDIR [--dry-run]
#
# Parts, each under its own `timeout` (a part that overruns is stopped, keeps
# what it measured, and the next part runs):
#   1. build    ridgeline_cuda_bench (CMake, -j16; the GPU's architecture)    120 s
#   2. kernels  ridgeline_cuda_bench --quick -> OUTDIR/cuda_kernels.json       150 s
#   3. steps    torch_steps.py -> OUTDIR/torch_steps.published.json,           200 s
#               OUTDIR/torch_kernels.json
# then OUTDIR/device_kernels.json: the records of both kernel files in one
# (the CUDA suite's header), what `ridgeline calibrate` and `validate` read;
# plus OUTDIR/environment.txt (nvidia-smi -q before, clocks after, versions)
# and OUTDIR/run_device.log. At most 8 minutes in all on an H200.
#
# --dry-run: the same pipeline on a CPU-only machine, to test its plumbing:
# the CUDA suite is built when nvcc exists (and its --list run) but not run;
# torch_steps.py runs at tiny sizes on the CPU under Debian's python3-torch
# (/usr/bin/python3, PyTorch 1.13), its rows labelled for the H200 profile
# (hardware.gpu: H200) so that validate-published predicts them. Nothing a dry
# run writes is a measurement.
#
# Environment:
#   RIDGELINE_CUDA_ARCHS      architectures to build (default: the GPU's, from
#                             nvidia-smi; 90 in a dry run)
#   RIDGELINE_CUDA_BUILD_DIR  build directory (default: cuda_validation/build); the
#                             top-level project's build directory also works
#   RIDGELINE_JOBS            build jobs (default 16; 2 in a dry run)
#   RIDGELINE_PYTHON          Python with PyTorch (default: python3; /usr/bin/python3 in a dry run)
#   RIDGELINE_DEVICE          CUDA device ordinal (default 0)
#
# Exit status: 0 every part finished; 1 a part failed or ran out of time
# (its output is still there); 2 bad arguments.
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
usage() { echo "usage: $0 OUTDIR [--dry-run]" >&2; exit 2; }
[[ $# -ge 1 && $# -le 2 && "$1" != -* ]] || usage
out="$1"
dry=0
if [[ $# -eq 2 ]]; then
  [[ "$2" == --dry-run ]] || usage
  dry=1
fi
mkdir -p "$out" || { echo "run_device: cannot create $out" >&2; exit 2; }
out="$(cd "$out" && pwd)"
log="$out/run_device.log"
: >"$log"
say() { echo "run_device: $*" | tee -a "$log" >&2; }

# Budgets (s) per part; a dry run builds on 2 cores and runs toy sizes.
if [[ $dry == 1 ]]; then
  t_build=600; t_kernels=30; t_steps=120; steps_budget=90
  jobs="${RIDGELINE_JOBS:-2}"
  py="${RIDGELINE_PYTHON:-/usr/bin/python3}"
else
  t_build=120; t_kernels=150; t_steps=200; steps_budget=150
  jobs="${RIDGELINE_JOBS:-16}"
  py="${RIDGELINE_PYTHON:-python3}"
fi
device="${RIDGELINE_DEVICE:-0}"
build="${RIDGELINE_CUDA_BUILD_DIR:-$here/build}"
export CUDA_MODULE_LOADING=EAGER   # every kernel loaded up front: no lazy load inside a timed sample
failures=0
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }

# part NAME BUDGET_S COMMAND...: runs it under timeout, reports its time and status.
part() {
  local name="$1" budget="$2"
  shift 2
  say "[$(elapsed) s] part $name: budget ${budget} s"
  local t0=$(date +%s) rc=0
  # Progress shows as it happens and goes to the log; the status is timeout's.
  timeout -k 15 "$budget" "$@" 2>&1 | tee -a "$log"
  rc=${PIPESTATUS[0]}
  local took=$(( $(date +%s) - t0 ))
  if [[ $rc == 124 || $rc == 137 ]]; then
    say "[$(elapsed) s] part $name: stopped at its ${budget} s budget; what it measured is kept"
    failures=$((failures + 1))
  elif [[ $rc != 0 ]]; then
    say "[$(elapsed) s] part $name: failed with status $rc after ${took} s (see $log)"
    failures=$((failures + 1))
  else
    say "[$(elapsed) s] part $name: done in ${took} s"
  fi
  return $rc
}

have_gpu=0
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1 && have_gpu=1
if [[ $dry == 0 && $have_gpu == 0 ]]; then
  say "no GPU found (nvidia-smi -L failed); use --dry-run on a machine without one"
  exit 2
fi

{
  echo "# run_device.sh $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname)$([[ $dry == 1 ]] && echo ' [dry run]')"
  echo "# git: $(git -C "$here/.." rev-parse HEAD 2>/dev/null || echo unknown)"
  echo "# nvcc: $(command -v nvcc >/dev/null && nvcc --version | tail -1 || echo none)"
  echo "# python: $py: $("$py" -c 'import torch, sys; print(sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)' 2>&1 | tail -1)"
  echo "# CUDA_MODULE_LOADING=$CUDA_MODULE_LOADING"
  if [[ $have_gpu == 1 ]]; then echo "# nvidia-smi -q (before)"; nvidia-smi -q; fi
} >"$out/environment.txt" 2>&1

# 1. Build.
archs="${RIDGELINE_CUDA_ARCHS:-}"
if [[ -z "$archs" && $have_gpu == 1 ]]; then
  archs="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i "$device" 2>/dev/null | tr -d ' .' | head -1)"
fi
[[ -n "$archs" ]] || archs=90
# RIDGELINE_CUDA_BUILD_DIR may be the top-level project's build directory
# (CI's build/, which already built the suite): then it is only brought up to date.
if [[ -f "$build/CMakeCache.txt" ]] && grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$(cd "$here/.." && pwd)" "$build/CMakeCache.txt"; then
  bench="$build/cuda_validation/ridgeline_cuda_bench"
  build_cmd="cmake --build '$build' --target ridgeline_cuda_bench -j '$jobs'"
else
  bench="$build/ridgeline_cuda_bench"
  build_cmd="cmake -S '$here' -B '$build' -DCMAKE_BUILD_TYPE=Release '-DCMAKE_CUDA_ARCHITECTURES=$archs' >/dev/null && \
cmake --build '$build' --target ridgeline_cuda_bench -j '$jobs'"
fi
built=0
if command -v nvcc >/dev/null 2>&1 || [[ -x /usr/local/cuda/bin/nvcc ]]; then
  command -v nvcc >/dev/null 2>&1 || export PATH="/usr/local/cuda/bin:$PATH"
  say "building for sm ${archs} in ${build} (-j${jobs})"
  if part build "$t_build" bash -c "$build_cmd"; then
    built=1
  fi
else
  say "part build: skipped: no nvcc on this machine"
  [[ $dry == 0 ]] && failures=$((failures + 1))
fi

# 2. The CUDA quick suite.
if [[ $dry == 1 ]]; then
  if [[ $built == 1 ]]; then
    part kernels-list 10 "$bench" --list || true
  fi
  say "part kernels: skipped: dry run, no GPU here (ridgeline_cuda_bench needs one)"
elif [[ $built == 1 ]]; then
  part kernels "$t_kernels" "$bench" --quick --device "$device" --output "$out/cuda_kernels.json" || true
else
  say "part kernels: skipped: the build failed"
fi

# 3. The PyTorch step suite.
steps_args=(--out "$out" --budget-s "$steps_budget" --device "$device")
[[ $dry == 1 ]] && steps_args+=(--dry-run --label-gpu H200)
part steps "$t_steps" "$py" "$here/torch_steps.py" "${steps_args[@]}" || true

# One measurement file for calibrate and validate: the CUDA suite's header
# (clocks, driver) and both suites' records. Written from what exists.
"$py" - "$out" <<'PYEOF' 2>&1 | tee -a "$log" >&2 || failures=$((failures + 1))
import json, os, sys
out = sys.argv[1]
docs = [json.load(open(os.path.join(out, f))) for f in ("cuda_kernels.json", "torch_kernels.json")
        if os.path.exists(os.path.join(out, f))]
if docs:
    merged = {"schema": docs[0]["schema"], "header": docs[0]["header"],
              "records": [r for d in docs for r in d["records"]]}
    with open(os.path.join(out, "device_kernels.json"), "w") as f:
        json.dump(merged, f, indent=1)
        f.write("\n")
    print("run_device: device_kernels.json: %d records from %d file(s)" % (len(merged["records"]), len(docs)))
else:
    print("run_device: no kernel measurements to merge")
PYEOF

if [[ $have_gpu == 1 ]]; then
  { echo; echo "# nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE (after)"
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE; } >>"$out/environment.txt" 2>&1 || true
fi
say "[$(elapsed) s] finished with $failures part(s) failed or stopped; outputs:"
(cd "$out" && ls -l) | tee -a "$log" >&2
[[ $failures == 0 ]]
