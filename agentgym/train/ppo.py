"""PPO with a value head and turn-level GAE.

The critic is a linear head on the policy's last hidden state at the token just before each
action (the state the action was chosen in). Values, rewards and GAE are per turn, so the
advantage of a turn spreads evenly over its action tokens; the value loss regresses each turn's
value on its GAE return. Error episodes get zero advantage and no value targets.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from agentgym.train.advantages import turn_gae, whiten
from agentgym.train.algorithm import AlgorithmSpec
from agentgym.train.batch import Batch, build_batch, turn_to_tokens
from agentgym.train.credit import CreditContext
from agentgym.train.episode import TokenEpisode
from agentgym.train.grpo import PolicyGradient
from agentgym.train.losses import weighted
from agentgym.train.options import PPOOptions
from agentgym.train.policy import forward, logprobs_from_logits


# ============================================================================ critic
class ValueHead(torch.nn.Module):
    """A scalar value from a hidden state; starts at 0 so early advantages are the returns."""

    def __init__(self, hidden_size: int) -> None:
        super().__init__()
        self.proj = torch.nn.Linear(hidden_size, 1)
        torch.nn.init.zeros_(self.proj.weight)
        torch.nn.init.zeros_(self.proj.bias)

    def forward(self, hidden: torch.Tensor) -> torch.Tensor:
        return self.proj(hidden.float()).squeeze(-1)


def hidden_size(model: Any) -> int:
    config = model.config if hasattr(model, "config") else model.base_model.config
    return int(config.hidden_size)


# ============================================================================ PPO
class PPO(PolicyGradient):
    """Clipped policy loss with GAE advantages plus ``vf_coef`` times the value loss."""

    cfg: PPOOptions

    def __init__(self, model: Any, cfg: PPOOptions) -> None:
        super().__init__(model, cfg, credit=None)  # advantages: GAE on the value head's values
        self.zero_advantage_inert = False  # the value loss trains on every row
        device = next(model.parameters()).device
        self.value_head = ValueHead(hidden_size(model)).to(device)

    def extra_modules(self) -> dict[str, torch.nn.Module]:
        return {"value_head": self.value_head}

    @torch.no_grad()
    def turn_values(self, episodes: Sequence[TokenEpisode]) -> list[np.ndarray]:
        """The critic's value before every turn of every episode."""
        out = []
        for ep in episodes:
            if not ep.ok or not ep.turns:
                out.append(np.zeros(len(ep.turns)))
                continue
            if any(t.context_start for t in ep.turns):  # bounded context: a row per turn
                mb = build_batch([ep], None, layout="step")
                hidden = forward(self.model, mb, hidden=True).hidden_states[-1]
                rows = torch.arange(len(ep.turns))
                positions = torch.tensor([t.action_start - t.context_start - 1 for t in ep.turns])
                out.append(self.value_head(hidden[rows, positions]).numpy())
                continue
            mb = build_batch([ep], None)
            hidden = forward(self.model, mb, hidden=True).hidden_states[-1][0]
            positions = torch.tensor([t.action_start - 1 for t in ep.turns])
            out.append(self.value_head(hidden[positions]).numpy())
        return out

    def advantages(
        self, episodes: Sequence[TokenEpisode], ctx: CreditContext
    ) -> tuple[list[np.ndarray], list[np.ndarray] | None]:
        values = self.turn_values(episodes)
        advs, rets = [], []
        for ep, v in zip(episodes, values, strict=True):
            a, g = turn_gae([t.reward for t in ep.turns], v, self.cfg.gamma, self.cfg.lam)
            if not ep.ok:
                a, g = np.zeros_like(a), np.full_like(g, np.nan)
            advs.append(a)
            rets.append(_at_value_positions(ep, g))
        flat = np.concatenate(advs) if advs else np.zeros(0)
        ok = np.concatenate([np.full(len(a), ep.ok) for a, ep in zip(advs, episodes, strict=True)])
        white = whiten(flat, ok) if len(flat) else flat
        splits = np.split(white, np.cumsum([len(a) for a in advs])[:-1]) if advs else []
        return [turn_to_tokens(ep, a) for ep, a in zip(episodes, splits, strict=True)], rets

    def loss(self, mb: Batch) -> tuple[torch.Tensor, dict[str, float]]:
        out = forward(self.model, mb, hidden=True)
        logp, entropy = logprobs_from_logits(out.logits, mb.input_ids)
        loss, metrics = self.policy_terms(mb, logp, entropy)
        values = self.value_head(out.hidden_states[-1])
        v_loss = weighted((values - mb.returns) ** 2, mb.value_weights)
        metrics["value_loss"] = v_loss.item()
        return loss + self.cfg.vf_coef * v_loss, metrics


def _at_value_positions(ep: TokenEpisode, per_turn: np.ndarray) -> np.ndarray:
    """Per-token array: the turn's value target just before its action, NaN elsewhere."""
    out = np.full(len(ep.ids), np.nan)
    for t, g in zip(ep.turns, per_turn, strict=True):
        out[t.action_start - 1] = g
    return out


SPEC = AlgorithmSpec(lambda model, cfg: PPO(model, cfg.algo.view), PPOOptions)
"""PPO (``algo.name: ppo``)."""
