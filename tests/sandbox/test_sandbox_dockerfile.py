"""Which Dockerfiles our sandbox image stands in for, and the files they put in the container."""

from __future__ import annotations

import pytest

from agentgym.sandbox.dockerfile import ImageNeeded, read_container, satisfied


def test_run_lines_that_install_only_what_the_image_has():
    assert satisfied("apt-get update && apt-get install -y --no-install-recommends git python3")
    assert satisfied("pip install --no-cache-dir pytest==8.4.1 && rm -rf /var/lib/apt/lists/*")
    assert satisfied("python3 -m pip install -q 'pytest>=8' ; uv pip install --system pytest")
    assert not satisfied("pip install numpy")
    assert not satisfied("apt-get install -y nodejs")
    assert not satisfied("pip install -r requirements.txt")
    assert not satisfied("make install")
    assert not satisfied("echo 'unbalanced")


def test_copies_land_under_the_workdir(tmp_path):
    (tmp_path / "src" / "pkg").mkdir(parents=True)
    (tmp_path / "src" / "pkg" / "a.py").write_text("A = 1\n")
    (tmp_path / "notes.txt").write_text("hi\n")
    (tmp_path / "Dockerfile").write_text(
        "# a comment\nFROM --platform=linux/amd64 python:3.12-slim AS base\n"
        "RUN pip install --no-cache-dir \\\n    pytest==8.4.1\n"
        "WORKDIR /app\nCOPY src/ .\nCOPY notes.txt /app/docs/\nADD notes.txt README\n"
    )
    box = read_container(tmp_path)
    assert box.workdir == "/app"
    assert box.files == {
        "/app/pkg/a.py": "A = 1\n",
        "/app/docs/notes.txt": "hi\n",
        "/app/README": "hi\n",
    }


@pytest.mark.parametrize(
    "dockerfile,named",
    [
        ("FROM node:20\nWORKDIR /app\n", "FROM node:20"),
        ("FROM python:3.12\nRUN pip install numpy\n", "RUN pip install numpy"),
        ("FROM python:3.12\nENV A=1\n", "ENV A=1"),
        ("FROM python:3.12\nCOPY --from=builder /x /x\n", "COPY --from=builder"),
        ("FROM python:3.12\nCOPY ../secret /app/\n", "COPY ../secret"),
    ],
)
def test_anything_else_needs_its_own_image(tmp_path, dockerfile, named):
    (tmp_path / "Dockerfile").write_text(dockerfile)
    with pytest.raises(ImageNeeded, match=named.replace("=", ".")):
        read_container(tmp_path)
