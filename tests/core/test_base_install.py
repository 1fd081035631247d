"""A base install (``pip install .``, no extras) runs the README's first command, and every command
that needs an extra says which one in one line with exit code 2.

The test environment has every extra installed, so a missing one is simulated: the CLI runs in a
subprocess whose import system refuses the extra's modules as if they were not installed (a
``ModuleNotFoundError`` from a finder placed first on ``sys.meta_path``). ``.ci/run`` also runs the
Quick start in a real base install (``scripts/check-base-install.sh``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

BLOCKER = """
import importlib.abc, sys
BLOCKED = set(sys.argv.pop(1).split(","))
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None
sys.meta_path.insert(0, Missing())
from agentgym.cli import app
app(prog_name="agentgym")
"""


def agentgym_without(
    blocked: list[str], *args: str, cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``agentgym ARGS`` as if the modules ``blocked`` were not installed."""
    full_env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "200", **(env or {})}
    return subprocess.run(
        [sys.executable, "-c", BLOCKER, ",".join(blocked), *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=240,
    )


EXTRAS = [  # every optional module, as on `pip install .` with no extras
    "openai",
    "litellm",
    "fastapi",
    "uvicorn",
    "httpx",
    "torch",
    "transformers",
    "tokenizers",
    "yaml",
    "peft",
    "gguf",
    "ray",
    "docker",
    "openenv",
    "trl",
    "datasets",
]


def test_eval_and_report_print_without_any_extra(tmp_path):
    db = tmp_path / "runs.db"
    evaluated = agentgym_without(
        EXTRAS, "eval", "clarify/test", "-a", "expert", "--limit", "4", "--db", str(db), cwd=ROOT
    )
    assert evaluated.returncode == 0, evaluated.stderr
    assert "agentgym report" in evaluated.stdout and "expert (" in evaluated.stdout
    assert "1.000 [" in evaluated.stdout
    # --run goes through the viewer's store queries (training curves): no FastAPI needed either
    reported = agentgym_without(
        EXTRAS, "report", str(db), "--run", "expert on clarify/test", cwd=ROOT
    )
    assert reported.returncode == 0, reported.stderr
    assert "expert (" in reported.stdout


LLM = 'pip install ".[llm]"'
TRAIN = 'pip install torch==2.13.0 ".[llm,train]"'


@pytest.mark.parametrize(
    "args, blocked, says",
    [
        (["eval", "clarify/test", "-a", "openai:gpt-4o-mini"], ["openai"], LLM),
        (["eval", "clarify/test", "-a", "litellm:anthropic/claude-3-5-haiku"], ["litellm"], LLM),
        (["eval", "clarify/test", "-a", "hf:smollm2", "--limit", "1"], ["torch"], TRAIN),
        (["eval", "clarify/test", "-a", "llm", "--limit", "1"], ["torch"], TRAIN),
        (["train", "configs/clarify_sft.yaml"], ["torch"], TRAIN),
        (["model", "init", "{tmp}/tiny"], ["torch"], TRAIN),
        (["model", "fetch", "smollm2"], ["torch", "transformers", "gguf"], TRAIN),
        (["serve"], ["fastapi"], LLM),
        (["serve", "hf:smollm2"], ["torch"], TRAIN),
        (["view", "{tmp}/runs.db"], ["fastapi", "uvicorn"], LLM),
        (["env", "serve", "Clarify-v0"], ["openenv"], 'pip install ".[openenv]"'),
        (
            ["eval", "clarify/test", "-a", "expert", "--env", "openenv:http://127.0.0.1:9"],
            ["openenv"],
            'pip install ".[openenv]"',
        ),
    ],
)
def test_a_missing_extra_is_one_line_and_exit_2_before_any_download(tmp_path, args, blocked, says):
    cache = tmp_path / "cache"  # smollm2 is not fetched there: a fetch would print and download
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = agentgym_without(
        blocked, *args, cwd=ROOT, env={"AGENTGYM_CACHE": str(cache), "OPENAI_API_KEY": "sk-x"}
    )
    announced = "agentgym: no model given"  # `-a llm` says once which model it means
    lines = [ln for ln in result.stderr.strip().splitlines() if not ln.startswith(announced)]
    assert result.returncode == 2, result.stderr
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert says in lines[0] and blocked[0] in lines[0], lines[0]
    assert "fetching" not in result.stderr and not (cache / "models").exists()
    assert not (tmp_path / "tiny").exists()


def test_ray_is_refused_in_the_same_form_as_every_extra(tmp_path):
    result = agentgym_without(
        ["ray"], "eval", "clarify/test", "-a", "expert", "--backend", "ray", "--db",
        str(tmp_path / "r.db"), cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert lines == ['error: --backend ray needs ray, which is not installed: pip install ".[ray]"']


def test_sandbox_doctor_shows_install_hints_with_their_brackets(tmp_path):
    """Without the docker SDK and without bubblewrap on PATH, each row says what to install;
    ``[sandbox]`` is text, not rich markup that would vanish."""
    env = {"PATH": str(tmp_path), "COLUMNS": "400"}  # no bwrap, no debootstrap here
    result = agentgym_without(["docker"], "sandbox", "doctor", cwd=ROOT, env=env)
    assert result.returncode == 0, result.stderr
    rows = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if "│" in line}
    assert 'pip install ".[sandbox]"' in rows["docker engine"], rows
    assert "apt-get install -y bubblewrap" in rows["bubblewrap (local provider)"], rows
    assert "apt-get install -y debootstrap" in rows["debootstrap (--no-pull build)"], rows


def test_an_import_error_of_no_extra_is_still_a_traceback():
    from agentgym.extras import explain

    assert "torch==2.13.0" in str(explain(ModuleNotFoundError("x", name="torch.nn")))
    assert explain(ModuleNotFoundError("x", name="agentgym.nope")) is None  # a bug of ours
    assert explain(ImportError("cannot import name 'x' from 'torch'", name="torch")) is None
    assert explain(ModuleNotFoundError("x", name="no_such_dependency")) is None


CLONE_ROOT_LINES = """
import sys
if sys.argv[1] == "plain":  # as after a plain `pip install .`: no editable finder
    sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f).lower()]
else:
    import gymnasium
    gymnasium.make("agentgym:agentgym/Clarify-v0").close()  # imports agentgym itself
import agentgym
agentgym.make("Clarify-v0").close()
import agentgym.envs.clarify as m
help(m)
print(m.__file__)
"""


def clone_root_python(install: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-c", CLONE_ROOT_LINES, install],
        cwd=ROOT,
        env={**env, "PAGER": "cat"},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_python_started_in_the_clone_root_imports_the_clones_envs():
    """The README's lines work from the clone's root, where ``agentgym/`` (without ``envs/``)
    shadows any installed copy, once the clone is installed editable (``pip install -e .``, as
    ``scripts/dev-setup.sh`` does): its finder maps ``agentgym.envs`` to ``envs/``."""
    result = clone_root_python("editable")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(ROOT / "envs" / "clarify" / "__init__.py")


def test_a_plain_install_used_from_the_clone_root_imports_the_clones_envs():
    """Over a plain ``pip install .`` (no editable finder) the clone's own ``agentgym/`` maps its
    ``envs/`` through the source-tree finder, so the README's lines work there too."""
    result = clone_root_python("plain")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == str(ROOT / "envs" / "clarify" / "__init__.py")
    assert "failed to load" not in result.stderr


def test_ci_runs_the_quick_start_on_a_base_install_before_the_tests():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    check = lines.index("bash scripts/check-base-install.sh")
    assert check < lines.index("bash scripts/dev-setup.sh && python3 -m pytest")
    readme = (ROOT / "README.md").read_text()
    quick_start = readme.split("## Quick start", 1)[1].split("```bash\n", 1)[1].splitlines()[0]
    assert (
        quick_start == "pip install . && agentgym eval clarify/test --agent expert --agent random"
    )
