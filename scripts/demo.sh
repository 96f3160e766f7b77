#!/usr/bin/env bash
# Installs, builds and predicts the shipped default: Llama-3-8B on one H100 SXM,
# bf16, sequence 8192, micro-batch 1. Extra arguments go to `ridgeline predict`.
# Exit status 1 from predict means "does not fit", which is an answer, not a failure.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh || exit $?
./build/ridgeline predict --gpu h100_sxm --model llama3_8b --seq 8192 --micro-batch 1 --precision bf16 "$@"
rc=$?
[ $rc -eq 1 ] && exit 0
exit $rc
