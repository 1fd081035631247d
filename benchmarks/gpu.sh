#!/usr/bin/env bash
# The SmolLM2 train demos at larger scale on one GPU (an H200: about 10 minutes), tables under one
# folder:
#
#   bash benchmarks/gpu.sh [OUT]          # default OUT: runs/gpu-<date>
#   TINY=1 MODEL=DIR bash benchmarks/gpu.sh OUT   # smoke settings (tests/test_train_gpu_script.py)
#   ENGINE=local bash benchmarks/gpu.sh           # rollouts on transformers instead of vLLM
#
# OUT/kbqa/tables.md      KBQA-R1: untrained vs RRS-SFT vs RRS-SFT + GRPO, compositional held out
# OUT/household/tables.md Household put/examine: untrained vs searcher SFT vs SFT + GiGPO
# OUT/*.log               the full console output; OUT/*/results.json per-episode records
#
# Each part has a wall-clock budget (KBQA_S, HOUSEHOLD_S seconds); a part cut short keeps the
# seeds it finished (tables.md is rewritten after every seed) and a rerun with the same OUT
# resumes it. The device is picked by the trainer (model.device auto: cuda, bf16 autocast).
# Rollouts and held-out evaluation run on vLLM (pip install ".[train,vllm-gpu]"; rollout.engine
# vllm, KV_CACHE_GB of GPU memory for its cache), LoRA adapters pushed after every update; the
# smoke settings default to ENGINE=local (the CPU test model's heads are too narrow for vLLM).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-runs/gpu-$(date +%Y%m%d-%H%M%S)}
MODEL=${MODEL:-smollm2}
mkdir -p "$OUT"
if [ "${TINY:-0}" = 1 ]; then
  COMMON=(--model "$MODEL" --model-layers 2 --lora-layers 1 --seeds 1 --sft-steps 1 --rl-steps 1
          --tasks-per-step 1 --group-size 2 --max-tokens 6 --max-context 512 --threads 1)
  KBQA=(--train-tasks 4 --eval-compositional 2 --eval-iid 1 --max-turns 2)
  HOUSEHOLD=(--eval-tasks 2 --max-turns 10)
  KBQA_S=${KBQA_S:-300}; HOUSEHOLD_S=${HOUSEHOLD_S:-300}
  ENGINE=${ENGINE:-local}
else
  COMMON=(--model "$MODEL" --lora-layers 30 --seeds 3 --sft-batch 16 --micro-batch 16
          --max-batch 256 --tasks-per-step 16 --max-context 2048 --threads 8)
  KBQA=(--sft-steps 150 --rl-steps 20 --group-size 5 --train-tasks 400 --eval-compositional 150
        --eval-iid 75 --max-turns 6)
  HOUSEHOLD=(--sft-steps 150 --rl-steps 20 --group-size 8 --eval-tasks 86 --max-turns 12
             --max-receptacles 10)
  KBQA_S=${KBQA_S:-300}; HOUSEHOLD_S=${HOUSEHOLD_S:-270}
  ENGINE=${ENGINE:-vllm}
fi
COMMON+=(--engine "$ENGINE" --kv-cache-gb "${KV_CACHE_GB:-16}")
status=0
timeout "$KBQA_S" python -m experiments.train_demo --env KBQA-v0 "${COMMON[@]}" "${KBQA[@]}" \
  --out "$OUT/kbqa" > "$OUT/kbqa.log" 2>&1 || status=$?
timeout "$HOUSEHOLD_S" python -m experiments.train_demo --env Household-v0 "${COMMON[@]}" \
  "${HOUSEHOLD[@]}" --out "$OUT/household" > "$OUT/household.log" 2>&1 || status=$?
for part in kbqa household; do
  echo "== $part"; cat "$OUT/$part/tables.md" 2>/dev/null || echo "(no seed finished)"
done
exit $status
