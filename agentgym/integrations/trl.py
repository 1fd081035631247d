"""TRL's ``GRPOTrainer`` on any agentgym env: multi-turn episodes through its ``rollout_func``.

TRL 1.16 meets environments two ways. ``environment_factory`` exposes an env's methods as tools,
so the policy must call tools through a tool-calling chat template; agentgym envs take text
actions, which any chat model writes. So this adapter uses ``rollout_func`` (TRL's path for
custom multi-turn rollouts, as its OpenEnv examples do): per call it plays one whole episode per
prompt through agentgym's one episode loop (``agentgym eval``'s chat agent in
:func:`agentgym.rollout.rollout`, recording by ``Episode.record_step``), the trainer's model
answering its requests (:mod:`agentgym.integrations.trl_chat`), and returns

- ``prompt_ids``: the first prompt, the chat ``agentgym eval``'s chat agent opens the episode
  with (the env's system prompt, its demonstration turns, the first observation), in the
  tokenizer's chat template;
- ``completion_ids``: every later token of the episode, in order: the tokens the model sampled
  for each action (sampled by the env's sampling spec: its token budget, and cut after the
  token that completes its stop, a newline for one-line actions) and, between them, the user
  turns: the env's observations, and the chat agent's format corrections;
- ``env_mask``: 1 on the model's own sampled tokens, 0 on the observation turns (TRL multiplies it
  into the loss mask, so observations are never trained on);
- ``logprobs``: each token's log-probability under the sampling distribution (0 on env tokens);
- ``env_reward``: the episode's total reward from the env, which :func:`env_reward` hands to TRL
  as the reward.

The pieces are token-exact (no text is tokenised again after sampling): the same chat pieces
(:class:`agentgym.train.chat.ChatFormat`) as agentgym's own trainer; a chat template that rewrites
history is refused (:data:`REWRITES_HISTORY`). Envs are made with :func:`agentgym.make`, so an ``openenv:http://HOST:PORT`` env id trains
through the OpenEnv server of any machine. The dataset (:func:`task_dataset`) has one row per task;
its ``prompt`` is the task id, which TRL repeats ``num_generations`` times per group.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass, field
from typing import Any

from agentgym.extras import require

require("agentgym.integrations.trl", "trl", "torch", "transformers", "datasets")

import torch  # noqa: E402

from agentgym.chat_agent import ChatAgent, ChatAgentConfig  # noqa: E402
from agentgym.episode import Episode  # noqa: E402
from agentgym.integrations.trl_chat import (  # noqa: E402
    GenerationBatch,
    OutOfBudget,
    Sample,
    TokenClient,
    rows,
)
from agentgym.llm.engine.request import Generation, finish, make_request  # noqa: E402
from agentgym.llm.sampling import SamplingSpec  # noqa: E402
from agentgym.registry import make, spec  # noqa: E402
from agentgym.rollout import rollout  # noqa: E402
from agentgym.task import Task, TaskSuite  # noqa: E402
from agentgym.train.chat import ChatFormat  # noqa: E402
from agentgym.traits import traits  # noqa: E402


@dataclass
class TrlEpisode:
    """One episode as TRL trains it, and agentgym's record of it (``record``, written by
    :meth:`Episode.record_step` as every loop writes its steps)."""

    record: Episode
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    sampled: list[tuple[int, int]] = field(default_factory=list)
    """``[start, end)`` of each turn's sampled tokens in ``completion_ids``."""
    done: bool = False

    @property
    def task_id(self) -> str:
        return self.record.task_id

    @property
    def seed(self) -> int:
        return int(self.record.seed or 0)

    @property
    def actions(self) -> list[str]:
        return [s.action for s in self.record.steps]

    @property
    def rewards(self) -> list[float]:
        return [s.reward for s in self.record.steps]

    @property
    def success(self) -> bool:
        return self.record.success

    @property
    def score(self) -> float:
        return self.record.score

    @property
    def reward(self) -> float:
        return float(self.record.reward)


def task_dataset(suite: str | TaskSuite, limit: int | None = None) -> Any:
    """A ``datasets.Dataset`` of the suite's tasks for ``GRPOTrainer(train_dataset=...)``: one row
    per task, ``prompt`` = the task id (the rollout builds the real prompt from the env)."""
    from datasets import Dataset

    tasks = TaskSuite.load(suite) if isinstance(suite, str) else suite
    chosen = tasks.tasks[:limit] if limit is not None else tasks.tasks
    return Dataset.from_dict({"prompt": [t.id for t in chosen], "task_id": [t.id for t in chosen]})


def env_reward(completions: list[Any], env_reward: list[float], **_: Any) -> list[float]:
    """The reward function to pass to ``GRPOTrainer``: the env's own episode reward."""
    return [float(r) for r in env_reward]


REWRITES_HISTORY = (
    "the tokenizer's chat template rewrites history (an earlier turn renders differently once "
    "later turns follow it, as Qwen3's drops a reply's <think> block): an episode is then one "
    "row per model call, and TRL's rollout_func takes one row per prompt (GRPO groups its "
    "rewards by row), so one growing row would train on contexts the model never read. Train "
    "with `agentgym train`, whose rollouts give such templates a row per call, or use a chat "
    "template that keeps history as it was sampled"
)
"""Why :class:`AgentgymRollout` refuses a chat template that rewrites history."""


class AgentgymRollout:
    """``rollout_func`` for ``GRPOTrainer``: plays one episode of ``env_id`` per prompt (a task
    id of ``suite``), all episodes of a call in one generation batch per turn.

    ``max_turns`` bounds an episode's actions, ``max_tokens`` one action (default: the env's
    ``action_max_tokens``, as ``agentgym eval``'s chat agent); TRL's ``max_completion_length`` its
    completion (sampled and observation tokens together): an episode whose next turn would not
    fit ends there, unfinished, with the reward it earned so far.
    """

    def __init__(
        self,
        env_id: str,
        suite: str | TaskSuite | None = None,
        max_turns: int = 8,
        env_kwargs: dict[str, Any] | None = None,
        system_prompt: bool = True,
        max_tokens: int | None = None,
    ) -> None:
        self.env_id = env_id
        self.cls = spec(env_id).load()
        name = suite if suite is not None else traits(self.cls).default_suite
        if name is None:
            raise ValueError(f"{env_id} has no default suite: pass suite=")
        self.suite = TaskSuite.load(name) if isinstance(name, str) else name
        self.max_turns = max_turns
        self.sampling = SamplingSpec(max_tokens=max_tokens).for_env(self.cls)
        """The env's sampling spec, as ``agentgym eval``'s chat agent resolves it: its token
        budget and its stop (a sampled action is cut at the stop, as every engine cuts it)."""
        self.max_tokens = self.sampling.max_tokens or 0
        self.agent_config = ChatAgentConfig(max_tokens=max_tokens, native_tools=False)
        """``agentgym eval``'s chat agent, actions as text (TRL samples by its own temperature)."""
        self.env_kwargs = dict(env_kwargs or {})
        self.use_system_prompt = system_prompt
        self.envs: list[Any] = []
        self.chat: ChatFormat | None = None
        self.episodes: list[TrlEpisode] = []
        """The episodes of the last call (what TRL trained on)."""

    # ------------------------------------------------------------------ TRL's entry point
    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        tokenizer = trainer.processing_class
        tokenizer = getattr(tokenizer, "tokenizer", tokenizer)  # a processor's tokenizer
        if self.chat is None:
            self.chat = ChatFormat(tokenizer, self.use_system_prompt)
        if self.chat.rewrites_history:
            raise ValueError(REWRITES_HISTORY)
        tasks = [self._task(p) for p in prompts]
        step = int(trainer.state.global_step)
        seeds = [_seed(trainer.args.seed, step, t.id, i) for i, t in enumerate(tasks)]
        self.episodes = self.play(tasks, seeds, trainer)
        return {
            "prompt_ids": [e.prompt_ids for e in self.episodes],
            "completion_ids": [e.completion_ids for e in self.episodes],
            "logprobs": [e.logprobs for e in self.episodes],
            "env_mask": [e.env_mask for e in self.episodes],
            "env_reward": [e.reward for e in self.episodes],
        }

    def _task(self, prompt: Any) -> Task:
        task_id = prompt if isinstance(prompt, str) else str(prompt[-1]["content"])
        return self.suite[task_id.strip()]

    def _env(self, slot: int) -> Any:
        while len(self.envs) <= slot:
            self.envs.append(make(self.env_id, **self.env_kwargs))
        return self.envs[slot]

    # ------------------------------------------------------------------ episodes
    def play(self, tasks: list[Task], seeds: list[int], trainer: Any) -> list[TrlEpisode]:
        """Play one episode per task through agentgym's one loop (a ChatAgent in
        :func:`~agentgym.rollout.rollout`, each episode in a thread of its own) with the
        trainer's model answering, all in flight together (:mod:`.trl_chat`)."""
        assert self.chat is not None
        budget = int(trainer.max_completion_length)
        batch = GenerationBatch(lambda samples: self._generate(samples, trainer), len(tasks))
        clients = [TokenClient(self.chat, batch, budget) for _ in tasks]
        records: list[Episode] = [Episode(task_id=t.id, env_id=self.env_id) for t in tasks]

        def episode(i: int) -> None:
            try:
                env = self._env(i)
                agent = ChatAgent(clients[i], env, self.agent_config)
                records[i] = rollout(env, agent, tasks[i], seed=seeds[i], max_steps=self.max_turns)
            finally:
                batch.leave()

        threads = [
            threading.Thread(target=episode, args=(i,), daemon=True) for i in range(len(tasks))
        ]
        for thread in threads:
            thread.start()
        batch.serve()
        for thread in threads:
            thread.join()
        for record, client in zip(records, clients, strict=True):
            if client.out_of_budget:  # ended by TRL's budget, not by a failure
                record.status, record.error = "limit", str(OutOfBudget.__doc__)
        failed = next((r for r in records if r.status == "error"), None)
        if failed is not None:  # TRL has no error episodes: never train on a reward not given
            raise RuntimeError(f"{self.env_id}: episode {failed.task_id} failed: {failed.error}")
        return [
            TrlEpisode(record, **rows(client), done=True)
            for record, client in zip(records, clients, strict=True)
        ]

    def _generate(self, samples: list[Sample], trainer: Any) -> list[Generation]:
        """Sample each context's continuation with the trainer's model (as TRL's own
        transformers path generates, by its generation config); each result is cut as every
        engine cuts it (:func:`finish`): after its first EOS, at its token budget, or after the
        token that completes its stop, with its logprobs."""
        contexts = [context for context, _ in samples]
        max_tokens = max(sampling.max_tokens or 1 for _, sampling in samples)
        import copy

        from trl.models import unwrap_model_for_generation

        tokenizer = self.chat.tokenizer  # type: ignore[union-attr]
        pad = tokenizer.pad_token_id
        width = max(map(len, contexts))
        input_ids = torch.tensor([[pad] * (width - len(c)) + c for c in contexts])
        attention = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts])
        device = trainer.accelerator.device
        config = copy.deepcopy(trainer.generation_config)
        config.max_new_tokens = max_tokens  # transformers' name
        config.output_scores = config.return_dict_in_generate = True
        eos = set(trainer.eos_token_ids)
        with (
            unwrap_model_for_generation(
                trainer.model_wrapped,
                trainer.accelerator,
                gather_deepspeed3_params=trainer.args.ds3_gather_for_generation,
                generation_kwargs=trainer.generation_kwargs,
            ) as model,
            torch.no_grad(),
        ):
            out = model.generate(
                input_ids=input_ids.to(device),
                attention_mask=attention.to(device),
                generation_config=config,
            )
        new = out.sequences[:, width:].cpu()
        logps = torch.stack([torch.log_softmax(s.float(), dim=-1) for s in out.scores], dim=1).cpu()
        results = []
        for row, (context, sampling) in enumerate(samples):
            ids, lps = [], []
            for t, token in enumerate(new[row].tolist()):
                ids.append(token)
                lps.append(float(logps[row, t, token]))
                if token in eos:
                    break
            request = make_request(context, sampling, None)
            request.keep_eos = True
            results.append(finish(tokenizer, request, ids, lps))
        return results


def _seed(run_seed: int, step: int, task_id: str, index: int) -> int:
    digest = hashlib.sha256(f"{run_seed}:{step}:{task_id}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def grpo_trainer(
    model: Any,
    env_id: str,
    args: Any,
    suite: str | TaskSuite | None = None,
    limit: int | None = None,
    max_turns: int = 8,
    env_kwargs: dict[str, Any] | None = None,
    max_tokens: int | None = None,
    **kwargs: Any,
) -> Any:
    """A ``GRPOTrainer`` on ``env_id``: the suite's tasks as its dataset, :class:`AgentgymRollout`
    as its ``rollout_func`` and :func:`env_reward` as its reward (``kwargs`` go to the trainer:
    ``processing_class``, ``peft_config`` ...)."""
    from trl import GRPOTrainer

    rollout = AgentgymRollout(env_id, suite, max_turns, env_kwargs, max_tokens=max_tokens)
    return GRPOTrainer(
        model=model,
        reward_funcs=env_reward,
        args=args,
        train_dataset=task_dataset(rollout.suite, limit),
        rollout_func=rollout,
        **kwargs,
    )
