#!/usr/bin/env bash
# The device run's dry run, as a test: cuda_validation/run_device.sh --dry-run
# on this CPU-only machine, then its outputs through the loaders and the
# engine. It lives in .ci/run (after scripts/test.sh, before the sanitizers)
# and not in the unit suite (ctest), which stays free of Python.
#
#   scripts/device_dry_run.sh [OUTDIR]
#
# Installs Debian's python3-torch (PyTorch 1.13, for /usr/bin/python3) only
# when missing. Uses build/ (RIDGELINE_BUILD_DIR) for `ridgeline`, and for the
# CUDA suite when nvcc exists (scripts/test.sh built it there; only brought up
# to date here). Fails on any error: a dry-run part that fails, an output file
# that a loader rejects, a row or record the engine cannot predict. On 2
# cores: about 10 s once build/ is up to date (PyTorch's import and the toy
# steps), 75 s with a fresh sm_90 build of the CUDA suite.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${RIDGELINE_BUILD_DIR:-build}"
out="${1:-$(mktemp -d -t ridgeline_device_dry_run.XXXXXX)}"

if ! dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed"; then
  echo "device_dry_run: installing python3-torch"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends python3-torch
fi
[ -x "$build/ridgeline" ] || cmake --build "$build" -j"${RIDGELINE_JOBS:-2}" --target ridgeline

# 1. The pipeline. run_device.sh exits non-zero when any part fails.
RIDGELINE_CUDA_BUILD_DIR="${RIDGELINE_CUDA_BUILD_DIR:-$build}" bash cuda_validation/run_device.sh "$out" --dry-run

# 2. Every file it promised is there.
for f in torch_steps.published.json torch_kernels.json device_kernels.json torch_steps.log.txt environment.txt run_device.log; do
  [ -s "$out/$f" ] || { echo "device_dry_run: $out/$f is missing or empty" >&2; exit 1; }
done

# 3. The rows: loaded, and every one predicted through the engine (none skipped).
vp="$out/validate_published.json"
"$build/ridgeline" validate-published "$out/torch_steps.published.json" --format json --output "$vp"
/usr/bin/python3 - "$vp" "$out/torch_steps.published.json" <<'EOF'
import json, sys
report, rows = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))["rows"]
results = {r["id"]: r for r in report["rows"]}
if len(rows) < 8:
    sys.exit("device_dry_run: only %d rows (expected the 11 configurations PyTorch 1.13 can run)" % len(rows))
# Skips that are the engine's answer about a plan, not a fault of the rows:
# "torch-eager" is not one of Ridgeline's framework profiles, and validation
# maps it (by the word "eager") to hf, whose recompute choices are none and
# full: a selective-checkpointing row is refused until a plain-PyTorch
# profile exists. Printed every time; any other skip fails.
KNOWN_GAPS = ["plan rejected: recompute: hf offers recompute none, gradient_checkpointing (full); "
              "selective is not one of them"]
for row in rows:
    # The profiler's step, grouped into Ridgeline's kernel classes: GEMMs at least.
    per_class = row["measured"].get("kernel_time_s") or {}
    if not per_class.get("gemm", 0) > 0:
        sys.exit("device_dry_run: %s has no GEMM time in measured.kernel_time_s: %s" % (row["id"], per_class))
    r = results.get(row["id"])
    if r is None:
        sys.exit("device_dry_run: row %s is missing from validate-published's report" % row["id"])
    if r["status"] != "predicted":
        if r.get("reason") in KNOWN_GAPS:
            print("device_dry_run: known gap: %s skipped: %s" % (row["id"], r["reason"]))
            continue
        sys.exit("device_dry_run: validate-published skipped %s: %s" % (row["id"], r.get("reason")))
    if r["profile"] != "h200" or r["comparison"]["quantity"] != "iteration_time_s":
        sys.exit("device_dry_run: %s predicted on %s for %s, expected h200 and iteration_time_s" % (
            row["id"], r["profile"], r["comparison"]["quantity"]))
print("device_dry_run: validate-published predicted the %d rows" % len(rows))
EOF

# 4. The kernels: loaded, calibrated and validated against the H200 profile
#    (--force: the dry run's device is this CPU, not an H200).
"$build/ridgeline" validate --gpu h200 --measurements "$out/device_kernels.json" --force --holdout 0 \
  --format json --output "$out/validate.json"
"$build/ridgeline" calibrate --gpu h200 --measurements "$out/device_kernels.json" --force --holdout 0 \
  --output "$out/h200.dry_run.yaml"
"$build/ridgeline" check "$out/h200.dry_run.yaml" >/dev/null
grep -q "attention_efficiency" "$out/h200.dry_run.yaml" || {
  echo "device_dry_run: the SDPA records did not fit attention_efficiency" >&2; exit 1; }
echo "device_dry_run: ok ($out)"
