#!/usr/bin/env bash
# The SmolLM2 train demos at larger scale on one GPU, tables under one folder:
#
#   bash benchmarks/gpu.sh [DIR]          # default DIR: runs/gpu-<date>
#   TINY=1 MODEL=DIR bash benchmarks/gpu.sh OUT   # smoke settings (tests/train/test_train_gpu_script.py)
#   ENGINE=local bash benchmarks/gpu.sh           # rollouts on transformers even where vLLM is
#
# On a lent GPU machine (the device tool's `run`), one call; first, here, in the repo's root:
#
#   python3 scripts/gpu_smoke_model.py                        # .gpu-model/: 8 MB, random weights
#   python3 scripts/gpu_wheelhouse.py --carry .gpu-model      # .whl/: 10 MB; checks the 64 MiB
#   run(command="KBQA_S=150 HOUSEHOLD_S=150 TINY=1 MODEL=.gpu-model RESULTS=$OUT bash benchmarks/gpu.sh /tmp/gpu",
#       carry=[".whl", ".gpu-model"], timeout_s=360)        # smoke: every step on CUDA
#   run(command="RESULTS=$OUT bash benchmarks/gpu.sh /tmp/gpu", carry=[".whl"], timeout_s=480)
#
# The second is the real run; it needs SmolLM2 on that machine, which no call can carry (its
# 93 MB wheel, beside the 41 MiB tree and the wheels, is over the 64 MiB a call carries): there
# the model is resolved first and its pip fetch refused, before any part runs.
#
# DIR/kbqa/tables.md      KBQA-R1: untrained vs RRS-SFT vs RRS-SFT + GRPO, compositional held out
# DIR/household/tables.md Household put/examine: untrained vs searcher SFT vs SFT + GiGPO
# DIR/*.log               the full console output; DIR/*/results.json per-episode records
# DIR/device.txt          the GPU's name (or cpu) and torch's version
# RESULTS=FOLDER          also copies those, flat, into FOLDER (7 files: the device tool brings
#                         back at most 8 from $OUT; DIR itself holds every checkpoint)
#
# Where agentgym does not import (the GPU image has torch, transformers, peft and accelerate but
# no pydantic or gymnasium) the wheels in $WHEELS (default .whl) are installed into $SITE
# (default /tmp/site) first and put on PYTHONPATH. $PYTHON (default python3) runs everything.
#
# Each part has a wall-clock budget (KBQA_S, HOUSEHOLD_S seconds: 200 each, so machine start,
# install, model, both parts and the copy fit 10 minutes; 300 each with TINY=1, for a loaded
# CPU); a part cut short keeps the seeds it finished (tables.md is rewritten after every seed)
# and a rerun with the same DIR resumes it. The device is picked by the trainer (model.device
# auto: cuda, bf16 autocast). Rollouts and held-out evaluation run on vLLM where it imports
# (KV_CACHE_GB of GPU memory for its cache; LoRA adapters pushed after every update), else on
# transformers (ENGINE=local); the smoke settings default to ENGINE=local (the CPU test model's
# heads are too narrow for vLLM).
set -uo pipefail
cd "$(dirname "$0")/.." || exit
DIR=${1:-runs/gpu-$(date +%Y%m%d-%H%M%S)}
MODEL=${MODEL:-smollm2}
PY=${PYTHON:-python3}
WHEELS=${WHEELS:-.whl}
SITE=${SITE:-/tmp/site}
mkdir -p "$DIR"

if ! "$PY" -c 'import agentgym' 2>/dev/null; then
  wheels=("$WHEELS"/*.whl)
  if [ ! -e "${wheels[0]}" ]; then
    echo "gpu.sh: agentgym does not import and $WHEELS has no wheels (scripts/gpu_wheelhouse.py)" >&2
    exit 1
  fi
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "${wheels[@]}" || { echo "gpu.sh: installing $WHEELS failed" >&2; exit 1; }
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
  "$PY" -c 'import agentgym' || { echo "gpu.sh: agentgym does not import after $WHEELS" >&2; exit 1; }
  echo "installed ${#wheels[@]} wheels from $WHEELS into $SITE"
fi
MODEL=$("$PY" -c 'import sys; from agentgym.llm.models import resolve_model_path as r
print(r(sys.argv[1], announce=False))' "$MODEL") || { echo "gpu.sh: no model $MODEL" >&2; exit 1; }
"$PY" -c 'import torch; print(torch.cuda.get_device_name() if torch.cuda.is_available() else "cpu",
"torch", torch.__version__)' | tee "$DIR/device.txt"

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
  if [ -z "${ENGINE:-}" ]; then
    if "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("vllm") is None)'
    then ENGINE=vllm; else ENGINE=local; fi
  fi
  KBQA_S=${KBQA_S:-200}; HOUSEHOLD_S=${HOUSEHOLD_S:-200}
fi
echo "engine: $ENGINE; model: $MODEL; budgets: kbqa ${KBQA_S}s, household ${HOUSEHOLD_S}s"
COMMON+=(--engine "$ENGINE" --kv-cache-gb "${KV_CACHE_GB:-16}")
status=0
timeout "$KBQA_S" "$PY" -m experiments.train_demo --env KBQA-v0 "${COMMON[@]}" "${KBQA[@]}" \
  --out "$DIR/kbqa" > "$DIR/kbqa.log" 2>&1 || status=$?
timeout "$HOUSEHOLD_S" "$PY" -m experiments.train_demo --env Household-v0 "${COMMON[@]}" \
  "${HOUSEHOLD[@]}" --out "$DIR/household" > "$DIR/household.log" 2>&1 || status=$?
for part in kbqa household; do
  echo "== $part"; cat "$DIR/$part/tables.md" 2>/dev/null || echo "(no seed finished)"
done
if [ -n "${RESULTS:-}" ]; then
  mkdir -p "$RESULTS" && cp "$DIR/device.txt" "$RESULTS/"
  for part in kbqa household; do
    cp "$DIR/$part.log" "$RESULTS/$part.log"
    for file in tables.md results.json; do
      [ -f "$DIR/$part/$file" ] && cp "$DIR/$part/$file" "$RESULTS/$part-$file"
    done
  done
fi
exit $status
