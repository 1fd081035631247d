#!/usr/bin/env bash
# The README's first command on a base install, as a new user runs it: a fresh virtual environment,
# the Quick start command exactly as the README writes it (`pip install .` with no extras, then the
# eval), from the clone's root. Checks that the report is printed with the expert at 1.000 on 200
# episodes, and that an agent needing an extra is refused in one line with exit code 2.
# The store the command writes (agentgym.db in the clone's root) is removed afterwards; one that was
# there before is set aside and put back, so the command starts from nothing and resumes nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
work=$(mktemp -d)
saved=()
restore() {
    rm -f agentgym.db agentgym.db-wal agentgym.db-shm runs.db runs.db-wal runs.db-shm
    for f in "${saved[@]}"; do mv "$work/$f" "$f"; done
    rm -rf "$work"
}
trap restore EXIT
for f in agentgym.db agentgym.db-wal agentgym.db-shm runs.db runs.db-wal runs.db-shm; do
    if [ -e "$f" ]; then mv "$f" "$work/$f" && saved+=("$f"); fi
done
fail() { echo "base install: $*" >&2; exit 1; }

# The first command of the Quick start, read from the README (the first line of its first bash block).
cmd=$(awk '/^## Quick start/ {q = 1} q && /^```bash/ {getline; print; exit}' README.md)
[[ "$cmd" == "pip install . && agentgym eval "* ]] || fail "README's Quick start command is not 'pip install . && agentgym eval ...': $cmd"
echo "base install: $cmd"

"$PY" -m venv "$work/venv"
# shellcheck disable=SC1091
source "$work/venv/bin/activate"
start=$SECONDS
if ! bash -c "$cmd" >"$work/out" 2>"$work/err"; then
    tail -n 40 "$work/err" >&2
    fail "the Quick start command failed (above: the end of its stderr)"
fi
# The expert's 'all' row: 200 episodes, success 1.000 (table borders are unicode or ascii).
grep -Eq 'expert \([0-9a-f]{8}\)[^0-9]+all[^0-9]+200[^0-9]+1\.000 \[' "$work/out" || {
    cat "$work/out" >&2
    fail "no report with the expert at 1.000 over 200 episodes"
}
grep -Eq 'random \([0-9a-f]{8}\)[^0-9]+all[^0-9]+200 ' "$work/out" || fail "no report row for random"
echo "base install: report printed, expert 1.000 on 200 episodes ($((SECONDS - start)) s with the install)"

# The README's Python example (its first python block), run from the clone's root as a user would
# right after the Quick start: the clone's agentgym/ comes first on sys.path there, and must still
# reach envs/, agents/, sandbox/ and tasks/ (agentgym/source_tree.py). Then the same after `pip
# install -e .`, the install a contributor makes.
awk '/^```python/ {p = 1; next} p && /^```/ {exit} p' README.md >"$work/example.py"
[ -s "$work/example.py" ] || fail "README has no python block"
for install in "." "-e ."; do
    if [ "$install" = "-e ." ]; then pip install -q --no-deps -e . >"$work/pip-e" 2>&1 || { cat "$work/pip-e" >&2; fail "pip install -e . failed"; }; fi
    python - <"$work/example.py" >"$work/py-out" 2>&1 || { cat "$work/py-out" >&2; fail "README's Python example failed from the clone's root after pip install $install"; }
    echo "base install: README's Python example ran from the clone's root after pip install $install"
done

# An agent that needs an extra: one line naming it, exit code 2, no traceback.
set +e
agentgym eval clarify/test -a openai:gpt-4o-mini --db "$work/extra.db" >"$work/out2" 2>"$work/err2"
rc=$?
set -e
lines=$(grep -c . "$work/err2" || true)
if [ "$rc" -ne 2 ] || [ "$lines" -ne 1 ] || ! grep -q 'pip install ".\[llm\]"' "$work/err2"; then
    cat "$work/err2" >&2
    fail "-a openai:gpt-4o-mini on a base install: exit $rc, $lines line(s); expected one line naming .[llm] and exit 2"
fi
echo "base install: -a openai:gpt-4o-mini refused: $(cat "$work/err2")"
