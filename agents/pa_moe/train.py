"""PA-MoE training: the router's REINFORCE loss and the trainer hook (``model.policy: pa_moe``).

The policy itself (experts, router, routing, save/load, the agent) is :mod:`agentgym.agents.pa_moe`;
this module is what ``agentgym train`` needs on top of it: :func:`router_loss` (REINFORCE on the
phase sample and gate decision with the switching penalty, plus load balance), :class:`RoutedLM`
(each action's logits under the adapter that sampled it) and :func:`trainer_policy`.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch
from torch import nn

from agentgym.agents.pa_moe import (
    PAMoEConfig,
    PAMoEPolicy,
    PhaseRouter,
    Route,
    RouterState,
    load_balance_loss,
    load_experts,
    route_logprobs,
    temperature,
    with_experts,
)
from agentgym.train.policy import load_model, logprobs_from_logits, register_policy


# ============================================================================ losses
def router_loss(
    router: PhaseRouter,
    routes: Sequence[Route],
    advantages: Sequence[float],
    cfg: PAMoEConfig,
    tau: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    """REINFORCE on the phase sample and the gate decision, with the switching penalty.

    Each step's return signal is ``A_t - switch_penalty * 1[e_t != e_{t-1}]``; the phase term is
    ``-signal * log softmax(logits / tau)[proposed]``, the gate term (only where the proposal
    differed from the previous expert, i.e. where the gate decided anything) is
    ``-signal * log P(gate decision)``; plus the load-balance loss of the batch.
    """
    if len(routes) != len(advantages):
        raise ValueError(f"{len(routes)} routes but {len(advantages)} advantages")
    if not routes:
        return torch.zeros(()), {}
    logp, probs = route_logprobs(router, routes, tau)
    signal = torch.tensor(
        [a - cfg.switch_penalty * r.switched for a, r in zip(advantages, routes, strict=True)],
        device=logp.device,
    )
    pg = -(signal * logp).mean()
    lb = load_balance_loss(probs, cfg.lb_coef)
    return pg + lb, {"router_pg": pg.item(), "load_balance": lb.item()}


def expert_loss(
    policy: PAMoEPolicy,
    steps: Sequence[tuple[list[int], int, int, float]],
) -> torch.Tensor:
    """Policy gradient of each step under its own expert: ``-A * mean log p(action tokens)``.

    ``steps`` holds (ids up to and including the action, action start, expert, advantage).
    Steps are grouped by expert so each adapter runs once per group.
    """
    total = torch.zeros(())
    for expert in sorted({s[2] for s in steps}):
        policy.use(expert)
        for ids, start, _, adv in (s for s in steps if s[2] == expert):
            x = torch.tensor([ids])
            logp = logprobs_from_logits(policy.model(input_ids=x, use_cache=False).logits, x)[0]
            total = total - adv * logp[0, start:].mean() / len(steps)
    return total


# ============================================================================ trainer hook
class RoutedLM(nn.Module):
    """The experts' peft model for the trainer: every attribute is the peft model's, and
    :meth:`forward_batch` computes each action's logits under the adapter that sampled it."""

    def __init__(self, policy: PAMoEPolicy) -> None:
        super().__init__()
        self.lm = policy.model
        self._policy = [policy]  # a list: not registered as a submodule
        self._experts: list[np.ndarray] | None = None

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            if name == "lm":
                raise
            return getattr(self.lm, name)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """The active adapter's forward (generation, plain calls)."""
        return self.lm(*args, **kwargs)

    def disable_adapter(self) -> Any:
        """The base model (the KL reference), all experts trainable again after."""
        return self._policy[0].adapters_off()

    def bind(self, token_experts: list[np.ndarray]) -> None:
        """Per episode of the update, the expert of every token (-1 off the actions)."""
        self._experts = token_experts

    def forward_batch(self, mb: Any, hidden: bool = False) -> Any:
        """Logits of ``mb``'s rows: the position predicting an action token under its expert.

        A row runs once per expert among its loss tokens (positions match the episode's, since
        both layouts start rows at the episode's first token); other positions take the row's
        first expert.
        """
        if hidden:
            raise ValueError("PA-MoE's routed forward gives logits only (no value head)")
        pred = self._predicting_experts(mb)
        logits: torch.Tensor | None = None
        for expert in sorted(set(pred.flatten().tolist())):
            rows = (pred == expert).any(1).nonzero().squeeze(1)
            self._policy[0].use(expert)
            out = self.lm(
                input_ids=mb.input_ids[rows],
                attention_mask=mb.attention_mask[rows],
                use_cache=False,
            ).logits
            if logits is None:
                logits = out.new_zeros((*mb.input_ids.shape, out.shape[-1]))
            take = (pred[rows] == expert).unsqueeze(-1)
            logits = logits.index_put((rows,), torch.where(take, out, logits[rows]))
        return SimpleNamespace(logits=logits, hidden_states=None)

    def _predicting_experts(self, mb: Any) -> torch.Tensor:
        """``[B, L]``: the expert whose logits each position needs (that of the next token)."""
        if self._experts is None:
            raise RuntimeError("RoutedLM.forward_batch needs bind() with the update's episodes")
        b, width = mb.input_ids.shape
        token = torch.full((b, width), -1, dtype=torch.long)
        for r, i in enumerate(mb.episode_index.tolist()):
            known = torch.as_tensor(self._experts[i][:width], dtype=torch.long)
            token[r, : len(known)] = known
        token = torch.where(mb.loss_mask.cpu() > 0, token, -1)
        pred = torch.full_like(token, -1)
        pred[:, :-1] = token[:, 1:]
        routed = pred >= 0
        first = pred.masked_fill(~routed, self._policy[0].cfg.num_experts).min(1).values
        first = torch.where(routed.any(1), first, 0)
        return torch.where(routed, pred, first[:, None]).to(mb.input_ids.device)


class _Routing:
    """The rollout side of a PA-MoE policy (:class:`agentgym.train.rollout.AdapterPicker`): each
    turn's expert is the adapter that generates it, and its :class:`Route` the turn's record."""

    def __init__(self, policy: PAMoEPolicy, tau: float | None, seed: int) -> None:
        self.policy, self.tau = policy, tau
        self.generator = torch.Generator().manual_seed(seed)

    def start(self, goal: str) -> RouterState:
        return self.policy.start(goal)

    def pick(
        self, states: Sequence[RouterState], observations: Sequence[str]
    ) -> list[tuple[int, Route]]:
        routes = self.policy.route_many(states, observations, self.tau, self.generator)
        return [(r.expert, r) for r in routes]

    def use(self, expert: int) -> None:
        self.policy.use(expert)


class PAMoETraining:
    """PA-MoE as the trainer's policy (:class:`agentgym.train.policy.Policy`): one adapter per
    expert, picked per turn by the router."""

    per_turn_adapters = True

    def __init__(self, policy: PAMoEPolicy) -> None:
        self.policy, self.cfg = policy, policy.cfg
        self.model = RoutedLM(policy)
        self.routes: list[Route] = []
        self.step_advantages: list[float] = []
        self.tau = temperature(policy.cfg, 0)

    def modules(self) -> dict[str, nn.Module]:
        return {"pa_moe_router": self.policy.router}

    def adapter_picker(self, step: int, explore: bool, seed: int) -> _Routing:
        """Sampled routes at the step's annealed temperature when exploring, else greedy."""
        if explore:
            self.tau = temperature(self.cfg, step)
        return _Routing(self.policy, self.tau if explore else None, seed)

    def bind(self, episodes: Sequence[Any], advantages: Sequence[np.ndarray]) -> dict[str, float]:
        """Token experts for the routed forward, routes and step advantages for the router."""
        maps, self.routes, self.step_advantages = [], [], []
        for k, ep in enumerate(episodes):
            experts = np.full(len(ep.ids), -1)
            for t in ep.turns:
                if t.adapter is None:
                    raise ValueError("a PA-MoE update needs episodes rolled out with its router")
                experts[t.action_start : t.action_end] = t.adapter
                span = advantages[k][t.action_start : t.action_end] if advantages else None
                self.routes.append(t.adapter_record)
                self.step_advantages.append(
                    float(np.mean(span)) if span is not None and len(span) else 0.0
                )
            maps.append(experts)
        self.model.bind(maps)
        return routing_metrics(episodes, self.cfg.num_experts) | {"router_tau": self.tau}

    def loss(self) -> tuple[torch.Tensor, dict[str, float]]:
        return router_loss(
            self.policy.router, self.routes, self.step_advantages, self.cfg, self.tau
        )

    def save(self, directory: Path) -> None:
        self.policy.save_router(Path(directory))


def routing_metrics(episodes: Sequence[Any], num_experts: int) -> dict[str, float]:
    """Switches per episode and each expert's share of the steps."""
    turns = [t for ep in episodes for t in ep.turns if t.adapter is not None]
    switches = [sum(bool(t.adapter_record.switched) for t in ep.turns) for ep in episodes]
    out = {"switches": float(np.mean(switches)) if switches else 0.0}
    for k in range(num_experts):
        share = sum(t.adapter == k for t in turns) / len(turns) if turns else 0.0
        out[f"expert_share_{k}"] = float(share)
    return out


def trainer_policy(
    path: str,
    device: str,
    options: dict[str, Any],
    tokenizer: Any,
    resume_from: Path | None = None,
) -> PAMoETraining:
    """``model.policy: pa_moe``: K fresh LoRA experts on ``path`` (or resumed ones) + a router."""
    cfg = PAMoEConfig.model_validate(options)
    base = load_model(path, device)
    if resume_from is not None:  # the router's weights come back with the trainer's state
        model = load_experts(base, Path(resume_from), cfg, trainable=True)
    else:
        model = with_experts(base, cfg)
    return PAMoETraining(PAMoEPolicy(model, tokenizer, cfg))


trainer_policy.options = PAMoEConfig  # type: ignore[attr-defined]  # checked as the config loads
register_policy("pa_moe", trainer_policy)
