"""``SocialEnv``: one seat of a Sotopia episode as a single-agent env, the partner embedded.

The player controls ``config.seat``; the partner (scripted or LLM, ``config.partner`` unless the
env is given ``partner=``) plays the other seat between the player's turns. The judge scores both
sides after every player turn (``judge_every_turn``) and at the end; ``info["evaluation"]`` is the
player's scores, and the final reward and score are the goal score scaled to 0..1 (Sotopia's
headline metric; an empty deal scores 0). The mean over all seven dimensions, ALSO's reward, is
``info["evaluation"]["normalized"]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentgym.env import StepResult, TextEnv
from agentgym.envs.social.config import SocialConfig
from agentgym.envs.social.factory import Partner, check_judge, make_judge, make_partner
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.judge import Evaluation, Judge
from agentgym.envs.social.prompt import SYSTEM_PROMPT, observation
from agentgym.task import Task, TaskSuite

SUCCESS_GOAL = 5.0
"""An episode succeeds when the player's final goal score is at least half of its range."""


@dataclass
class SocialState:
    """The episode: the game, the partner (its memory is episode state too) and the scores."""

    game: GameState
    partner: Partner
    seen: int = 0
    """Events the player has been shown."""
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    """The player's evaluation summary after each of its turns."""


class SocialEnv(TextEnv):
    """Social: Sotopia-style two-agent social interaction, with LLM and rule-based judges.

    Two people with private goals talk in a realistic scenario from Sotopia (90 scenarios, 40
    profiles, 120 relationships, 450 scenario x agent combos, the 14 Sotopia-hard scenarios). Each
    sees the scenario, its own profile and goal, what the relationship lets it know of the other, and
    the conversation. Episodes are judged on Sotopia's seven dimensions. Deal-or-no-deal and
    craigslist scenarios are also *verifiable*: agreements are structured moves, and a rule-based
    judge scores them offline and deterministically.

    =====================  =========================================================================
    Ids                    ``agentgym/Social-v0`` (one seat, partner embedded; a Gymnasium env);
                           ``agentgym.envs.social.parallel_env(suite=...)`` (both seats, a PettingZoo
                           ``ParallelEnv``)
    Classes                :class:`SocialEnv`, :class:`SocialParallelEnv`
    Actions                Sotopia's: JSON ``{"action_type": T, "argument": TEXT}`` with T in
                           ``speak``, ``non-verbal communication``, ``action``, ``leave``, ``none``;
                           also ``T: TEXT``, and plain text (= speak). Negotiation moves are
                           ``action`` arguments: ``propose book=2, hat=0, ball=1`` (the units you
                           take), ``offer $420``, ``accept``, ``reject``
    Observations           text: first Sotopia's background (scenario, own profile with its secret,
                           the other's profile as far as the relationship reveals it, own goal,
                           format); then each turn as "Turn #n: NAME said: ..." and whose turn it is
    Turns                  round-robin: seat ``t % 2`` acts on turn ``t``; the episode ends after
                           ``max_turns`` (20) turns, when an agent leaves, or after more than 2
                           consecutive ``none`` turns (a malformed action counts as ``none``)
    Reward                 at the end: the player's normalised judge score (mean of the 7 dimensions
                           min-max scaled to 0..1); 0 before. ``info["evaluation"]`` after every
                           player turn: scores per dimension, Sotopia's overall (raw mean) and the
                           normalised mean. ``success``: final goal score >= 5
    Judges                 ``rule`` (verifiable scenarios; see :mod:`agentgym.envs.social.judge`),
                           ``llm[:MODEL_SPEC]`` (Sotopia's rubric through agentgym's LLM layer),
                           ``auto`` (default: rule where verifiable, else llm)
    Partners               ``scripted:hardliner|conceder|tit-for-tat|switcher[?switch=N]`` (see
                           :mod:`agentgym.envs.social.partners`), ``llm[:MODEL_SPEC]``; LLM specs
                           default to the env's ``model=`` or ``$AGENTGYM_SOCIAL_MODEL``. Scripted
                           partners react to the *content* of the other side's turns: cooperative
                           talk, firm talk or stands, arguments and concessions, read from the words
                           and moves (:mod:`agentgym.envs.social.tactics`); the ``switcher`` rewards
                           cooperation until turn N (default 10) and exploits it from then on,
                           reacting to the other side's last 4 turns
    Agents                 ``scripted:follower`` (:mod:`agentgym.envs.social.scripted`) negotiates
                           as the ``Strategy:`` line of its prompt says (talk tactic, concession
                           rate, opening, integrative offers, mirroring): the offline stand-in for
                           an LLM agent under a prompt optimiser such as ALSO
    Splits                 ``social/all`` 450 (seat 0, LLM partner), ``social/hard`` 70 (the 14
                           Sotopia-hard scenarios x 5 pairs), ``social/negotiation`` 200 (20
                           verifiable scenarios x 5 pairs x 2 seats, scripted tit-for-tat partner,
                           rule judge; the default suite)
    Expert                 none (there is no oracle for a conversation)
    Data                   Sotopia (sotopia-lab/sotopia-space ``profiles/``, CC BY-SA 4.0); see
                           ``tasks/social/manifest.json`` and ``LICENSE-sotopia``
    Regenerate             ``python -m agentgym.envs.social.generate --data ../shared/data``
    =====================  =========================================================================

    Sotopia's ``get_bio`` decides what one agent knows of the other: strangers nothing, people who
    know each other by name the name, acquaintances also age, gender, occupation and public info,
    friends, partners and family also personality and values; secrets stay private.

    Any text is an action (``free_text_actions``: JSON, ``TYPE: TEXT`` or plain speech), so a
    model's reply reaches the env whole, from ``ChatAgent`` as from the trainer's rollouts:
    cutting an ``Action:`` line out of ``action: offer $610`` would send ``offer $610``, which
    reads as speech.
    """

    action_max_tokens = 128

    config_model = SocialConfig
    default_suite = "social/negotiation"
    system_prompt = SYSTEM_PROMPT
    free_text_actions = True

    config: SocialConfig
    state: SocialState

    def __init__(
        self,
        suite: str | TaskSuite | None = None,
        render_mode: str | None = None,
        judge: str = "auto",
        partner: str | None = None,
        model: str | None = None,
        judge_every_turn: bool = True,
    ) -> None:
        super().__init__(suite, render_mode)
        check_judge(judge)  # a typo fails here, in the CLI's preflight, not in every episode
        self.judge_spec, self.partner_spec, self.model = judge, partner, model
        self.judge_every_turn = judge_every_turn

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        self._rebuild(task)
        partner = make_partner(self.partner_spec or self.config.partner, self.model)
        partner.reset(int(self.np_random.integers(2**31)))
        self.state = SocialState(GameState(), partner)
        self._partner_turns()
        obs = self._observe(first=True)
        return obs, {**self._info(True), "persona": self.persona(), "seat": self.config.seat}

    def _rebuild(self, task: Task) -> None:
        """The judge: it may hold a model client, so it stays outside the snapshotted state."""
        self.judge: Judge = make_judge(self.judge_spec, self.config, self.model)

    def persona(self) -> str:
        """The player's persona text (its profile as it knows itself), for prompt optimisers."""
        me = self.config.agents[self.config.seat]
        return f"You are {me.name}. {me.self_description()}"

    def _step(self, action: str) -> StepResult:
        event = play_turn(self.state.game, self.config, action)
        self._partner_turns()
        game = self.state.game
        evaluation = None
        if self.judge_every_turn or game.done:
            evaluation = self.judge.evaluate(self.config, game)[self.config.seat]
            self.state.evaluations.append(evaluation.summary())
        obs = self._observe()
        if event.valid is False and not game.done:
            obs = f"Your action was not valid: {event.note}\n{obs}"
        info = self._info(event.valid, evaluation)
        if not game.done:
            return obs, 0.0, False, False, info
        assert evaluation is not None
        success = evaluation.scores["goal"] >= SUCCESS_GOAL
        return (
            obs,
            evaluation.goal,
            True,
            False,
            {**info, "success": success, "score": evaluation.goal},
        )

    def _step_invalid(self, message: str) -> StepResult:
        """A non-text action is a malformed turn (Sotopia's failed parse: ``none``)."""
        obs, reward, terminated, truncated, info = self._step("")
        return f"{message} {obs}", reward, terminated, truncated, {**info, "valid": False}

    def _partner_turns(self) -> None:
        game, seat = self.state.game, self.config.seat
        while not game.done and game.acting != seat:
            play_turn(game, self.config, self.state.partner.act(self.config, game, 1 - seat))

    def _observe(self, first: bool = False) -> str:
        game = self.state.game
        text = observation(self.config, game, self.config.seat, self.state.seen, first)
        self.state.seen = len(game.events)
        return text

    def _info(self, valid: bool, evaluation: Evaluation | None = None) -> dict[str, Any]:
        game = self.state.game
        info: dict[str, Any] = {
            "valid": valid,
            "turn": game.turn,
            "turns_left": self.config.max_turns - game.turn,
        }
        if evaluation is not None:
            info["evaluation"] = evaluation.summary()
        if game.agreement is not None:
            info["agreement"] = True
        return info
