"""Which optional extra installs a module, and the one-line refusal when it is missing.

A base install (``pip install .``) runs the envs, ``evaluate()`` and ``eval``/``play``/``report``/
``export`` with the scripted agents. Everything else needs an extra (README, "What each part
needs"); a command that needs one says which, in one line, before it downloads or starts anything.
"""

from __future__ import annotations

import importlib

LLM = '".[llm]"'
TRAIN = 'torch==2.13.0 ".[llm,train]"'  # the pinned CPU torch: an unpinned one pulls CUDA builds
INSTALL: dict[str, str] = {
    "openai": LLM,
    "litellm": LLM,
    "fastapi": LLM,
    "uvicorn": LLM,
    "httpx": LLM,
    "torch": TRAIN,
    "transformers": TRAIN,
    "tokenizers": TRAIN,
    "safetensors": TRAIN,
    "yaml": TRAIN,
    "peft": TRAIN,
    "gguf": TRAIN,
    "accelerate": TRAIN,
    "scipy": TRAIN,
    "ray": '".[ray]"',
    "docker": '".[sandbox]"',
    "openenv": '".[openenv]"',
    "trl": 'torch==2.13.0 ".[llm,train,trl]"',
    "datasets": 'torch==2.13.0 ".[llm,train,trl]"',
    "textarena": '".[textarena]"',
    "skyrl_gym": '".[skyrl]"',
    "inspect_ai": '".[inspect]"',
    "verifiers": '".[verifiers]" -e environments/agentgym_env',
}
"""Top-level module -> what to pip install (from the clone) to get it."""


class MissingExtra(ImportError):
    """A module of an optional extra is not installed; the message is one line saying what to
    install."""

    def __init__(self, message: str, modules: list[str]) -> None:
        super().__init__(message)
        self.modules = modules


def missing(*modules: str) -> list[str]:
    """The given top-level modules that do not import here.

    They are imported, not just looked up: the command that asks is about to use them anyway,
    and an import is what tells a missing package from one that is present.
    """
    gone = []
    for m in modules:
        try:
            importlib.import_module(m)
        except ModuleNotFoundError as e:
            if (e.name or "").split(".")[0] != m:
                raise  # the package is there but one of its own dependencies is not: show it
            gone.append(m)
    return gone


def refusal(what: str, modules: list[str]) -> MissingExtra:
    """``WHAT needs torch, which is not installed: pip install torch==2.13.0 ".[llm,train]"``."""
    installs = list(dict.fromkeys(INSTALL.get(m, m) for m in modules))
    verb = "is" if len(modules) == 1 else "are"
    return MissingExtra(
        f"{what} needs {', '.join(modules)}, which {verb} not installed: pip install "
        f"{' '.join(installs)}",
        modules,
    )


def require(what: str, *modules: str) -> None:
    """Raise :class:`MissingExtra` naming the extra when any of ``modules`` is missing."""
    gone = missing(*modules)
    if gone:
        raise refusal(what, gone)


def explain(error: ImportError, what: str | None = None) -> MissingExtra | None:
    """An import error for a module of an extra as a :class:`MissingExtra` saying what needs it
    (None for any other import error: that one is a bug to show in full)."""
    if isinstance(error, MissingExtra):
        return error if what is None else refusal(what, error.modules)
    name = (getattr(error, "name", None) or "").split(".")[0]
    if not isinstance(error, ModuleNotFoundError) or name not in INSTALL:
        return None
    return refusal(what or "this command", [name])
