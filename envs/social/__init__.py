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

>>> import agentgym
>>> env = agentgym.make("Social-v0")
>>> obs, info = env.reset(seed=0, options={"task": "divide_things-883gxtth-s0"})
>>> obs, reward, terminated, truncated, info = env.step("action: propose book=3, hat=2, ball=0")
>>> info["valid"], terminated
(True, False)
"""

from agentgym.envs.social.actions import ACTION_TYPES, AgentAction, parse_agent_action
from agentgym.envs.social.config import AgentProfile, SocialConfig
from agentgym.envs.social.env import SocialEnv
from agentgym.envs.social.game import GameState, play_turn
from agentgym.envs.social.judge import DIMENSIONS, Evaluation, JudgeError, RuleJudge
from agentgym.envs.social.llm_judge import LLMJudge
from agentgym.envs.social.llm_partner import LLMPartner
from agentgym.envs.social.parallel import SocialParallelEnv, parallel_env
from agentgym.envs.social.partners import STRATEGIES, Negotiator, make_negotiator

__all__ = [
    "ACTION_TYPES",
    "DIMENSIONS",
    "STRATEGIES",
    "AgentAction",
    "AgentProfile",
    "Evaluation",
    "GameState",
    "JudgeError",
    "LLMJudge",
    "LLMPartner",
    "Negotiator",
    "RuleJudge",
    "SocialConfig",
    "SocialEnv",
    "SocialParallelEnv",
    "make_negotiator",
    "parallel_env",
    "parse_agent_action",
    "play_turn",
]
