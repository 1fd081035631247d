"""Typed training configs (a docstring under every field), loaded from YAML plus ``-c a.b=value``.

>>> cfg = TrainConfig.model_validate({"model": {"path": "tiny"}, "env": {"id": "Clarify-v0"}})
>>> apply_overrides(cfg.model_dump(), ["algo.name=ppo", "rollout.group_size=4"])["algo"]["name"]
'ppo'
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from agentgym.bounded_context import check_notes
from agentgym.llm.sampling import MaxTokens, SamplingSpec, Temperature
from agentgym.policies import POLICIES
from agentgym.train import config_yaml
from agentgym.train.algorithm import algorithm_names, get_algorithm
from agentgym.train.config_errors import one_line
from agentgym.train.credit import algo_fields, find_credit, get_credit
from agentgym.train.options import (
    BIG,
    GiGPOFields,
    GroupBaseline,
    PolicyGradientOptions,
    PPOOptions,
)

HARNESS_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TZ", "TERM", "PYTHONPATH")
"""The trainer's variables a harness program gets by default: none holds a key."""
VARIABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # every float is finite


PRECISION_DTYPES: dict[str, str] = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}
"""The dtype each ``model.precision`` computes in, as vLLM and the local engine name it."""


class LoraConfig(BaseModel):
    """LoRA adapters through peft (``pip install peft``)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # a misspelt key is an error

    r: int = Field(default=8, ge=1, le=65536)
    """Adapter rank."""
    alpha: int = Field(default=16, ge=1, le=2**31 - 1)
    """Scaling numerator (``alpha / r`` multiplies the adapter output)."""
    dropout: float = Field(default=0.0, ge=0.0, lt=1.0)
    """Dropout on the adapter input (0 keeps rollouts and training deterministic)."""
    target_modules: list[str] = ["q_proj", "k_proj", "v_proj", "o_proj"]
    """Module names to adapt (the Llama/Qwen attention projections by default)."""
    layers: list[Annotated[int, Field(ge=0, le=65536)]] | None = None
    """Adapt only these decoder layers (peft's ``layers_to_transform``; None: all). Adapting only
    the top layers also cuts the backward pass to those layers: nothing below needs gradients."""


class ModelConfig(_Strict):
    """Which causal LM to train, where, and how."""

    path: str
    """A checkpoint folder (``agentgym model init DIR`` makes a tiny one; a LoRA run's adapter
    folder), or a named offline model (``smollm2`` or ``hf:smollm2``). Never fetched from a model
    hub: a path that names nothing is an error."""
    device: str = "auto"
    """torch device: auto (cuda when present, else cpu), cpu, cuda, cuda:1, mps."""
    precision: Literal["auto", "fp32", "bf16", "fp16"] = "auto"
    """Autocast precision of rollouts and the forward pass over fp32 weights; auto: bf16 on a
    CUDA device, fp32 elsewhere. bf16/fp16 need a device that has them."""
    gradient_checkpointing: bool = False
    """Recompute activations in the backward pass (less memory, about a third more compute)."""
    lora: LoraConfig | None = None
    """Train LoRA adapters (peft) instead of all weights."""
    policy: str | None = None
    """A policy around the model that picks an adapter per turn, by name (``pa_moe``:
    ``agents/pa_moe``; :func:`agentgym.train.policy.register_policy`); None: the plain causal LM."""
    policy_options: dict[str, Any] = {}
    """Settings of ``policy`` (PA-MoE: the fields of ``PAMoEConfig``)."""


class EnvConfig(_Strict):
    """The environment and its task suites."""

    id: str
    """A registered env id (``Clarify-v0``, ``Household-v0``, ...)."""
    kwargs: dict[str, Any] = {}
    """Env options, the keywords of ``agentgym.make`` (e.g. ``sandbox: docker`` for Swe-v0),
    checked as ``--env-option`` is (``agentgym envs --options ID`` lists them)."""
    suite: str | None = None
    """Training suite (name or path); default: the env's default suite."""
    tags: list[str] = []
    """Keep only training tasks with all of these tags."""
    limit: int | None = Field(default=None, ge=1, le=BIG)
    """Keep only the first N training tasks."""
    eval_suite: str | None = None
    """Held-out suite for evaluation; None skips evaluation."""
    eval_tags: list[str] = []
    """Keep only evaluation tasks with all of these tags."""
    eval_limit: int | None = Field(default=None, ge=1, le=BIG)
    """Evaluate on the first N held-out tasks."""
    system_prompt: bool = True
    """Put the env's system prompt before the first observation (off saves tokens for tiny
    models when the observation already states the action syntax)."""

    @model_validator(mode="after")
    def _known_options(self) -> EnvConfig:
        from agentgym.env_options import check_env_options

        if self.kwargs:
            self.kwargs = check_env_options(self.id, self.kwargs)
        return self


ImportanceMode = Literal["none", "token", "sequence", "token_mask", "sequence_mask"]
"""How sampled tokens are weighted between sampler and learner (:mod:`agentgym.train.importance`)."""
StaleAction = Literal["drop", "correct"]
"""What becomes of an episode past ``rollout.max_staleness`` (:mod:`agentgym.train.staleness`)."""
RolloutMode = Literal["sync", "async"]
"""Whether the learner samples its own rollouts or a worker process samples beside it
(:mod:`agentgym.train.async_rollouts`)."""


class RolloutConfig(SamplingSpec, _Strict):
    """How episodes are sampled and how long they may run.

    A :class:`~agentgym.llm.sampling.SamplingSpec` itself (``max_tokens``, ``stop``,
    ``temperature``, ``top_p``, flat keys of this section as of an agent spec's query), resolved
    for the env as ``agentgym eval``'s agent resolves its own; only two defaults differ.
    """

    model_config = ConfigDict(frozen=False, extra="forbid", allow_inf_nan=False)

    tasks_per_step: int = Field(default=8, ge=1, le=BIG)
    """Distinct tasks per training step."""
    group_size: int = Field(default=8, ge=1, le=BIG)
    """Episodes per task (GRPO's group)."""
    max_turns: int = Field(default=8, ge=1, le=BIG)
    """Turn limit of an episode (the env's own limit may end it sooner)."""
    max_tokens: MaxTokens | None = 32
    """Tokens per action (None: the env's ``action_max_tokens``)."""
    temperature: Temperature = 1.0
    """Sampling temperature (1.0 keeps the recorded logprobs those of the policy itself)."""
    max_context_tokens: int = Field(default=4096, ge=16, le=BIG)
    """An episode whose context would exceed this ends with status ``limit``."""
    history: int | None = Field(default=None, ge=0, le=BIG)
    """Bounded context: every turn's prompt is the task, the last ``history`` steps, the
    observation and the admissible actions (``agentgym/bounded_context.py``), as the chat agent's
    ``?history=K`` builds it; needs ``algo.layout: step``. None: one growing chat."""
    notes: str | None = None
    """Notes in the bounded context (``household``), as the chat agent's ``?notes=NAME`` adds
    them (:data:`agentgym.bounded_context.NOTES`); needs ``history``."""
    max_batch_size: int = Field(default=64, ge=1, le=BIG)
    """Sequences per generation batch."""
    prefix_cache_mb: int = Field(default=2048, ge=0, le=BIG)
    """Keys and values of the episodes' earlier turns, kept so a later turn prefills only its
    new tokens. Cleared before every rollout batch (the weights change between); a policy with
    per-turn adapters (``model.policy``) never uses it. 0 turns it off."""
    engine: Literal["local", "vllm"] = "local"
    """What generates: ``local`` (transformers, the policy's own module) or ``vllm`` (the vllm
    extra: the engine is synced to the policy after every update, LoRA adapters or all weights,
    and the loss uses logprobs the trainer recomputes; the gap is logged every step)."""
    kv_cache_gb: float = Field(default=2.0, gt=0, le=1e6)
    """The engine's keys and values in GiB: vLLM's KV cache (on a CPU and a GPU alike); the local
    engine's running sequences and prefix cache together (sequences that do not fit wait)."""
    importance: ImportanceMode = "none"
    """Importance correction between the engine that sampled and the learner
    (:mod:`agentgym.train.importance`): ``token`` or ``sequence`` truncated IS, or
    ``token_mask`` / ``sequence_mask`` (over the cap: left out). Not none: the trainer recomputes
    the learner's logprobs of every rollout, on the local engine too."""
    importance_cap: float = Field(default=2.0, ge=1.0, le=1e6)
    """The largest importance weight (truncation), or the ratio above which a mask drops."""
    max_staleness: int | None = Field(default=None, ge=0, le=BIG)
    """Episodes whose oldest turn is more than this many policy versions (updates) behind the
    learner are dropped or corrected (``stale``); None: no bound, no staleness metrics."""
    stale: StaleAction = "drop"
    """What to do with an episode past ``max_staleness``: ``drop`` it before credit, or
    ``correct`` it (keep it, weighted by ``importance``, which must then not be none)."""
    mode: RolloutMode = "sync"
    """``sync``: the learner samples each step's rollouts, then trains. ``async``: a worker
    process with its own copy of the policy samples the next batches while the learner trains,
    takes the learner's weights after every update between two turns, and stamps each turn
    with the version that sampled it; the learner recomputes its logprobs of every rollout.
    It samples up to ``max(1, max_staleness)`` batches ahead (1 without a bound)."""
    backend: Literal["local", "ray"] = "local"
    """Where envs step: this process, or Ray actors."""
    address: str | None = None
    """Ray cluster address (None: start or join a local instance)."""
    num_workers: int = Field(default=2, ge=1, le=4096)
    """Ray env-worker actors."""
    harness: str | None = None
    """An agent program to train instead of the trainer's own chat loop (``"python my_agent.py"``):
    run once per episode against a recording gateway over the policy (:mod:`agentgym.harness`);
    rows are built from the token ids the gateway recorded. None: the trainer's own rollouts."""
    harness_parallel: int = Field(default=4, ge=1, le=1024)
    """Harness processes running at once."""
    harness_timeout_s: float = Field(default=600.0, gt=0, le=86_400)
    """Seconds one harness episode may take (then it is killed and counts as an error)."""
    harness_env: tuple[str, ...] = Field(default=HARNESS_ENV, max_length=256)
    """The trainer's environment variables a harness program gets (names; the rest, keys and
    tokens included, it does not see). It always gets ``AGENTGYM_EPISODE``, ``OPENAI_BASE_URL``
    (the gateway), ``TMPDIR`` (its private folder) and ``OMP_NUM_THREADS=1``."""

    @field_validator("harness_env")
    @classmethod
    def _variable_names(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        for name in names:
            if not VARIABLE_NAME.fullmatch(name):
                raise ValueError(
                    f"{name[:60]!r} is not an environment variable name: list names only "
                    "(letters, digits and _, not starting with a digit); values are the trainer's"
                )
        return names


class AlgoConfig(PolicyGradientOptions, PPOOptions, GiGPOFields, GroupBaseline):
    """The algorithm and its knobs: the union of the options models of the built-in algorithms
    and credit functions (:mod:`agentgym.train.options`, where each field, its default and its
    documentation are written once).

    The keys stay flat (one section for every algorithm), but each algorithm declares the ones
    it reads (``AlgorithmSpec.options``, plus its credit function's), and it receives only
    those, typed, as :attr:`view`. A field set to other than its default that the chosen
    algorithm does not read is an error when the config loads.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=False, validate_assignment=True, allow_inf_nan=False
    )

    name: str = "grpo"
    """A registered algorithm (:func:`agentgym.train.algorithm.register_algorithm`): sft, grpo
    (also Dr.GRPO/DAPO through the fields below), reinforce_pp, gigpo, ppo, or a plug-in's."""
    _credit_options: Any = PrivateAttr(default=None)
    _view: Any = PrivateAttr(default=None)

    @field_validator("name")
    @classmethod
    def _registered(cls, name: str) -> str:
        try:
            get_algorithm(name)
        except KeyError as e:
            raise ValueError(e.args[0]) from None
        return name

    @model_validator(mode="after")
    def _typed(self) -> AlgoConfig:
        """The chosen algorithm's view of this section, after checking that every setting is
        one it (or its credit function) reads, and its credit function's ``options``."""
        options = get_algorithm(self.name).options
        fn = None
        if "credit" in options.model_fields:
            try:
                fn = get_credit(self.credit) if self.credit else find_credit(self.name)
            except KeyError as e:
                raise ValueError(e.args[0]) from None
        reads = sorted({"name", *options.model_fields, *algo_fields(fn)})
        unread = [
            k
            for k in sorted(self.model_fields_set - set(reads))
            if getattr(self, k) != type(self).model_fields[k].default
        ]
        if unread:
            what = ", ".join(f"algo.{k}" for k in unread)
            raise ValueError(
                f"{what}: {self.name!r} does not read {'it' if len(unread) == 1 else 'them'}; "
                f"it reads {', '.join(reads)}"
            )
        self._typed_options(fn)
        self._view = options.model_validate({k: getattr(self, k) for k in options.model_fields})
        return self

    def _typed_options(self, fn: Any) -> None:
        model = getattr(fn, "options", None)
        credit = self.credit or self.name
        if model is None and self.options:
            raise ValueError(f"algo.options {sorted(self.options)}: {credit!r} takes no options")
        self._credit_options = None
        if model is not None:
            try:
                self._credit_options = model.model_validate(self.options)
            except ValidationError as e:
                raise ValueError(f"algo.options of {credit!r}: {one_line(e, model)}") from None

    @property
    def view(self) -> Any:
        """The fields the algorithm reads, as its options model (``AlgorithmSpec.options``),
        built when the config loads (and again if a field is assigned)."""
        return self._view

    @property
    def credit_options(self) -> Any:
        """``options`` as the credit function's typed model (None: it declares none)."""
        return self._credit_options


class OptimConfig(_Strict):
    """AdamW and batching."""

    lr: float = Field(default=1e-4, gt=0.0, le=1e3)
    """Learning rate."""
    weight_decay: float = Field(default=0.0, ge=0.0, le=1e6)
    """AdamW weight decay."""
    grad_clip: float = Field(default=1.0, ge=0.0)
    """Clip the gradient norm to this (0 disables)."""
    micro_batch_size: int = Field(default=8, ge=1, le=BIG)
    """Rows per forward/backward; gradients accumulate over the whole batch."""
    sort_by_length: bool = True
    """Form micro-batches from length-sorted rows (less padding; the loss is unchanged, its
    weights being fixed over the whole batch)."""


class SFTConfig(_Strict):
    """Supervised fine-tuning data (algo.name = sft)."""

    data: str = "expert"
    """``expert``: roll out the env's expert on the training tasks; or a JSONL of episodes
    (``agentgym export``) or chat rows (``{"messages": [...]}``)."""
    only_success: bool = True
    """Train on successful episodes only."""
    batch_size: int = Field(default=16, ge=1, le=BIG)
    """Episodes per optimiser step."""
    context_weight: float = Field(default=0.0, ge=0.0, le=1e6)
    """Weight of a language-modelling loss on the context tokens ("train on inputs"); helps
    models trained from scratch learn to copy from their context."""
    frozen_cache_gb: float = Field(default=4.0, ge=0.0, le=1e6)
    """Memory for the rows' hidden states below the first trainable layer (LoRA on the top
    layers only): computed once per row instead of every epoch. 0 turns the cache off."""


class TrainConfig(_Strict):
    """Everything one ``agentgym train`` run needs."""

    model: ModelConfig
    env: EnvConfig
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    algo: AlgoConfig = Field(default_factory=AlgoConfig)
    optim: OptimConfig = Field(default_factory=OptimConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    steps: int = Field(default=10, ge=0, le=BIG)
    """Optimiser steps (RL: one rollout batch each)."""
    seed: int = Field(default=0, ge=0, lt=2**63)
    """Seeds task order, sampling and env seeds: same config, same run."""
    out_dir: str = "runs/train"
    """Checkpoints go to OUT_DIR/step-N and OUT_DIR/final."""
    save_every: int = Field(default=0, ge=0, le=BIG)
    """Checkpoint every N steps (0: only at the end)."""
    resume: bool = True
    """Continue from the latest checkpoint in out_dir if there is one."""
    eval_every: int = Field(default=0, ge=0, le=BIG)
    """Evaluate on the held-out suite every N steps (0: only before and after)."""
    eval_temperature: float = Field(default=0.0, ge=0.0, le=100.0)
    """Sampling temperature of evaluation (0: greedy)."""
    eval_samples: int = Field(default=1, ge=1, le=BIG)
    """Episodes per held-out task."""
    db: str | None = None
    """SQLite store for metrics (a ``train_metrics`` table) and the run row; None: console only."""
    run_name: str = "train"
    """Name of the run in the store."""
    log_every: int = Field(default=1, ge=1, le=BIG)
    """Print metrics every N steps."""
    threads: int | None = Field(default=None, ge=1, le=4096)
    """torch.set_num_threads (None leaves torch's default)."""

    @model_validator(mode="after")
    def _resolve_auto(self) -> TrainConfig:
        if self.model.device == "auto":
            self.model.device = default_device()
        if self.model.precision == "auto":
            self.model.precision = default_precision(self.model.device)  # type: ignore[assignment]
        return self

    @model_validator(mode="after")
    def _bounded_context_rows(self) -> TrainConfig:
        if self.rollout.history is not None and self.algo.layout != "step":
            raise ValueError(
                "rollout.history (a bounded context) gives every turn its own prompt: set "
                "algo.layout=step (one row per turn), not episode"
            )
        if self.rollout.harness is not None and (
            self.rollout.history is not None
            or self.rollout.engine != "local"
            or self.model.policy is not None
        ):
            raise ValueError(
                "rollout.harness: the agent program builds its own prompts on the local engine; "
                "drop rollout.history, model.policy and rollout.engine vllm"
            )
        r = self.rollout
        if r.max_staleness is not None and r.stale == "correct" and r.importance == "none":
            raise ValueError(
                "rollout.stale correct weighs stale episodes by rollout.importance: set it to "
                "token, sequence, token_mask or sequence_mask, or use rollout.stale drop"
            )
        if r.mode == "async":
            self._async_fits()
        if self.rollout.notes is not None and self.rollout.history is None:
            raise ValueError("rollout.notes go in a bounded context: set rollout.history too")
        check_notes(self.rollout.notes)
        return self

    def _async_fits(self) -> None:
        """What an asynchronous rollout worker does not do, refused before anything loads."""
        r = self.rollout
        refused = [
            (
                not get_algorithm(self.algo.name).rollouts,
                f"algo.name {self.algo.name!r} has no rollouts",
            ),
            (r.harness is not None, "rollout.harness (harness rollouts sample in the learner)"),
            (r.engine != "local", "rollout.engine vllm (the worker samples on the local engine)"),
            (self.model.policy is not None, "model.policy (per-turn adapters)"),
        ]
        reasons = [why for bad, why in refused if bad]
        if reasons:
            raise ValueError(
                f"rollout.mode async does not run with {'; '.join(reasons)}: use rollout.mode sync"
            )

    @model_validator(mode="after")
    def _policy_fits(self) -> TrainConfig:
        if self.model.policy is None:
            return self
        try:
            options = getattr(POLICIES.get(self.model.policy), "options", None)
        except KeyError as e:
            raise ValueError(e.args[0]) from None
        if options is not None:  # the policy's settings, checked before anything loads
            try:
                options.model_validate(self.model.policy_options)
            except ValidationError as e:
                raise ValueError(
                    f"model.policy_options of {self.model.policy!r}: {one_line(e, options)}"
                ) from None

        if not get_algorithm(self.algo.name).logprobs_only:
            fit = [n for n in algorithm_names() if get_algorithm(n).logprobs_only]
            raise ValueError(
                f"model.policy {self.model.policy!r} picks an adapter per turn at rollout; "
                f"it trains with {', '.join(fit)}, not {self.algo.name}"
            )
        if self.model.lora is not None:
            raise ValueError(
                f"model.policy {self.model.policy!r} brings its own adapters: drop model.lora"
            )
        if self.rollout.engine == "vllm":
            raise ValueError(
                f"model.policy {self.model.policy!r} picks an adapter per turn, which "
                "rollout.engine vllm does not do: use rollout.engine local"
            )
        return self


def default_device() -> str:
    """``cuda`` when a GPU is present, else ``cpu`` (``model.device: auto``)."""
    import torch  # here, not at the top: loading a config needs no torch until it says auto

    return "cuda" if torch.cuda.is_available() else "cpu"


def default_precision(device: str) -> str:
    """bf16 autocast on a CUDA device, fp32 elsewhere (``model.precision: auto``)."""
    return "bf16" if device.startswith("cuda") else "fp32"


def set_dotted(data: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """Set ``data["a"]["b"]["c"] = value`` for ``key = "a.b.c"``, creating missing sections."""
    node = data
    *parents, leaf = key.split(".")
    for p in parents:
        if node.get(p) is None:
            node[p] = {}
        if not isinstance(node[p], dict):
            raise ValueError(f"{p!r} is not a section")
        node = node[p]
    node[leaf] = value
    return data


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    """Set ``a.b.c=value`` entries in a nested dict; values are parsed as YAML (1, true, [a])."""
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"override {_clip(item)} must look like key.sub=value")
        try:
            set_dotted(data, key.strip(), config_yaml.load(raw) if raw.strip() else None)
        except ValueError as e:
            raise ValueError(f"override {_clip(item)}: {e}") from None
        except yaml.YAMLError as e:
            raise ValueError(
                f"override {_clip(item)}: not valid YAML: {_yaml_problem(e)}"
            ) from None
    return data


def load_config(path: str | Path | None, overrides: list[str] | None = None) -> TrainConfig:
    """A config from a YAML file (or nothing) with dotted overrides applied, validated.

    Every problem raises one ``ValueError`` whose message is one line: the file or override
    each bad field came from, its dotted path, and what is allowed (:mod:`.config_errors`).
    """
    data: dict[str, Any] = {}
    if path is not None:
        p = Path(path)
        if not p.is_file():
            raise FileNotFoundError(f"no config file {p}")
        if p.stat().st_size > config_yaml.MAX_BYTES:
            raise ValueError(
                f"{p}: {p.stat().st_size:,} bytes; a config holds at most {config_yaml.MAX_BYTES:,}"
            )
        try:
            loaded = config_yaml.load(p.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as e:  # broken syntax, or a tag such as !!python/object
            raise ValueError(f"{p}: not a valid YAML config: {_yaml_problem(e)}") from None
        except config_yaml.ConfigTooLarge as e:  # an alias bomb, or nesting past the bound
            raise ValueError(f"{p}: too large a config: {e}") from None
        except UnicodeDecodeError as e:
            raise ValueError(f"{p}: not UTF-8 text ({e.reason} at byte {e.start})") from None
        if not isinstance(loaded, dict):
            raise ValueError(f"{p}: a config is a mapping of sections, got {type(loaded).__name__}")
        data = loaded
    try:
        return TrainConfig.model_validate(apply_overrides(data, overrides or []))
    except ValidationError as e:  # pydantic's text is four lines a problem: one line in all
        raise ValueError(one_line(e, TrainConfig, _source(path, overrides or []))) from None


def _source(path: str | Path | None, overrides: list[str]) -> Callable[[str, str], str]:
    """Where a bad field came from: the ``-c`` override that set it (or that the message names,
    for a check over a whole section), else the config file."""

    def source(where: str, message: str) -> str:
        for item in reversed(overrides):  # the last one set wins
            key = item.partition("=")[0].strip()
            if key == where or where.startswith(key + ".") or key in message:
                return f"override {_clip(item)}"
        return str(path) if path is not None else "config"

    return source


def _clip(text: str, limit: int = 80) -> str:
    """``repr(text)``, cut to ``limit`` characters: an override may be as long as the shell
    allows."""
    shown = repr(text[: limit + 1])
    return shown if len(text) <= limit else shown[:limit] + "...'"


def _yaml_problem(e: yaml.YAMLError) -> str:
    """PyYAML's several-line message as one clause: what went wrong and where."""
    if isinstance(e, yaml.MarkedYAMLError) and e.problem_mark is not None:
        mark = e.problem_mark
        return f"{e.problem} (line {mark.line + 1}, column {mark.column + 1})"
    return " ".join(str(e).split())
