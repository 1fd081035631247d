"""``TauEnv``: an agent serves a simulated user through a domain's tools, under the domain policy.

The episode rules are :class:`TauEnv`'s docstring (its card). All mutable episode state
(databases, both sides of the conversation, the reference outcome) lives in :class:`TauState`;
the databases are copy-on-write views, so ``reset`` and ``snapshot`` copy only what the episode
changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import BaseModel

from agentgym.env import ResetNeeded, StepResult, TextEnv, card
from agentgym.envs.tooluse import plan as gold_plan
from agentgym.envs.tooluse.actions import Malformed, Message, ToolCall, format_call, parse_action
from agentgym.envs.tooluse.plan import CLOSING
from agentgym.envs.tooluse.reward import (
    Judge,
    RewardInfo,
    assertion_met,
    communicated,
    gold_world,
    tau2_reward,
    tau_bench_reward,
)
from agentgym.envs.tooluse.tasks import GoldAction, TauConfig, TauGold
from agentgym.envs.tooluse.users import (
    AGENT_GREETING,
    STOP,
    UserContext,
    UserSimulator,
    is_stop,
    make_user,
)
from agentgym.envs.tooluse.world import TERMINATE_TOOLS, Requestor, World, get_domain
from agentgym.task import Task

SYSTEM_PROMPT = (
    "You are a customer service agent. Follow the policy shown in the first observation. Each "
    'turn, either call one tool, as JSON {"name": <tool>, "arguments": {...}} (the tools are '
    "in info['tools']), or write a message to the user as plain text. Tool results and the "
    "user's replies come back as observations. Transferring to a human agent ends the "
    "conversation, and so does the user when satisfied."
)


@dataclass
class TauState:
    """Everything that changes during an episode (``snapshot`` deep-copies exactly this)."""

    world: World
    reference: World
    """The gold outcome: a fresh world with the gold actions replayed."""
    plan: list[str]
    """The expert's actions (gold tool calls, requests to the user, what it must say)."""
    path: list[GoldAction] = field(default_factory=list)
    """Both sides' gold path (gold actions, then assertion fixes): see ``plan.gold_path``."""
    target: World | None = None
    """The world both sides reach by following ``path`` (the gold user stops there)."""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """The conversation in OpenAI message format (tool calls and results included)."""
    user_history: list[dict[str, Any]] = field(default_factory=list)
    said: list[str] = field(default_factory=list)
    """The agent's messages to the user."""
    calls: list[tuple[str, dict[str, Any], Requestor]] = field(default_factory=list)
    """Every tool call of the episode, the agent's and the user's, in order."""
    steps: int = 0
    reward: RewardInfo | None = None


class TauEnv(TextEnv):
    """Tool use: serve a simulated user through a domain's tools (tau-bench, tau2-bench) and BFCL.

    The agent is a customer-service agent: each turn it calls one tool of the domain or writes to the
    user; a simulated user plays the customer from the task's scenario. Grading is the benchmarks'
    own: the final database must hash equal to a fresh database after the gold actions, and what had
    to be said must have been said. Tools, errors, outputs, hashes and rewards reproduce tau-bench and
    tau2-bench (their ``Error: ...`` texts included); nothing in the data is "fixed".

    =====================  =========================================================================
    Ids                    ``TauRetail-v0``, ``TauAirline-v0``, ``TauMock-v0``, ``TauTelecom-v0``
                           (tau2-bench domains; telecom in ``telecom_env``),
                           ``TauBenchRetail-v0`` (tau-bench v1 retail on v1's own data), all
                           :class:`~agentgym.envs.tooluse.env.TauEnv`; ``BFCL-v0``
                           (:class:`~agentgym.envs.tooluse.bfcl.BFCLEnv`)
    Actions                a tool call as JSON ``{"name": ..., "arguments": {...}}`` (also OpenAI
                           tool calls, a one-call list, fenced or ``<tool_call>`` JSON, arguments as a
                           JSON string), or plain text = a message to the user (tau-bench's
                           ``respond`` form is accepted too). Tool schemas: ``info["tools"]``
    Observations           first the domain policy and the user's opening (after any earlier
                           conversation of the task); then the tool's output (``Error: ...`` on
                           failure) or the user's reply; ``info["source"]`` says which
    Users                  ``user="gold"`` (default, offline, tau2's protocol: opens with its
                           request only, gives its identity (``known_info``) when asked, never
                           reveals the rest of its scenario; plays its side of the gold path,
                           calling its own tools; confirms; says ``###STOP###`` once the gold
                           outcome is reached), ``"uncooperative"`` (offline: withholds everything,
                           refuses, gives up), ``"llm:<model spec>"`` or an
                           :class:`~agentgym.envs.tooluse.users.LLMUser` over any ``ChatClient``
                           (tau2's guidelines, their tool version where the user has tools, +
                           scenario prompt; every request carries the episode seed, so the LLM
                           layer's cache replays episodes)
    Dual control           tau2's user-side tools and state (mock: a notification inbox): the
                           user's turn may be tool calls, run on the user DB and recorded in the
                           episode (``state.calls`` with the requestor, the transcript as tau2
                           records them); the agent sees only the user's text. ``initial_state``
                           data and actions apply to either side. Telecom: the agent has 13
                           tools (customers, lines, plans, bills, data refuel, roaming), the user
                           30 on a simulated phone (status bar, airplane mode, network mode, APN,
                           SIM, data saver, VPN, app permissions, speed test, reboot, payments);
                           after every call the phone syncs with the carrier's records, as in
                           tau2; the policy is tau2's main policy + tech-support manual (option
                           ``policy="workflow"``: the workflow). Option ``solo=True`` is tau2's
                           no-user mode: the agent gets the ticket, the solo policies and both
                           sides' tools plus ``done``; a text message ends the episode at 0
    Episode end            ``transfer_to_human_agents``; a user stop token (``###STOP###``,
                           ``###TRANSFER###``, ``###OUT-OF-SCOPE###``); the agent writing
                           ``###STOP###``; truncation after ``config.max_steps`` actions (30 for
                           tau-bench v1 as in its runner, 60 otherwise) with reward 0
    Reward                 tau-bench v1: 1 iff DB hash = gold replay's and every ``outputs`` string
                           was said (lower-case, commas removed). tau2: product of the task's
                           ``reward_basis`` (DB incl. the user DB; ENV_ASSERTION on either side;
                           ACTION: 1 iff every gold action is matched by a tool call of either
                           side; COMMUNICATE; NL_ASSERTION needs ``judge=``: without one it is
                           reported in ``reward_info["unscored"]`` and not multiplied in). pass^k: run with
                           ``-k`` samples, ``agentgym report`` prints tau-bench's pass^k
    Suites                 ``tooluse/retail-train`` 74, ``tooluse/retail-test`` 40,
                           ``tooluse/airline-train`` 30, ``tooluse/airline-test`` 20, ``tooluse/mock``
                           10, ``tooluse/telecom-train`` 74, ``telecom-test`` 40 (tau2's base
                           split), ``telecom-small`` 20, ``telecom-full`` 2,285 (every task of
                           tau2's ``tasks.json``), ``tooluse/tau-bench-retail-test`` 115, ``tooluse/tau-bench-retail-dev``
                           20; ``bfcl/simple`` 400, ``bfcl/multiple`` 200, ``bfcl/parallel`` 200.
                           Tasks whose correct outcome is the unchanged database (doing nothing
                           succeeds, as the benchmarks grade it) are tagged ``inaction-succeeds``
                           and listed per suite in the manifest; the others ``needs-action``
    Expert                 replays the agent's gold actions (plus the write an env assertion names
                           where the gold actions leave it false), asks the user for the user's,
                           says the required outputs, closes: reward 1 on every task except
                           ``tau2-mock-update_task_with_user_tools``, which tau2 grades 0 on every
                           trajectory (its assertion needs the user's dismissal, its DB check the
                           user DB without it); telecom: all 2,285. BFCL: passes all 800
    Speed                  reset = fresh copy-on-write view of the shared database; ~190x faster
                           than tau-bench's deep copy per reset; telecom: 240-660 resets/s with
                           both sides' set-up actions (``benchmarks/tooluse.py``)
    Data                   tau2-bench (MIT) retail/airline/mock/telecom (telecom's TOML databases
                           converted to JSON), tau-bench (MIT) v1 retail, BFCL v4
                           (Apache-2.0), in ``data/`` with their licences
    Regenerate             ``python -m agentgym.envs.tooluse.generate``
    =====================  =========================================================================

    Databases: pydantic models of each domain (``retail.RetailDB``, ``airline.FlightDB``,
    ``mock.MockDB``, ``telecom.TelecomDB`` and the phone's ``phone_state.PhoneDB``, whole models in a
    ``db.ModelDatabase``) hold tau2 data; v1 keeps tau-bench's plain JSON. ``env.export_db()`` returns the
    database in the benchmark's JSON schema and ``env.db_hash()`` the hash the benchmark computes
    (tau2: sorted JSON dump; tau-bench: ``to_hashable``), so a state can be compared hash for hash.
    Oversight and other wrappers can use ``World`` (tool kinds READ/WRITE, ``call``, ``same_state``).

    Any non-empty text is a message to the user (``free_text_actions``), so the conformance kit
    probes these envs only with structurally malformed strings, and a model's reply reaches them
    whole, from ``ChatAgent`` as from the trainer's rollouts: no ``Action:`` line is cut out of it.
    """

    config_model: ClassVar[type[BaseModel]] = TauConfig
    system_prompt: ClassVar[str] = SYSTEM_PROMPT
    free_text_actions: ClassVar[bool] = True
    """Any non-empty text without control characters is a legitimate action (a message to the
    user), so the conformance kit's text probes are valid here; see the kit's structural probes."""
    state: TauState

    def __init__(
        self,
        suite: Any = None,
        render_mode: str | None = None,
        user: str | UserSimulator = "gold",
        judge: Judge | None = None,
    ) -> None:
        super().__init__(suite, render_mode)
        self.user = make_user(user)
        self.judge = judge
        self.seed: int | None = None

    # ------------------------------------------------------------------ tasks
    @classmethod
    def validate_task(cls, task: Task) -> BaseModel:
        config = TauConfig.model_validate(task.config)
        gold = TauGold.model_validate(task.gold)
        domain = get_domain(config.domain)
        for action in gold.actions or []:
            toolkit = domain.toolkit if action.requestor == "assistant" else domain.user_toolkit
            if toolkit is None or toolkit.kind(action.name) is None:
                side = "an agent" if action.requestor == "assistant" else "a user"
                raise ValueError(
                    f"gold.actions: {action.name!r} is not {side} tool of {config.domain}"
                )
        return config

    def gold(self) -> TauGold:
        """The current task's gold."""
        if self.task is None:
            raise ResetNeeded("call reset() first")
        return TauGold.model_validate(self.task.gold)

    # ------------------------------------------------------------------ episode
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        self.seed = seed
        return super().reset(seed=seed, options=options)

    def _reset(self, task: Task) -> tuple[str, dict[str, Any]]:
        config: TauConfig = self.config
        gold = self.gold()
        domain = get_domain(config.domain)
        world = World(domain)
        world.apply_initial_state(config.initial_state)
        reference = gold_world(domain, config, gold)
        path, target = gold_plan.gold_path(reference, gold)
        self.state = TauState(world, reference, gold_plan.expert_plan(path, gold), path, target)
        history = (config.initial_state or {}).get("message_history") or []
        self.state.transcript = [_clean(m) for m in history]
        last_agent = next(
            (
                m.get("content")
                for m in reversed(history)
                if m.get("role") == "assistant" and m.get("content")
            ),
            AGENT_GREETING,
        )
        first = self.user.reply(self._context(), self.state.user_history, str(last_agent))
        self.state.transcript.append({"role": "user", "content": first})
        policy = self.policy_text()
        obs = render_opening(policy, history, first)
        info = {
            "tools": domain.toolkit.schemas(),
            "policy": policy,
            "domain": domain.name,
            "source": "user",
            "user": self.user.name,
        }
        return obs, info

    def policy_text(self) -> str:
        """The policy the agent is shown (the domain's; telecom has variants)."""
        return get_domain(self.config.domain).policy

    def _context(self) -> UserContext:
        st = self.state
        return UserContext(
            self.config, self.seed, st.world, self._goal_met, self._user_tool, st.path, st.calls
        )

    def _user_tool(self, name: str, arguments: dict[str, Any]) -> str:
        """Run one tool call of the user on its side, recorded as tau2 records it."""
        st = self.state
        result = st.world.call(name, arguments, "user")
        st.calls.append((name, arguments, "user"))
        call_id = f"user_call_{len(st.calls)}"
        st.transcript.append(
            {
                "role": "user",
                "content": None,
                "tool_calls": [
                    {"id": call_id, "name": name, "arguments": arguments, "requestor": "user"}
                ],
            }
        )
        st.transcript.append(
            {"role": "tool", "tool_call_id": call_id, "requestor": "user", "content": result.output}
        )
        return result.output

    def _goal_met(self) -> bool:
        """Whether a satisfied user would leave: the episode reached the end of both sides' gold
        path, or the benchmark would grade it 1 now (telecom's users judge by the phone, not by
        the database: extra harmless writes do not keep them on the line)."""
        gold, st = self.gold(), self.state
        needles = gold.outputs + gold.communicate_info
        at_target = (
            st.world.same_state(st.target or st.reference)
            and all(communicated(n, st.said) for n in needles)
            and all(assertion_met(st.world, a) for a in gold.env_assertions)
        )
        return at_target or self._grade(judge=None).reward == 1.0

    def _step(self, action: str) -> StepResult:
        st = self.state
        st.steps += 1
        parsed = parse_action(action)
        if isinstance(parsed, Malformed):
            return self._finish(f"{parsed.reason} {_HINT}", False, {"valid": False})
        if isinstance(parsed, ToolCall):
            return self._tool_step(parsed)
        return self._message_step(parsed)

    def _tool_step(self, call: ToolCall, side: Requestor = "assistant") -> StepResult:
        """The agent's tool call, run on ``side``'s tools (the user's phone in tau2's solo mode);
        the agent is the requestor either way."""
        st = self.state
        known = st.world.toolkit(side).kind(call.name) is not None
        result = st.world.call(call.name, call.arguments, side)
        st.calls.append((call.name, call.arguments, "assistant"))
        call_id = f"call_{st.steps}"
        st.transcript.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "name": call.name, "arguments": call.arguments}],
            }
        )
        st.transcript.append({"role": "tool", "tool_call_id": call_id, "content": result.output})
        info = {"valid": known, "source": call.name, "tool_error": result.error}
        return self._finish(result.output, known and call.name in TERMINATE_TOOLS, info)

    def _message_step(self, message: Message) -> StepResult:
        st = self.state
        st.said.append(message.content)
        st.transcript.append({"role": "assistant", "content": message.content})
        if STOP in message.content:
            return self._finish("The agent ended the conversation.", True, {"source": "agent"})
        reply = self.user.reply(self._context(), st.user_history, message.content)
        st.transcript.append({"role": "user", "content": reply})
        return self._finish(reply, is_stop(reply), {"source": "user"})

    def _finish(self, obs: str, terminated: bool, info: dict[str, Any]) -> StepResult:
        st = self.state
        truncated = not terminated and st.steps >= self.config.max_steps
        if not (terminated or truncated):
            return obs, 0.0, False, False, info
        if terminated:
            st.reward = self.grade()
        else:
            st.reward = RewardInfo(0.0, unscored=[])
        info.update(
            success=st.reward.reward == 1.0,
            score=st.reward.reward,
            reward_info=st.reward.as_dict(),
        )
        return obs, st.reward.reward, terminated, truncated, info

    def grade(self) -> RewardInfo:
        """The benchmark's reward for the conversation so far."""
        return self._grade(self.judge)

    def _grade(self, judge: Judge | None) -> RewardInfo:
        gold, st = self.gold(), self.state
        if st.world.domain.style == "tau_bench":
            return tau_bench_reward(st.world, st.reference, gold, st.said)
        return tau2_reward(st.world, st.reference, gold, st.said, st.calls, st.transcript, judge)

    def _step_invalid(self, message: str) -> StepResult:
        self.state.steps += 1
        return self._finish(f"{message} {_HINT}", False, {"valid": False})

    # ------------------------------------------------------------------ expert and export
    def expert_action(self) -> str:
        """The next gold action, then the required outputs, then a closing message."""
        if self.task is None:
            raise ResetNeeded("call reset() before expert_action()")
        done, plan = self.plan_position(), self.state.plan
        return plan[done] if done < len(plan) else CLOSING

    # ------------------------------------------------------------------ moves, judged for wrappers
    # Public, so that an env that wraps this one through the registry (the oversight game's
    # tool seat) judges proposed moves without importing this package.
    def plan_position(self) -> int:
        """How many agent moves this episode has taken (turns of a given history not counted)."""
        history = (self.config.initial_state or {}).get("message_history") or []
        ours = sum(1 for m in self.state.transcript if m.get("role") == "assistant")
        return ours - sum(1 for m in history if m.get("role") == "assistant")

    def expert_moves(self) -> list[str]:
        """The agent's moves for the current task's gold actions alone (see :func:`expert_plan`)."""
        return expert_plan(self.gold())

    def action_kind(self, text: str) -> str:
        """``read``, ``write``, ``message`` or ``malformed`` (a tool the domain does not know
        counts as a write)."""
        parsed = parse_action(text)
        if isinstance(parsed, ToolCall):
            return "write" if self.state.world.is_mutating(parsed.name) else "read"
        return "message" if isinstance(parsed, Message) else "malformed"

    def off_gold_write(self, text: str) -> bool:
        """Whether ``text`` is a write call that the task's gold actions do not contain (same name
        and arguments, or tau2's ``compare_args``)."""
        parsed = parse_action(text)
        if not isinstance(parsed, ToolCall) or not self.state.world.is_mutating(parsed.name):
            return False
        gold = [a for a in self.gold().actions or [] if a.requestor == "assistant"]
        return not any(
            a.name == parsed.name
            and (
                a.arguments == parsed.arguments
                or bool(a.compare_args)
                and a.matches(parsed.name, parsed.arguments)
            )
            for a in gold
        )

    @staticmethod
    def gold_writes(task: Task) -> list[tuple[str, dict[str, Any]]]:
        """``task``'s gold write calls on the agent side, in order, as (tool, arguments)."""
        toolkit = get_domain(str(task.config["domain"])).toolkit
        gold = TauGold.model_validate(task.gold)
        return [
            (a.name, a.arguments)
            for a in gold.actions or []
            if a.requestor == "assistant"
            and (kind := toolkit.kind(a.name)) is not None
            and kind.value == "write"
        ]

    @staticmethod
    def call_text(name: str, arguments: dict[str, Any]) -> str:
        """The action text of a call to tool ``name``."""
        return format_call(name, arguments)

    def export_db(self) -> dict[str, Any]:
        """The agent-side database in the original benchmark's JSON schema."""
        return self.state.world.db.export()

    def db_hash(self) -> str:
        """The hash the original benchmark computes for the current database."""
        return self.state.world.db.hash()


_HINT = 'Call one tool as JSON {"name": ..., "arguments": {...}} or write a message to the user.'


def expert_plan(gold: TauGold) -> list[str]:
    """The agent's moves for the gold actions alone (no assertion fixes): see ``plan``."""
    return gold_plan.expert_plan(list(gold.actions or []), gold)


def render_opening(policy: str, history: list[dict[str, Any]], first: str) -> str:
    """The first observation: the policy, any earlier conversation, the user's message."""
    lines = [f"# Policy\n\n{policy.strip()}\n\n# Conversation\n"]
    for message in history:
        for call in message.get("tool_calls") or []:
            lines.append(
                f"{message['role']} (tool call): "
                f"{format_call(call['name'], call.get('arguments', {}))}"
            )
        if message.get("content"):
            lines.append(f"{message['role']}: {message['content']}")
    lines.append(f"user: {first}")
    return "\n".join(lines)


def _clean(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if k != "turn_idx"}


class TauRetailEnv(TauEnv):
    """tau2-bench retail."""

    default_suite: ClassVar[str | None] = "tooluse/retail-test"


class TauAirlineEnv(TauEnv):
    """tau2-bench airline."""

    default_suite: ClassVar[str | None] = "tooluse/airline-test"


class TauMockEnv(TauEnv):
    """tau2-bench mock (the domain tau2 tests its machinery with)."""

    default_suite: ClassVar[str | None] = "tooluse/mock"


class TauBenchRetailEnv(TauEnv):
    """tau-bench v1 retail on v1's own data."""

    default_suite: ClassVar[str | None] = "tooluse/tau-bench-retail-test"


for _env in (TauRetailEnv, TauAirlineEnv, TauMockEnv, TauBenchRetailEnv):
    _env.__doc__ = card(_env.__doc__ or "", TauEnv)  # help() shows the family's card
