"""The bounded context (agents/context.py): what it shows, and that the chat agent
(``hf:PATH?history=K``) and the SFT rows built for training show the same prompt, token for
token."""

from __future__ import annotations

import pytest

from agentgym.agents.context import play_rows
from agentgym.bounded_context import BoundedHistory, bounded_prompt
from agentgym.chat_agent import ChatAgent, ChatAgentConfig, chat_agent
from agentgym.envs.household.env import HouseholdEnv
from agentgym.task import TaskSuite
from agentgym.testing import ScriptedClient


def test_prompt_shows_task_last_k_steps_observation_and_actions():
    obs = ["intro", "On the shelf 1, you see a pen 1.", "Nothing happens.", "You open it."]
    acts = ["go to shelf 1", "take x", "open drawer 1"]
    text = bounded_prompt("put a pen in drawer.", obs, acts, ["look", "go to shelf 1"], 2)
    lines = text.splitlines()
    assert lines[0] == "Your task is to: put a pen in drawer."
    assert "you have taken 3 step(s)" in lines[1]
    assert lines[2:4] == [
        "[Observation 2: 'On the shelf 1, you see a pen 1.', Action 2: 'take x']",
        "[Observation 3: 'Nothing happens.', Action 3: 'open drawer 1']",
    ]  # the first step is out of the window
    assert "intro" not in text
    assert lines[4] == "You are now at step 4. Current observation: You open it."
    assert lines[5] == "Admissible actions: [look, go to shelf 1]."
    first = bounded_prompt("t", ["intro"], [], None, 2)
    assert "Prior" not in first and "Admissible" not in first and "intro" in first


def test_prompt_length_is_bounded_whatever_the_turn():
    obs = [f"observation {i}" for i in range(41)]
    acts = [f"action {i}" for i in range(40)]
    short = bounded_prompt("t", obs[:4], acts[:3], [], 2)
    long = bounded_prompt("t", obs, acts, [], 2)
    assert abs(len(long) - len(short)) < 20  # only the step numbers grow


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: bounded_prompt("t", ["a"], ["x"], None, 2), "one more observation"),
        (lambda: bounded_prompt("t", ["a"], [], None, -1), "history must be >= 0"),
    ],
)
def test_clear_errors(call, message):
    with pytest.raises(ValueError, match=message):
        call()


class Replay:
    """Plays a fixed list of commands (the chat agent's, for the training-side rows)."""

    def __init__(self, actions: list[str]) -> None:
        self.actions = actions

    def reset(self, info):
        self.i = 0

    def act(self, observation, info):
        self.i += 1
        return self.actions[self.i - 1]


@pytest.mark.parametrize("notes", [None, "household"])
def test_chat_agent_and_sft_rows_build_the_same_prompt(tiny_model, notes):
    """The tiny model plays 4 turns as ``hf:PATH?history=2`` (with or without ``&notes=``); the rows the training data is made
    of (:func:`play_rows`, as ``experiments.household_full`` writes them) for the same commands
    hold the same user message at every step, and the trainer's chat format tokenises it to as
    many tokens as the agent's client sent."""
    from transformers import AutoTokenizer

    from agentgym.train.chat import ChatFormat
    from agentgym.train.sft import from_messages

    task = next(iter(TaskSuite.load("household/valid_unseen")))
    task = task.model_copy(update={"config": {**task.config, "max_turns": 4}})
    env = HouseholdEnv()
    option = f"&notes={notes}" if notes else ""
    agent = chat_agent(f"hf:{tiny_model}?history=2{option}&max_tokens=6&max_format_errors=0", env)
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset(info)
    prompts, actions, prompt_tokens = [], [], []
    for _ in range(4):
        action = agent.act(obs, info)
        assert agent.messages[0]["role"] == "user"  # no system prompt, no demonstration
        prompts.append(agent.messages[0]["content"])
        actions.append(action.text)
        prompt_tokens.append(action.usage.prompt_tokens)
        obs, _, terminated, truncated, info = env.step(action.text)
    rows, _ = play_rows(HouseholdEnv(), Replay(actions), task, history=2, notes=notes)
    assert [r["messages"][0]["content"] for r in rows] == prompts
    assert all(("Notes: " in p) == (notes is not None) for p in prompts)
    assert [r["messages"][1]["content"] for r in rows] == actions
    assert "Admissible actions: [go to " in prompts[0] and "Observation 1:" in prompts[2]
    chat = ChatFormat(AutoTokenizer.from_pretrained(str(tiny_model)), system_prompt=False)
    sft = [from_messages(chat, r["messages"]) for r in rows]
    assert [ep.prompt_len for ep in sft] == prompt_tokens


def test_history_option_is_checked():
    with pytest.raises(ValueError, match="history"):
        chat_agent("hf:nowhere?history=-1", None)
    with pytest.raises(ValueError, match="set history=K too"):
        chat_agent("hf:nowhere?notes=household", None)
    with pytest.raises(ValueError, match="unstick needs a bounded context: set history=K too"):
        chat_agent("hf:nowhere?unstick=1", None)
    with pytest.raises(ValueError, match="unstick"):
        chat_agent("hf:nowhere?history=2&unstick=0", None)
    with pytest.raises(ValueError, match="unknown notes 'diary'; registered: household"):
        chat_agent("hf:nowhere?history=2&notes=diary", None)
    with pytest.raises(ValueError, match="unknown notes"):
        BoundedHistory(2, "diary")


def test_unstick_samples_the_turns_after_two_identical_steps():
    """``?unstick=1``: greedy until one command has been answered twice running with the same
    text (``Nothing happens.``); every turn after that samples at temperature 1, until the
    steps differ again."""
    task = next(iter(TaskSuite.load("household/valid_unseen")))
    env = HouseholdEnv()
    replies = ["examine nothing"] * 4 + ["look", "inventory"]
    client = ScriptedClient(replies)
    agent = ChatAgent(client, env, ChatAgentConfig(history=2, unstick=1.0, max_format_errors=0))
    obs, info = env.reset(seed=0, options={"task": task})
    agent.reset(info)
    for _ in replies:
        action = agent.act(obs, info)
        obs, _, _, _, info = env.step(action.text)
        assert action.text != "examine nothing" or obs == "Nothing happens."
    assert [r.temperature for r in client.requests] == [0.0, 0.0, 1.0, 1.0, 1.0, 0.0]


def test_household_notes_keep_what_scrolled_out_of_the_window():
    """The searcher wins a cool task; at every step the notes list the overview's receptacles
    not yet gone to, in listing order, where it stands, what it holds (and whether it is cooled),
    the task's things where it stands and where it saw objects of the task's types elsewhere:
    each of them shown to it earlier, and all of it out of a 2-step window by the end."""
    from agentgym.envs.household.searcher import SearchAgent, read_intro

    suite = TaskSuite.load("household/valid_unseen")
    task = next(t for t in suite if t.instruction.startswith("put a cool cup"))
    rows, won = play_rows(HouseholdEnv(), SearchAgent(), task, history=2, notes="household")
    assert won
    prompts = [r["messages"][0]["content"] for r in rows]
    actions = [r["messages"][1]["content"] for r in rows]
    notes = [next(line for line in p.splitlines() if line.startswith("Notes: ")) for p in prompts]
    overview = prompts[0].split("Current observation: ", 1)[1]
    listing = read_intro(overview).receptacles
    assert notes[0] == (
        "Notes: task things here: none; seen elsewhere: nothing wanted; not visited yet: "
        + ", ".join(listing)
    )
    for step, line in enumerate(notes):
        gone = {a.removeprefix("go to ") for a in actions[:step] if a.startswith("go to ")}
        left = line.split("not visited yet: ", 1)[1]
        assert left == (", ".join(r for r in listing if r not in gone) or "none")
        if step and actions[step - 1].startswith("go to "):  # there, or there too
            assert actions[step - 1].removeprefix("go to ") in line.split(";")[0]
            assert line.startswith("Notes: at ")
    cooled = next(i for i, a in enumerate(actions) if a.startswith("cool ")) + 1
    held = actions[cooled - 1].split()[1:3]
    assert f"holding {' '.join(held)} (cooled)" in notes[cooled]
    assert "holding" not in notes[0] and "(cooled)" not in notes[cooled - 1]
    took = next(i for i, a in enumerate(actions) if a.startswith("take "))
    taken = actions[took].split()[1:3]
    assert f"task things here: {' '.join(taken)}" in notes[took]  # the cup it takes is here
    fridge = actions[cooled - 1].split(" with ")[1]
    assert f"task things here: {fridge}" in notes[cooled - 1]  # and so is the fridge
    shown = [p.split("Current observation: ", 1)[1].split("\nAdmissible")[0] for p in prompts]
    for step, line in enumerate(notes):
        seen = line.split("seen elsewhere: ", 1)[1].split(";")[0]
        for item in [] if seen == "nothing wanted" else seen.split(", "):
            obj, where = item.split(" in ")
            assert any(obj in o and where in o for o in shown[: step + 1]), item


def test_bounded_history_records_the_agents_actions():
    ctx = BoundedHistory(1)
    ctx.start("put a pen in drawer.")
    ctx.prompt("intro", {"available_actions": ["look"]})
    ctx.acted("look")
    text = ctx.prompt("You see nothing.", {})
    assert "Action 1: 'look'" in text and "Admissible" not in text


@pytest.mark.parametrize("notes", [None, "household"])
def test_trainer_rollouts_build_the_chat_agents_prompt(tiny_model, notes):
    """``rollout.history=2``: each turn is generated from its own prompt, and that prompt's ids
    are the chat format's ids of the user message the chat agent and the SFT rows hold for the
    same commands; step rows cut there and reproduce the sampling logprobs."""
    import torch

    from agentgym.llm.engine import load_engine
    from agentgym.llm.sampling import SamplingSpec
    from agentgym.train.batch import build_batch
    from agentgym.train.chat import ChatFormat
    from agentgym.train.config import RolloutConfig
    from agentgym.train.envpool import LocalEnvPool
    from agentgym.train.policy import load_model, load_tokenizer, token_logprobs
    from agentgym.train.rollout import Job, collect

    torch.manual_seed(0)
    model, tok = load_model(tiny_model), load_tokenizer(tiny_model)
    engine = load_engine("local", model, 4, tokenizer=tok)
    chat = ChatFormat(tok, system_prompt=False)
    task = next(iter(TaskSuite.load("household/valid_unseen")))
    task = task.model_copy(update={"config": {**task.config, "max_turns": 4}})
    rollout = RolloutConfig(max_turns=4, history=2, notes=notes)
    sampling = SamplingSpec(max_tokens=6, temperature=1.0)
    jobs = [Job(task, "g", k, k) for k in range(2)]
    pool = LocalEnvPool("Household-v0")
    episodes, _ = collect(engine, chat, pool, jobs, rollout, sampling, seed=3)
    for ep in episodes:
        assert ep.ok and len(ep.turns) == 4
        actions = [s.action for s in ep.episode.steps]
        rows, _ = play_rows(HouseholdEnv(), Replay(actions), task, history=2, notes=notes)
        for turn, row in zip(ep.turns, rows, strict=True):
            assert ep.ids[turn.context_start : turn.action_start] == chat.prompt(
                "", row["messages"][0]["content"]
            )
        assert (
            ep.turns[0].context_start == 0 and ep.turns[1].context_start == ep.turns[0].action_end
        )
    batch = build_batch(episodes, None, layout="step")
    assert batch.rows == 8 and batch.input_ids.shape[1] < max(len(e.ids) for e in episodes)
    with torch.no_grad():
        logp, _ = token_logprobs(model, batch)
    on = batch.loss_mask > 0
    assert torch.allclose(logp[on], batch.old_logprobs[on], atol=1e-4)
    with pytest.raises(ValueError, match="layout step"):
        build_batch(episodes, None, layout="episode")
    from agentgym.train.ppo import _at_value_positions

    targets = [_at_value_positions(ep, [10.0 * (k + 1) for k in range(4)]) for ep in episodes]
    batch = build_batch(episodes, None, layout="step", returns=targets)
    for r, turn in enumerate(t for ep in episodes for t in ep.turns):
        at = turn.action_start - turn.context_start - 1  # the position that predicts the action
        assert batch.returns[r, at] == 10.0 * (r % 4 + 1) and batch.value_weights[r, at] > 0
        assert batch.value_weights[r].count_nonzero() == 1


def test_trainer_config_needs_step_rows_for_a_bounded_context():
    from agentgym.train.config import TrainConfig

    base = {"model": {"path": "tiny"}, "env": {"id": "Household-v0"}, "rollout": {"history": 2}}
    with pytest.raises(ValueError, match="algo.layout=step"):
        TrainConfig.model_validate(base)
    cfg = TrainConfig.model_validate({**base, "algo": {"layout": "step"}})
    assert cfg.rollout.history == 2
    step = {"algo": {"layout": "step"}}
    with pytest.raises(ValueError, match="unstick needs a bounded context: set history=K too"):
        chat_agent("hf:nowhere?unstick=1", None)
    with pytest.raises(ValueError, match="unstick"):
        chat_agent("hf:nowhere?history=2&unstick=0", None)
    with pytest.raises(ValueError, match="unknown notes 'diary'; registered: household"):
        TrainConfig.model_validate({**base, **step, "rollout": {"history": 2, "notes": "diary"}})
    with pytest.raises(ValueError, match="set rollout.history"):
        TrainConfig.model_validate({**base, **step, "rollout": {"notes": "household"}})


@pytest.mark.parametrize("algo", ["gigpo", "ppo"])
def test_trainer_steps_with_a_bounded_context(tiny_model, tmp_path, algo):
    """One RL step on Household with ``rollout.history`` runs end to end (GiGPO; PPO, whose
    critic reads the value before each action from the rows cut at each turn's prompt)."""

    from agentgym.train.config import TrainConfig
    from agentgym.train.trainer import Trainer

    cfg = TrainConfig.model_validate(
        {
            "model": {"path": str(tiny_model)},
            "env": {
                "id": "Household-v0",
                "suite": "household/valid_unseen",
                "limit": 2,
                "system_prompt": False,
            },  # fmt: skip
            "rollout": {
                "tasks_per_step": 2,
                "group_size": 2,
                "max_turns": 3,
                "max_tokens": 6,
                "history": 2,
            },  # fmt: skip
            "algo": {"name": algo, "layout": "step"},
            "optim": {"lr": 1e-2, "micro_batch_size": 4},
            "steps": 1,
            "out_dir": str(tmp_path),
            "threads": 1,
        }
    )
    trainer = Trainer(cfg)
    start = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    metrics = trainer.run()
    assert metrics["loss_tokens"] > 0 and all(v == v for v in metrics.values())
    assert set(start) == set(trainer.model.state_dict())  # (an untrained model wins nothing)


def test_stuttered_rows_teach_the_step_after_a_repeated_go_to():
    """With stutter, some prompts show a ``go to`` answered ``Nothing happens.`` (the state a
    cloned policy loops in), the label there is the searcher's own next command, the episode is
    still won, and no row's label is a repeat; without, the rows are the clean ones."""
    from agentgym.envs.household.searcher import SearchAgent

    task = next(iter(TaskSuite.load("household/valid_unseen")))
    clean, won = play_rows(HouseholdEnv(), SearchAgent(), task, history=2)
    assert won
    again, _ = play_rows(HouseholdEnv(), SearchAgent(), task, history=2, stutter=0.0, seed=5)
    assert again == clean
    rows, won = play_rows(HouseholdEnv(), SearchAgent(), task, history=2, stutter=0.5, seed=0)
    assert won
    repeated = [r for r in rows if "Nothing happens." in r["messages"][0]["content"]]
    assert len(repeated) > sum("Nothing happens." in r["messages"][0]["content"] for r in clean)
    labels = [r["messages"][1]["content"] for r in rows]
    assert all(
        a != b or not a.startswith("go to") for a, b in zip(labels, labels[1:], strict=False)
    )
    assert rows == play_rows(HouseholdEnv(), SearchAgent(), task, history=2, stutter=0.5)[0]


def test_relabel_rows_show_the_learners_states_with_the_searchers_commands():
    """DAgger's rows: the prompts are the learner's (its own commands in the history), each
    labelled with what the searcher would do there; the demonstrator's own play relabels to
    itself."""
    from agentgym.agents.context import relabel_rows
    from agentgym.envs.household.searcher import SearchAgent, next_command

    task = next(t for t in TaskSuite.load("household/valid_unseen") if t.tags[0] == "put")
    rows, won = play_rows(HouseholdEnv(), SearchAgent(), task, 2, notes="household")
    own = [r["messages"][1]["content"] for r in rows]
    again = relabel_rows(HouseholdEnv(), task, own, next_command, 2, "household")
    assert won and [r["messages"] for r in again] == [r["messages"] for r in rows]
    wrong = ["go to " + own[0].removeprefix("go to ")] * 3 + own  # a learner that stutters
    relabelled = relabel_rows(HouseholdEnv(), task, wrong, next_command, 2, "household")
    assert [r["learner"] for r in relabelled] == wrong[: len(relabelled)]
    assert "Nothing happens." in relabelled[2]["messages"][0]["content"]
    for row in relabelled[1:3]:  # the way on, not the stutter
        assert row["messages"][1]["content"] == own[1]
