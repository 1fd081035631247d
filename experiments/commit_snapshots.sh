#!/usr/bin/env bash
# Commit a long run's snapshot (household_full snapshot) every EVERY seconds while it goes on,
# within what one session may submit.
#
#   bash experiments/commit_snapshots.sh OUT TO SINCE [BUDGET_MB] [EVERY]    # at the repo's root
#
# OUT: the run folder (/work/runs/household-rl); TO: its snapshot in the git tree
# (experiments/runs/household-rl); SINCE: the commit this session started from (what has landed).
#
# Why a budget: a session's commits may add up to at most 256 MiB of diff text, and a checkpoint
# (LoRA adapters, AdamW moments, RNG states, tokenizer: 19 MB) costs about 43 MiB of it each time
# it replaces the last one (the new files plus the old ones removed, binary patches in base85), so
# six RL steps snapshotted as they end are past the limit. One try of issue 35 submitted too much
# and none of it landed. So the stores (episodes, metrics: a few hundred KB) are committed every
# time, and a newer checkpoint only while the session's diffs since SINCE plus its own stay under
# BUDGET_MB (default 160); past it the checkpoint already committed is kept.
set -uo pipefail
OUT=$1 TO=$2 SINCE=$3 BUDGET_MB=${4:-160} EVERY=${5:-900}
mib() { echo $(( $1 / 1048576 )); }

# Sizes as the most literal count would take them: binary patches in full, renames not detected.
diff_bytes() { git "$1" -p --binary --no-renames "${@:2}" | wc -c; }

commit_once() {
    python -m experiments.household_full snapshot --out "$OUT" --to "$TO" >/dev/null
    git add -A -- "$TO"
    used=$(diff_bytes log "$SINCE"..HEAD)
    pending=$(diff_bytes diff --cached -- "$TO")
    if [ "$(mib $((used + pending)))" -ge "$BUDGET_MB" ]; then
        # Keep the committed checkpoints: unstage and undo every change outside the stores.
        stores=(":(exclude)$TO/eval" ":(exclude)$TO/train" ":(exclude)$TO/dagger")
        git reset -q -- "$TO" "${stores[@]}"
        git checkout -q -- "$TO" "${stores[@]}"
        git clean -fdq -- "$TO" "${stores[@]}"
        note="checkpoints held (session diffs $(mib "$used") MiB, budget $BUDGET_MB)"
    else
        note="session diffs $(mib $((used + pending))) MiB of $BUDGET_MB"
    fi
    if ! git diff --cached --quiet -- "$TO"; then
        git commit -q -m "household-rl run snapshot $(date -u +%H:%M) UTC: $note" -- "$TO"
        echo "$(date -u +%H:%M) committed: $note"
    fi
}

if [ "$EVERY" = once ]; then commit_once; exit; fi
while true; do
    commit_once || echo "$(date -u +%H:%M) snapshot failed; trying again in $EVERY s"
    sleep "$EVERY"
done
