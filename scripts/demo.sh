#!/usr/bin/env bash
# Installs what is missing, builds the ridgeline program, and shows two answers:
#   1. a plan that fits and is worth running: Llama-3-8B pre-training on 8
#      H100 SXM at the layout `ridgeline search` ranks first (bf16, sequence
#      8192, 512K-token batches);
#   2. the plan that does not fit: the same model on one H100 (bf16, sequence
#      8192, micro-batch 1), with where the memory goes.
# Extra arguments go to both `ridgeline predict` runs. Exit status 0 when both
# answered (the second answers "does not fit" with status 1, which is an
# answer, not a failure).
set -uo pipefail
cd "$(dirname "$0")/.."
# Only the program: the tests and benchmarks are scripts/test.sh's.
RIDGELINE_TARGETS=ridgeline bash scripts/setup.sh || exit $?
bin=./build/ridgeline

echo "== 1. A plan that fits: Llama-3-8B on 8 H100s, at the best layout of"
echo "==    'ridgeline search --gpu h100_sxm --model llama3_8b --gpus 8 --global-batch 64 --seq 8192 --precision bf16'"
"$bin" predict --gpu h100_sxm --model llama3_8b --seq 8192 --global-batch 64 --precision bf16 \
  --tp 1 --pp 1 --dp 4 --cp 2 --micro-batch 1 --zero 2 --recompute none "$@"
rc=$?
[ $rc -eq 0 ] || { echo "demo: the plan that should fit exited with status $rc" >&2; exit $rc; }

echo
echo "== 2. A plan that does not fit: the same model on one H100 (AdamW's model state alone is 18 bytes per parameter under Megatron: fp32 main gradients)"
"$bin" predict --gpu h100_sxm --model llama3_8b --seq 8192 --micro-batch 1 --precision bf16 "$@"
rc=$?
[ $rc -le 1 ] || exit $rc
exit 0
