"""InfoPO: information-gain turn rewards fused with group outcome advantages (docs/methods.md).

For a token-exact episode ``[prompt][a_0][o_0][a_1][o_1]...`` and each turn t with non-empty
feedback o_t and a following action a_{t+1}, the feedback's tokens are overwritten **in place**
with the tokens of "No information found." (padded by repeating its last token, or truncated, so
every later position is unchanged) and the realised a_{t+1} is teacher-forced under both contexts
with the current policy (no grad)::

    IG_t = (1/L) sum_k [log pi(y_k | with o_t) - log pi(y_k | masked)]      (may be negative)

IG_t is credited to a_t, the action that produced o_t, spread evenly over its tokens (so the
tokens of a_t sum to IG_t). Per GRPO group: the outcome advantage A_out; the intrinsic token
values normalised over the group's non-zero tokens (A_int), down-scaled by
``min(1, max(std(A_out), 1) / std(A_int))``; the gate ``g = sigmoid(-std_G(R) / tau)`` (0.5 when
the group tied, where A_out is zero and only the intrinsic signal remains); and
``A = A_out + beta * g * A_int`` on every action token.

Standard deviations are sample ones (``ddof=1``) like the trainer's group advantages. "o_t's
tokens" are the observation's own text inside the chat template's observation turn; where the
template text cannot be cut off exactly (a tokenizer merging across it), the whole turn is
masked (``span: "turn"`` asks for that always).

Use it with ``algo.credit: infopo`` (``algo.options``: ``beta``, ``tau``, ``placeholder``,
``span``, ``batch_size``); the module registers the credit function on import.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from agentgym.train.advantages import group_advantages
from agentgym.train.credit import CreditContext, episode_arrays, register_credit
from agentgym.train.episode import TokenEpisode
from agentgym.train.options import GroupScale

PLACEHOLDER = "No information found."


class InfoPOConfig(BaseModel):
    """InfoPO's knobs (``algo.options`` of a training config)."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)  # every float is finite

    beta: float = Field(0.5, ge=0.0, le=1e6)
    """Weight of the intrinsic advantage."""
    tau: float = Field(0.5, gt=0.0, le=1e6)
    """Temperature of the variance gate sigmoid(-std(R)/tau)."""
    placeholder: str = PLACEHOLDER
    """Text written over the feedback in the counterfactual context."""
    span: Literal["content", "turn"] = "content"
    """Mask the observation text only, or the whole observation turn with its template text."""
    batch_size: int = Field(16, ge=1, le=2**31 - 1)
    """Sequences per no-grad forward when scoring."""
    eps: float = Field(1e-6, gt=0.0, le=1.0)


# ============================================================================ masking
def overwrite(ids: Sequence[int], start: int, end: int, placeholder: Sequence[int]) -> list[int]:
    """``ids`` with ``[start, end)`` replaced by ``placeholder`` fitted to the same length."""
    if not placeholder:
        raise ValueError("the placeholder encodes to no tokens")
    n = end - start
    fitted = list(placeholder[:n]) + [placeholder[-1]] * max(0, n - len(placeholder))
    return [*ids[:start], *fitted, *ids[end:]]


@dataclass(frozen=True)
class ObsPieces:
    """Token ids of the chat template around an observation's text."""

    heads: tuple[tuple[int, ...], ...]
    """Possible template prefixes (with and without the end-of-turn token)."""
    tail: tuple[int, ...]


def obs_pieces(tokenizer: Any) -> ObsPieces:
    from agentgym.train.chat import ChatFormat

    chat = ChatFormat(tokenizer)
    enc = chat.encode
    heads = (enc(chat.before_obs[len(chat.eos_text) :]), enc(chat.before_obs))
    return ObsPieces(tuple(tuple(h) for h in heads), tuple(enc(chat.after_obs)))


def feedback_span(ep: TokenEpisode, t: int, pieces: ObsPieces | None) -> tuple[int, int]:
    """Token span of turn ``t``'s feedback text (the whole observation turn as a fallback)."""
    turn = ep.turns[t]
    start, end = turn.obs_start, turn.obs_end
    if pieces is None:
        return start, end
    seg = tuple(ep.ids[start:end])
    tail = pieces.tail
    for head in pieces.heads:
        if (
            len(seg) >= len(head) + len(tail)
            and seg[: len(head)] == head
            and seg[len(seg) - len(tail) :] == tail
        ):
            return start + len(head), end - len(tail)
    return start, end


def eligible_turns(ep: TokenEpisode) -> list[int]:
    """Turns with non-empty feedback followed by another action."""
    return [
        t
        for t in range(len(ep.turns) - 1)
        if ep.turns[t].obs_end > ep.turns[t].obs_start
        and ep.turns[t + 1].action_end > ep.turns[t + 1].action_start
        and (t >= len(ep.episode.steps) or ep.episode.steps[t].observation.strip())
    ]


# ============================================================================ scoring
def _sequence_logprobs(model: Any, rows: list[list[int]], batch_size: int) -> list[np.ndarray]:
    """Per-position logprob of each row's own tokens (0 at position 0), no grad."""
    import torch

    from agentgym.train.policy import logprobs_from_logits

    device = next(model.parameters()).device
    out: list[np.ndarray] = []
    for lo in range(0, len(rows), batch_size):
        chunk = rows[lo : lo + batch_size]
        width = max(len(r) for r in chunk)
        ids = torch.zeros((len(chunk), width), dtype=torch.long)
        attn = torch.zeros_like(ids)
        for i, r in enumerate(chunk):
            ids[i, : len(r)] = torch.tensor(r)
            attn[i, : len(r)] = 1
        logits = model(
            input_ids=ids.to(device), attention_mask=attn.to(device), use_cache=False
        ).logits
        logp = logprobs_from_logits(logits, ids.to(device))[0].float().cpu().numpy()
        out += [logp[i, : len(r)] for i, r in enumerate(chunk)]
    return out


def information_gain(
    model: Any,
    episodes: Sequence[TokenEpisode],
    placeholder_ids: Sequence[int],
    pieces: ObsPieces | None = None,
    batch_size: int = 16,
) -> list[np.ndarray]:
    """IG_t per turn of every episode (0 where no feedback or no following action)."""
    import torch

    rows: list[list[int]] = []
    jobs: list[tuple[int, int, int]] = []  # (episode, turn, masked row index)
    real_rows: dict[int, int] = {}
    for e, ep in enumerate(episodes):
        turns = eligible_turns(ep) if ep.ok else []
        if not turns:
            continue
        real_rows[e] = len(rows)
        rows.append(ep.ids[: ep.turns[turns[-1] + 1].action_end])
        for t in turns:
            start, end = feedback_span(ep, t, pieces)
            masked = overwrite(ep.ids, start, end, placeholder_ids)
            jobs.append((e, t, len(rows)))
            rows.append(masked[: ep.turns[t + 1].action_end])
    was_training = bool(getattr(model, "training", False))
    model.eval()
    try:
        with torch.no_grad():
            logps = _sequence_logprobs(model, rows, batch_size) if rows else []
    finally:
        model.train(was_training)
    out = [np.zeros(len(ep.turns)) for ep in episodes]
    for e, t, row in jobs:
        nxt = episodes[e].turns[t + 1]
        real = logps[real_rows[e]][nxt.action_start : nxt.action_end]
        counterfactual = logps[row][nxt.action_start : nxt.action_end]
        out[e][t] = float(np.mean(real - counterfactual))
    return out


def attribute(ep: TokenEpisode, ig: Sequence[float] | np.ndarray) -> np.ndarray:
    """IG_t spread evenly over the tokens of a_t (the action that produced o_t)."""
    out = np.zeros(len(ep.ids))
    for turn, value in zip(ep.turns, ig, strict=True):
        n = turn.action_end - turn.action_start
        if n:
            out[turn.action_start : turn.action_end] = value / n
    return out


# ============================================================================ fusion
def variance_gate(rewards: Sequence[float] | np.ndarray, tau: float) -> float:
    """``sigmoid(-std(R) / tau)``: 0.5 when the group tied, towards 0 as outcomes spread."""
    r = np.asarray(rewards, float)
    std = float(r.std(ddof=1)) if len(r) > 1 else 0.0
    return float(1.0 / (1.0 + np.exp(std / tau)))


def fuse(
    rewards: Sequence[float] | np.ndarray,
    groups: Sequence[Hashable],
    valid: Sequence[bool] | np.ndarray,
    intrinsic: Sequence[np.ndarray],
    masks: Sequence[np.ndarray],
    beta: float = 0.5,
    tau: float = 0.5,
    scale: str = "std",
    eps: float = 1e-6,
) -> tuple[list[np.ndarray], dict[str, float]]:
    """Per-token ``A_out + beta * g * A_int`` for every episode, and group-level diagnostics."""
    r, ok = np.asarray(rewards, float), np.asarray(valid, bool)
    a_out = group_advantages(r, groups, ok, scale, eps)
    out = [np.asarray(m, float) * a for m, a in zip(masks, a_out, strict=True)]
    members: dict[Hashable, list[int]] = {}
    for i, g in enumerate(groups):
        if ok[i]:
            members.setdefault(g, []).append(i)
    gates = []
    for idx in members.values():
        if len(idx) < 2:
            continue
        gate = variance_gate(r[idx], tau)
        gates.append(gate)
        a_int = _normalised_intrinsic([intrinsic[i] for i in idx], eps)
        if a_int is None:
            continue
        values, pooled = a_int
        s_int = float(np.std(pooled, ddof=1))
        factor = min(1.0, max(float(np.std(a_out[idx], ddof=1)), 1.0) / s_int) if s_int else 1.0
        for i, v in zip(idx, values, strict=True):
            out[i] = out[i] + beta * gate * factor * v
    for bad in np.flatnonzero(~ok):
        out[bad] = np.zeros_like(out[bad])
    return out, {"infopo_gate": float(np.mean(gates)) if gates else 0.0}


def _normalised_intrinsic(
    values: list[np.ndarray], eps: float
) -> tuple[list[np.ndarray], np.ndarray] | None:
    """The group's non-zero intrinsic tokens normalised together; None with fewer than two."""
    pooled = np.concatenate([v[v != 0] for v in values]) if values else np.zeros(0)
    if len(pooled) < 2:
        return None
    mean, std = pooled.mean(), pooled.std(ddof=1)
    normed = [np.where(v != 0, (v - mean) / (std + eps), 0.0) for v in values]
    return normed, np.concatenate([n[v != 0] for n, v in zip(normed, values, strict=True)])


# ============================================================================ credit
class InfoPOCredit:
    """The trainer's credit function ``infopo`` (``algo.options``: :class:`InfoPOConfig`)."""

    options = InfoPOConfig
    algo_fields = GroupScale  # the flat algo.* field it reads besides its options: algo.scale

    def __call__(self, episodes: Sequence[TokenEpisode], ctx: CreditContext) -> list[np.ndarray]:
        if ctx.policy is None:
            raise ValueError(
                "InfoPO scores counterfactual contexts: the credit context has no policy"
            )
        if ctx.tokenizer is None:
            raise ValueError("InfoPO encodes its placeholder: the credit context has no tokenizer")
        cfg = ctx.options  # checked when the config loaded
        if not isinstance(cfg, InfoPOConfig):  # a config that does not name algo.credit: infopo
            cfg = InfoPOConfig.model_validate(ctx.algo.options)
        tokenizer = ctx.tokenizer
        placeholder = list(tokenizer(cfg.placeholder, add_special_tokens=False)["input_ids"])
        pieces = obs_pieces(tokenizer) if cfg.span == "content" else None
        ig = information_gain(ctx.policy, episodes, placeholder, pieces, cfg.batch_size)
        intrinsic = [attribute(ep, g) for ep, g in zip(episodes, ig, strict=True)]
        rewards, groups, valid = episode_arrays(episodes)
        masks = [np.asarray(ep.mask, float) for ep in episodes]
        out, diag = fuse(
            rewards, groups, valid, intrinsic, masks, cfg.beta, cfg.tau, ctx.algo.scale, cfg.eps
        )
        if ctx.metrics is not None:
            scored = [v for e, g in zip(episodes, ig, strict=True) for v in g[eligible_turns(e)]]
            ctx.metrics["infopo_ig"] = float(np.mean(scored)) if scored else 0.0
            ctx.metrics["infopo_turns"] = float(len(scored))
            ctx.metrics.update(diag)
        return out


infopo_credit = InfoPOCredit()


register_credit("infopo", infopo_credit)
