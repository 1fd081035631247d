"""Shared fixtures: a tiny local chat model and an `agentgym serve` server over it (built once)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory):
    """A ~0.3M-parameter chat model with a tokenizer trained here (no downloads)."""
    from agentgym.llm.tiny import TinyModelConfig, init_model

    return init_model(
        tmp_path_factory.mktemp("tiny"),
        TinyModelConfig(vocab_size=1024, hidden_size=64, intermediate_size=128),
    )


@pytest.fixture(scope="session")
def served(tiny_model):
    """`agentgym serve` for the tiny model, in a background thread; yields its /v1 URL."""
    from agentgym.llm.engine import LocalEngine
    from agentgym.llm.server import ServerThread, create_app

    server = ServerThread(create_app(LocalEngine(tiny_model), "tiny"))
    yield server.url
    server.stop()
