#!/usr/bin/env bash
# Regenerates the example capacity-planning reports under reports/ (NAME.md,
# NAME.html, NAME.json) with the current build, and the screenshot of one of
# them (reports/llama3_70b_pretrain.png, taken by headless Chromium). Review
# the diff before committing: a changed number is a changed prediction. The
# unit tests rerun the command stored in each report's JSON and fail when a
# committed report differs from what the build writes.
#
# Usage: scripts/regen_reports.sh        (RIDGELINE_BIN overrides build/ridgeline)
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${RIDGELINE_BIN:-build/ridgeline}

# name | arguments of `ridgeline report` (the question each report answers)
examples=(
  # Llama-3-8B fine-tune, LoRA on one H100: rank-16 adapters on every linear layer, 500M tokens.
  "llama3_8b_lora_1xh100|--gpu h100_sxm --model llama3_8b --plan plans/lora_finetune.yaml --tokens 500M"
  # The same fine-tune with every weight trained: does not fit on one H100, so the best layout on 8.
  "llama3_8b_full_finetune_8xh100|--gpu h100_sxm --model llama3_8b --plan plans/lora_finetune.yaml --finetune full --precision bf16 --gpus 8 --tokens 500M"
  # Llama-3-70B pre-training as Meta did: 15T tokens, 8K context, bf16, 16M-token batches, 512 H100s.
  "llama3_70b_pretrain|--gpu h100_sxm --model llama3_70b --gpus 512 --global-batch 2048 --seq 8192 --precision bf16 --tokens 15T"
  # GPT-3 175B as in Korthikanti et al. 2022 (Table 5): 64 A100-80GB, TP8 PP8 interleaved x3, SP, selective
  # recomputation, no FlashAttention, global batch 64 of 2048 tokens; 300B tokens as GPT-3. Measured: 13.75 s per step.
  "gpt3_175b_korthikanti|--gpu a100_sxm_80gb --model korthikanti_175b --tp 8 --pp 8 --vpp 3 --sp --micro-batch 1 --global-batch 64 --seq 2048 --recompute selective --attention naive --attention-flops full --tokens 300B"
  # A budget instead of a token count: what does $2M buy on 512 H100s, and what model size is compute-optimal for it?
  "llama3_70b_budget_2m_usd|--gpu h100_sxm --model llama3_70b --gpus 512 --global-batch 2048 --seq 8192 --precision bf16 --budget-usd 2000000"
)

mkdir -p reports
rm -f reports/*.md reports/*.html reports/*.json
for e in "${examples[@]}"; do
  name=${e%%|*}
  args=${e#*|}
  set +e
  # shellcheck disable=SC2086
  "$bin" report $args --output "reports/$name"
  rc=$?
  set -e
  # 1 = the configuration does not fit: still a report, and an answer.
  [ $rc -le 1 ] || { echo "regen_reports: $name failed with status $rc" >&2; exit 1; }
done

shots=$(mktemp -d)
trap 'rm -rf "$shots"' EXIT
if bash tests/browser/check_reports.sh --require --screenshot-dir "$shots" reports/llama3_70b_pretrain.html; then
  cp "$shots/llama3_70b_pretrain.png" reports/llama3_70b_pretrain.png
  echo "reports/llama3_70b_pretrain.png"
else
  echo "regen_reports: no screenshot (headless Chromium missing or the check failed); reports/*.png left as they were" >&2
fi
