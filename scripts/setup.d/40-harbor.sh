#!/usr/bin/env bash
# Harbor (tests/integrations/test_integrations_harbor.py) needs Python 3.12+. Where agentgym's Python is older,
# harbor goes into a Python 3.12+ virtual environment at ~/.cache/agentgym/harbor-venv, which
# agentgym.integrations.harbor runs for Harbor's parsing. Idempotent.
set -euo pipefail
PY=${PYTHON:-python3}
VENV=${AGENTGYM_HARBOR_VENV:-$HOME/.cache/agentgym/harbor-venv}
SPEC='harbor>=0.25,<0.27'
if "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 12))'; then
    exit 0  # the harbor extra installed it beside agentgym
fi
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c 'import harbor' 2>/dev/null; then
    exit 0
fi
found=""
for candidate in python3.13 python3.12 "$HOME"/.pyenv/versions/3.1[2-9]*/bin/python; do
    if command -v "$candidate" >/dev/null 2>&1 \
        && "$candidate" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
        found=$(command -v "$candidate")
        break
    fi
done
if [ -z "$found" ]; then
    echo "harbor needs Python 3.12+ and none was found (python3.12, python3.13, pyenv)" >&2
    exit 1
fi
"$found" -m venv "$VENV"
"$VENV/bin/python" -m pip install -q "$SPEC"
