"""One batch type for both layouts: a row per episode, or a row per step; and loss aggregation.

An episode whose history was rewritten between turns (``TokenEpisode.per_call``) gets a row per
turn in either layout: its turns' prompts do not continue one another.

``episode_rows`` puts each whole episode in one row (prompt, actions, observations; the loss mask
picks the actions). ``step_rows`` makes one row per turn: the context up to and including that
action, with only that action masked in. A causal model gives every action token the same
logprob in both layouts, so the layouts differ only in cost and in what "a sequence" means.

Loss aggregation is a per-token weight over the whole batch, so micro-batching and gradient
accumulation give exactly the full-batch loss:

- ``token-mean``: every loss token weighs the same (``1 / tokens in batch``).
- ``sequence-mean``: every row weighs the same, split evenly over its tokens.
- ``episode-mean``: every episode weighs the same, split evenly over its tokens.

How they relate (tested): with episode rows, sequence-mean equals episode-mean; token-mean and
episode-mean are identical in both layouts; all three agree when every row has the same number of
loss tokens; otherwise token-mean weighs each episode by its share of the tokens.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, fields, replace

import numpy as np
import torch

from agentgym.train.episode import TokenEpisode
from agentgym.train.options import Layout, LossAgg


@dataclass
class Batch:
    """Right-padded rows; every per-token tensor is aligned with ``input_ids`` positions."""

    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    loss_mask: torch.Tensor
    """1.0 on action tokens that carry loss in this row."""
    old_logprobs: torch.Tensor
    """Sampling logprobs recorded at generation time (0 elsewhere)."""
    advantages: torch.Tensor
    episode_index: torch.Tensor
    """Row -> index of its episode in the list the batch was built from."""
    weights: torch.Tensor
    """Per-token aggregation weights over the whole batch (see :func:`token_weights`)."""
    returns: torch.Tensor
    """Value targets at the positions that predict a turn's value (PPO; 0 elsewhere)."""
    value_weights: torch.Tensor
    """1 / (value targets in the batch) at those positions, 0 elsewhere."""
    context_weights: torch.Tensor
    """Token-mean weights over the context (prompt and observation) tokens, for SFT's optional
    language-modelling loss on the context."""

    @property
    def rows(self) -> int:
        return int(self.input_ids.shape[0])

    def select(self, rows: Sequence[int] | torch.Tensor) -> Batch:
        """The given rows (weights kept, so the pieces' losses add up to the whole)."""
        idx = torch.as_tensor(rows, dtype=torch.long)
        return replace(self, **{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def micro_batches(self, size: int) -> Iterator[Batch]:
        """Consecutive chunks of ``size`` rows, each trimmed to its longest row."""
        for start in range(0, self.rows, size):
            part = self.select(range(start, min(start + size, self.rows)))
            width = int(part.attention_mask.sum(1).max())
            yield replace(
                part,
                **{
                    f.name: getattr(part, f.name)[:, :width]
                    for f in fields(part)
                    if getattr(part, f.name).dim() == 2
                },
            )


def token_weights(
    loss_mask: torch.Tensor, episode_index: torch.Tensor, mode: LossAgg
) -> torch.Tensor:
    """Per-token weights that sum to 1 over the batch and implement aggregation ``mode``."""
    mask = loss_mask.float()
    if mode == "token-mean":
        return mask / mask.sum().clamp(min=1)
    if mode == "sequence-mean":
        per_row = mask.sum(1, keepdim=True)
        rows = (per_row > 0).sum().clamp(min=1)
        return mask / per_row.clamp(min=1) / rows
    if mode == "episode-mean":
        n_ep = int(episode_index.max()) + 1 if len(episode_index) else 0
        per_ep = torch.zeros(n_ep).index_add_(0, episode_index, mask.sum(1))
        episodes = (per_ep > 0).sum().clamp(min=1)
        return mask / per_ep[episode_index].clamp(min=1).unsqueeze(1) / episodes
    raise ValueError(
        f"unknown loss aggregation {mode!r}; use token-mean, sequence-mean or episode-mean"
    )


def build_batch(
    episodes: Sequence[TokenEpisode],
    advantages: Sequence[np.ndarray] | None,
    layout: Layout = "episode",
    agg: LossAgg = "token-mean",
    pad_id: int = 0,
    returns: Sequence[np.ndarray] | None = None,
) -> Batch:
    """Rows for ``episodes`` in ``layout``; ``advantages[i]`` is per token of episode ``i``.

    ``returns[i]`` (PPO) holds value targets at the positions just before each action and NaN
    elsewhere; a row trains the values of the actions it carries loss on.
    """
    rows = row_spans(episodes, layout)
    width = max((r[2] - r[1] for r in rows), default=1)
    shape = (len(rows), width)
    ids = torch.full(shape, pad_id, dtype=torch.long)
    attn, mask = torch.zeros(shape, dtype=torch.long), torch.zeros(shape)
    old, adv = torch.zeros(shape), torch.zeros(shape)
    ret, has_ret = torch.zeros(shape), torch.zeros(shape)
    for r, (i, c, end, lo, hi) in enumerate(rows):  # row position p = episode position c + p
        ep, n = episodes[i], end - c
        ids[r, :n] = torch.tensor(ep.ids[c:end])
        attn[r, :n] = 1
        mask[r, lo - c : hi - c] = torch.tensor(ep.mask[lo:hi], dtype=torch.float)
        old[r, :n] = torch.tensor(ep.logprobs[c:end])
        if advantages is not None:
            adv[r, :n] = torch.as_tensor(advantages[i][c:end], dtype=torch.float)
        if returns is not None:
            a = max(lo - 1, c)
            window = torch.as_tensor(returns[i][a : hi - 1], dtype=torch.float)
            known = ~torch.isnan(window)
            ret[r, a - c : hi - 1 - c] = torch.nan_to_num(window)
            has_ret[r, a - c : hi - 1 - c] = known.float()
    index = torch.tensor([r[0] for r in rows], dtype=torch.long)
    value_w = has_ret / has_ret.sum().clamp(min=1)
    context = attn.float() - (mask > 0).float()
    context[:, 0] = 0.0  # the first token has no prediction
    context_w = context / context.sum().clamp(min=1)
    weights = token_weights(mask, index, agg)
    return Batch(ids, attn, mask, old, adv, index, weights, ret, value_w, context_w)


def row_spans(
    episodes: Sequence[TokenEpisode], layout: Layout = "episode"
) -> list[tuple[int, int, int, int, int]]:
    """Every row's (episode, start, end, loss start, loss end), as episode positions."""
    rows: list[tuple[int, int, int, int, int]] = []
    for i, ep in enumerate(episodes):
        if layout == "episode" and ep.per_call:  # history rewritten: a row per call
            rows += [(i, t.context_start, t.action_end, t.action_start, t.action_end)
                     for t in ep.turns]  # fmt: skip
        elif layout == "episode":
            if any(t.context_start for t in ep.turns):
                raise ValueError(
                    "episodes with a bounded context (rollout.history) need layout step"
                )
            rows.append((i, 0, len(ep.ids), 0, len(ep.ids)))
        elif layout == "step":
            rows += [(i, t.context_start, t.action_end, t.action_start, t.action_end)
                     for t in ep.turns]  # fmt: skip
        else:
            raise ValueError(f"unknown layout {layout!r}; use 'episode' or 'step'")
    return rows


def turn_to_tokens(ep: TokenEpisode, per_turn: Sequence[float] | np.ndarray) -> np.ndarray:
    """Spread one value per turn over that turn's action tokens (0 elsewhere)."""
    out = np.zeros(len(ep.ids))
    for t, value in zip(ep.turns, per_turn, strict=True):
        out[t.action_start : t.action_end] = value
    return out
