"""A SWE task is data: no option reaches git, no host path is read outside the allowed folders,
and a client of a served env names no host path at all."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from agentgym.envs.swe.config import GIT_ROOTS_VARIABLE, GitSource, SweConfig
from agentgym.envs.swe.env import SweEnv
from agentgym.envs.swe.repo import build_files
from agentgym.task import Task, tasks_from_client

GOLD = {"fail_to_pass": ["t.py::t"], "fix": [{"path": "a.py", "old": "", "new": ""}]}


def _checkout(root: Path) -> tuple[Path, str]:
    repo = root / "private"
    repo.mkdir(parents=True)
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    (repo / "secret.env").write_text("TOKEN=hunter2\n")
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
        cwd=repo,
        check=True,
    )
    head = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()
    return repo, head


@pytest.mark.parametrize("commit", ["--output=/tmp/x", "-o/tmp/x", "HEAD", "main", "abc"])
def test_a_commit_is_a_hex_id_never_an_option(commit, tmp_path):
    with pytest.raises(ValidationError, match="commit"):
        GitSource(path=str(tmp_path), commit=commit)


def test_the_option_injection_task_file_is_refused_and_touches_nothing(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    row = {
        "id": "evil",
        "env": "agentgym/Swe-v0",
        "instruction": "-",
        "config": {"git": {"path": str(tmp_path), "commit": f"--output={victim}"}},
        "gold": GOLD,
    }
    suite = tmp_path / "evil.jsonl"
    suite.write_text(json.dumps(row) + "\n")
    out = subprocess.run(
        [sys.executable, "-m", "agentgym.cli", "tasks", "validate", str(suite)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "commit" in out.stdout + out.stderr
    assert victim.read_text() == "keep me\n"


def test_a_checkout_is_read_only_inside_the_allowed_folders(tmp_path, monkeypatch):
    repo, head = _checkout(tmp_path / "host")
    config = SweConfig(git=GitSource(path=str(repo), commit=head))
    monkeypatch.delenv(GIT_ROOTS_VARIABLE, raising=False)
    with pytest.raises(ValueError, match="outside the folders allowed"):
        build_files(config)
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path / "elsewhere"))
    with pytest.raises(ValueError, match="outside the folders allowed"):
        build_files(config)
    link = tmp_path / "elsewhere"
    link.symlink_to(repo.parent)  # a link into the allowed folder does not widen it
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path / "allowed"))
    with pytest.raises(ValueError, match="outside the folders allowed"):
        build_files(SweConfig(git=GitSource(path=str(link / "private"), commit=head)))
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path / "host"))
    assert build_files(config)["secret.env"] == "TOKEN=hunter2\n"


def test_a_relative_checkout_path_is_refused(tmp_path):
    with pytest.raises(ValidationError, match="absolute"):
        GitSource(path="../..", commit="a" * 40)


@pytest.mark.parametrize("repo", ["../../..", "..", "toolz/../..", "/etc", ".hidden"])
def test_a_bundled_snapshot_is_named_never_a_path(repo):
    with pytest.raises(ValidationError, match="repo"):
        SweConfig(repo=repo)


@pytest.mark.parametrize("path", ["/etc/passwd", "../x.py", "a/../../x.py", "a\\..\\x.py"])
def test_repository_files_stay_inside_it(path):
    with pytest.raises(ValidationError, match="not a path inside the repository"):
        SweConfig(files={path: "x"})
    with pytest.raises(ValidationError, match="not a path inside the repository"):
        SweConfig(files={"a.py": "x"}, edits=[{"path": path, "old": "", "new": ""}])


def test_a_clients_task_names_no_host_checkout_even_where_the_host_allows_one(
    tmp_path, monkeypatch
):
    repo, head = _checkout(tmp_path / "host")
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path / "host"))
    task = Task(
        id="t",
        env="agentgym/Swe-v0",
        instruction="-",
        config={"git": {"path": str(repo), "commit": head}},
        gold=GOLD,
    )
    SweEnv.validate_task(task)  # the host's own task file may
    with tasks_from_client(), pytest.raises(ValidationError, match="a client's task may not"):
        SweEnv.validate_task(task)


def test_the_env_server_refuses_a_clients_host_checkout_before_building_anything(
    tmp_path, monkeypatch
):
    pytest.importorskip("openenv")
    from agentgym.integrations.openenv.server import AgentgymEnvironment, ServeSettings

    repo, head = _checkout(tmp_path / "host")
    monkeypatch.setenv(GIT_ROOTS_VARIABLE, str(tmp_path / "host"))
    session = AgentgymEnvironment(ServeSettings("agentgym/Swe-v0"))
    task = {
        "id": "t",
        "env": "agentgym/Swe-v0",
        "instruction": "-",
        "config": {"git": {"path": str(repo), "commit": head}},
        "gold": GOLD,
    }
    with pytest.raises(ValueError, match="a client's task may not"):
        session.reset(task=task)
    assert session.env is None  # refused before an env (and its sandbox) was built
