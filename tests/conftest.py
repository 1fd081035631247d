"""Shared fixtures: a tiny local chat model and an `agentgym serve` server over it (built once).

The suite runs on two pytest-xdist workers (pyproject's addopts: ``-n 2 --dist loadgroup``).
Each worker is one process on a 2-core machine, so a worker's torch and OpenMP use one thread
(set here before any test imports torch; subprocesses inherit it). A test module stays on one
worker (its module fixtures are built once); the modules that load a model of several GB, the
``heavy`` group, run one after another on the same worker, never two at once.
"""

from __future__ import annotations

import fcntl
import os
import sys

import pytest

if os.environ.get("PYTEST_XDIST_WORKER"):
    for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(_var, "1")
    if "torch" in sys.modules:  # a plugin imported it before this file: too late for the variable
        sys.modules["torch"].set_num_threads(int(os.environ["OMP_NUM_THREADS"]))


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the marks
def pytest_collection_modifyitems(config, items):
    """Every test without an ``xdist_group`` mark is grouped with its module (``--dist loadgroup``
    then keeps a module on one worker); under xdist, the groups holding ``slow`` tests are
    queued first, so the long ones start early and the short ones fill in around them."""
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(item.path.stem))  # unique: pytest needs it
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return

    def group(item) -> str:
        mark = item.get_closest_marker("xdist_group")
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))

    slow = {group(item) for item in items if item.get_closest_marker("slow") is not None}
    items.sort(key=lambda item: group(item) not in slow)  # stable: collection order otherwise


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A ~0.3M-parameter chat model with a tokenizer trained here (no downloads). Under xdist the
    workers share one, built by the first that needs it in the run's own temporary folder (its
    tokenizer takes about 15 s of CPU); no test writes into it."""
    from agentgym.llm.tiny import TinyModelConfig, init_model

    config = TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return init_model(tmp_path_factory.mktemp("tiny"), config)
    shared = tmp_path_factory.getbasetemp().parent  # this run's folder, above each worker's own
    folder = shared / "tiny"
    with open(shared / "tiny.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other worker waits for the one building it
        if not folder.is_dir():
            init_model(shared / "tiny.building", config)
            (shared / "tiny.building").rename(folder)
    return folder


@pytest.fixture(scope="session")
def served(tiny_model):
    """`agentgym serve` for the tiny model, in a background thread; yields its /v1 URL."""
    from agentgym.llm.engine import LocalEngine
    from agentgym.llm.server import ServerThread, create_app

    server = ServerThread(create_app(LocalEngine(tiny_model), "tiny"))
    yield server.url
    server.stop()
