#!/usr/bin/env bash
# Commit a long run's snapshot (household_full snapshot) every EVERY seconds while it goes on,
# within what one session may submit.
#
#   bash experiments/commit_snapshots.sh OUT TO SINCE [BUDGET_MB] [EVERY] [CKPT_EVERY]  # repo root
#
# OUT: the run folder (/work/runs/household-rl); TO: its snapshot in the git tree
# (experiments/runs/household-rl); SINCE: the commit the work started from (what has landed);
# EVERY: seconds between snapshots (default 900), or `once`; CKPT_EVERY: the fewest seconds
# between two commits that carry newer checkpoints (default 3600).
#
# Why a budget: a session's commits may add up to at most 256 MiB of diff text, and a checkpoint
# (LoRA adapters, AdamW moments, RNG states, tokenizer: 19 MB) costs about 43 MiB of it each time
# it replaces the last one (the new files plus the old ones removed, binary patches in base85), so
# six RL steps snapshotted as they end are past the limit. One earlier try submitted too much
# and none of it landed. So the stores (episodes, metrics: a few hundred KB) are committed every
# time, and newer checkpoints at most every CKPT_EVERY seconds and only while the session's diffs
# since SINCE plus their own stay under BUDGET_MB (default 160); otherwise the checkpoints already
# committed are kept, and a session's end loses at most the steps since. A snapshot commit made
# right after another amends it, so checkpoints superseded within the session are not counted.
set -uo pipefail
OUT=$1 TO=$2 SINCE=$3 BUDGET_MB=${4:-160} EVERY=${5:-900} CKPT_EVERY=${6:-3600}
STORES=(":(exclude)$TO/eval" ":(exclude)$TO/train" ":(exclude)$TO/dagger")
SUBJECT="household-rl run snapshot"
last_checkpoints=""  # SECONDS at the last commit that carried checkpoints

mib() { echo $(($1 / 1048576)); }

# Sizes as the most literal count would take them: binary patches in full, renames not detected.
diff_bytes() { git "$1" -p --binary --no-renames "${@:2}" | wc -c; }

commit_once() {
    python -m experiments.household_full snapshot --out "$OUT" --to "$TO" >/dev/null
    git add -A -- "$TO"
    # A snapshot on top of the loop's own last one replaces it (amend): the checkpoints it carried and
    # that are now superseded then cost nothing.
    local base=HEAD amend=() used pending note
    if git log -1 --format=%s | grep -q "^$SUBJECT" && ! git merge-base --is-ancestor HEAD "$SINCE"; then
        base=HEAD~1 amend=(--amend)  # never a commit that has landed
    fi
    used=$(diff_bytes log "$SINCE".."$base")
    pending=$(diff_bytes diff --cached "$base" -- "$TO")
    note="session diffs $(mib $((used + pending))) MiB of $BUDGET_MB"
    if ! git diff --cached --quiet -- "$TO" "${STORES[@]}"; then
        if [ -n "$last_checkpoints" ] && [ $((SECONDS - last_checkpoints)) -lt "$CKPT_EVERY" ]; then
            note="checkpoints held (last committed $((SECONDS - last_checkpoints)) s ago)"
        elif [ "$(mib $((used + pending)))" -ge "$BUDGET_MB" ]; then
            note="checkpoints held (session diffs $(mib "$used") MiB, budget $BUDGET_MB)"
        else
            last_checkpoints=$SECONDS
        fi
        if [ "${note#checkpoints held}" != "$note" ]; then  # undo all but the stores
            git reset -q -- "$TO" "${STORES[@]}"
            git checkout -q -- "$TO" "${STORES[@]}"
            git clean -fdq -- "$TO" "${STORES[@]}"
        fi
    fi
    if ! git diff --cached --quiet -- "$TO"; then
        git commit -q "${amend[@]}" -m "$SUBJECT $(date -u +%H:%M) UTC: $note" -- "$TO"
        echo "$(date -u +%H:%M) committed${amend[*]:+ (amending the last snapshot)}: $note"
    fi
}

if [ "$EVERY" = once ]; then commit_once; exit; fi
while true; do
    commit_once || echo "$(date -u +%H:%M) snapshot failed; trying again in $EVERY s"
    sleep "$EVERY"
done
