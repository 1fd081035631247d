"""SFT: next-token loss on the actions of expert (or any stored) trajectories.

Trajectories become :class:`TokenEpisode` rows through the same chat format the rollouts use,
so the policy is trained on exactly the token layout it will act in: the prompt, then each action
(ending with the template's end-of-turn token, which the policy must learn to emit) with loss,
then the observation turn without. Sources: the env's expert on the training tasks, agentgym
episode JSONL (``agentgym export``), or chat rows (``{"messages": [...]}``), whose assistant turns
may carry OpenAI's fine-tuning ``"weight": 0`` (context only, no loss; early experience's rows).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from agentgym.agent import ExpertAgent
from agentgym.episode import Episode
from agentgym.rollout import rollout
from agentgym.task import Task
from agentgym.train.algorithm import AlgorithmSpec
from agentgym.train.batch import Batch
from agentgym.train.chat import ChatFormat
from agentgym.train.episode import TokenEpisode, Turn
from agentgym.train.frozen import FrozenPrefix
from agentgym.train.losses import weighted
from agentgym.train.policy import token_logprobs

if TYPE_CHECKING:
    from agentgym.train.config import TrainConfig


# ============================================================================ data
def expert_episodes(env: Any, tasks: Iterable[Task], seed: int = 0) -> list[Episode]:
    """The env's expert on every task (one episode each)."""
    return [rollout(env, ExpertAgent(env), task, seed=seed) for task in tasks]


def from_messages(
    chat: ChatFormat, messages: Sequence[dict[str, Any]], group: str = ""
) -> TokenEpisode:
    """A chat (system?, user, assistant, user, assistant, ...) as a token episode; an assistant
    turn with ``"weight": 0`` stays in the context without loss and without a turn."""
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    turns = messages[1:] if system else messages
    if not turns or turns[0]["role"] != "user":
        raise ValueError("a chat for SFT must start with a user turn (after an optional system)")
    ep = TokenEpisode(episode=Episode(task_id=group, env_id=""), group=group)
    ep.extend(chat.prompt(system, turns[0]["content"]), mask=0)
    ep.prompt_len = len(ep.ids)
    state = turns[0]["content"]
    for i, m in enumerate(turns[1:], start=1):
        if m["role"] == "assistant":
            start = len(ep.ids)
            ep.extend(chat.action(str(m["content"] or "")), mask=1)
            ep.turns.append(Turn(start, len(ep.ids), len(ep.ids), len(ep.ids), 0.0, state))
        elif m["role"] in ("user", "tool"):
            if turns[i - 1]["role"] != "assistant":
                raise ValueError(f"message {i}: two observations in a row")
            ep.extend(chat.observation(str(m["content"]), action_ended_with_eos=True), mask=0)
            state = str(m["content"])
            last = ep.turns[-1]
            ep.turns[-1] = Turn(
                last.action_start,
                last.action_end,
                last.action_end,
                len(ep.ids),
                0.0,
                last.state_key,
            )
    _drop_unweighted(ep, [m.get("weight", 1) for m in turns if m["role"] == "assistant"])
    ep.check()
    return ep


def _drop_unweighted(ep: TokenEpisode, weights: list[Any]) -> None:
    """Turn off the loss of the actions whose weight is 0, and drop their turns."""
    kept = []
    for turn, w in zip(ep.turns, weights, strict=True):
        if w == 0:
            ep.mask[turn.action_start : turn.action_end] = [0] * (
                turn.action_end - turn.action_start
            )
        else:
            kept.append(turn)
    ep.turns = kept


def from_episode(chat: ChatFormat, ep: Episode, system_prompt: str) -> TokenEpisode:
    """A stored episode as a token episode (its final observation is not part of the context)."""
    from agentgym.export import to_chat

    out = from_messages(
        chat, to_chat(ep, system_prompt if chat.use_system_prompt else "")["messages"], ep.task_id
    )
    out.episode = ep
    return out


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """JSONL rows of episodes or chats; a bad line names its number."""
    rows = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError as e:
            raise ValueError(f"{path}:{n}: not JSON ({e.msg})") from None
    return rows


def rows_to_episodes(
    chat: ChatFormat, rows: list[dict[str, Any]], system: str
) -> list[TokenEpisode]:
    """Chat rows (``messages``) or agentgym episode rows (``steps``) as token episodes."""
    out = []
    for n, row in enumerate(rows, start=1):
        if "messages" in row:
            out.append(from_messages(chat, row["messages"], str(row.get("task_id", n))))
        elif "steps" in row:
            out.append(from_episode(chat, Episode.model_validate(row), system))
        else:
            raise ValueError(f"row {n}: expected 'messages' (chat) or 'steps' (episode)")
    return out


def demonstrations(
    cfg: TrainConfig, chat: ChatFormat, system: str, tasks: Callable[[], list[Task]]
) -> list[TokenEpisode]:
    """The rows of ``cfg.sft.data``: the env's expert on the training ``tasks()``, or a JSONL
    file of episodes or chats; only successful ones with ``sft.only_success``."""
    if cfg.sft.data == "expert":
        from agentgym.registry import make

        env = make(cfg.env.id, **cfg.env.kwargs)
        eps = expert_episodes(env, tasks(), cfg.seed)
        eps = [e for e in eps if e.success or not cfg.sft.only_success]
        return [from_episode(chat, e, system) for e in eps]
    rows = load_rows(cfg.sft.data)
    if cfg.sft.only_success:
        rows = [r for r in rows if r.get("success", True)]
    return rows_to_episodes(chat, rows, system)


# ============================================================================ loss
class SFT:
    """Negative log-likelihood of the action tokens, aggregated by ``Batch.weights``.

    ``context_weight > 0`` adds that times the token-mean NLL of the context tokens (prompt and
    observations), as "train on inputs" does: a model trained from scratch learns to read and
    copy from its context (ids, attribute values) many times faster, since every context token
    is a training signal and the actions are a few percent of the tokens.
    """

    zero_advantage_inert = False  # no advantages: every row's NLL counts

    def __init__(
        self, model: Any, context_weight: float = 0.0, frozen_cache_gb: float = 0.0
    ) -> None:
        self.model, self.context_weight = model, context_weight
        self.frozen = FrozenPrefix.of(model, int(frozen_cache_gb * 2**30))
        """The rows' states below the first adapted layer, computed once (LoRA on top layers)."""

    def extra_modules(self) -> dict[str, torch.nn.Module]:
        return {}

    def advantages(self, episodes: Any, ctx: Any) -> tuple[list[Any], None]:
        """SFT trains on the demonstrations of ``sft.data``, never on rollouts: nothing to credit."""
        raise TypeError("SFT has no advantages: it trains on sft.data, not on rollouts")

    def loss(self, mb: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        only = None if self.context_weight else mb.weights > 0  # the head at action tokens only
        logp, entropy = token_logprobs(self.model, mb, only, self.frozen)
        nll = weighted(-logp, mb.weights)
        metrics = {"nll": nll.item(), "entropy": weighted(entropy.detach(), mb.weights).item()}
        if not self.context_weight:
            return nll, metrics
        context = weighted(-logp, mb.context_weights)
        metrics["context_nll"] = context.item()
        return nll + self.context_weight * context, metrics


SPEC = AlgorithmSpec(
    lambda model, cfg: SFT(model, cfg.sft.context_weight, cfg.sft.frozen_cache_gb),
    rollouts=False,
)
"""SFT (``algo.name: sft``): trains on ``sft.data``, not on rollouts."""
