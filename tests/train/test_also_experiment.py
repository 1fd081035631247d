"""``experiments.also`` with a model as the negotiator whose ``Strategy:`` line ALSO steers."""

from __future__ import annotations

import pytest


@pytest.mark.slow
@pytest.mark.timeout(900)  # 84 s in CI; five times that beside other CPU work on 2 cores
def test_also_steers_a_model_negotiator(tiny_model, capsys):
    """``--base hf:PATH``: every method plays the model (loaded once), only the fixed arms and the
    chosen bandits run, and the report names the negotiator."""
    import torch

    from experiments import also

    threads = torch.get_num_threads()
    try:
        results = also.main(
            ["--base", f"hf:{tiny_model}?max_tokens=8", "--seeds", "1", "--episodes", "1",
             "--schedules", "fixed", "--bandits", "ucb1", "--embedder", "hash", "--epochs", "2"]
        )  # fmt: skip
    finally:
        torch.set_num_threads(threads)  # main() sets the process's torch threads
    assert set(results) == {f"schedule:{k}:{k}" for k in range(13)} | {"ucb1"}
    assert all(len(r.means) == 1 for r in results.values())
    out = capsys.readouterr().out
    assert f"negotiator hf:{tiny_model}" in out and "UCB1" in out
    assert "169 schedules" not in out


def test_episode_sends_a_chat_agents_text_to_the_env():
    """A model negotiator returns an Action (text + usage); the env must get its text, so its
    moves count (a non-str action is invalid in every env)."""
    import agentgym
    from agentgym.chat_agent import ChatAgent
    from agentgym.testing import ScriptedClient
    from experiments import also

    env = agentgym.make("Social-v0", partner="scripted:switcher?switch=10")
    sent: list = []
    step = env.step
    env.step = lambda action: sent.append(action) or step(action)
    base = ChatAgent(ScriptedClient(lambda req: "speak: Let us find a fair deal."), env)
    task = also.draw_tasks(also.parse_args(["--seeds", "1", "--episodes", "1"]))[0][0]
    also.episode(env, also.Schedule(base, 3, 3, 10), task, 0)
    assert sent and all(a == "speak: Let us find a fair deal." for a in sent)
    game = env.unwrapped.state.game
    mine = [e for e in game.events if e.seat == env.unwrapped.config.seat]
    assert mine and all(e.valid and e.action.action_type == "speak" for e in mine)


def test_follower_chats_teach_a_model_the_strategy_line(tiny_model, tmp_path):
    """``experiments.also_sft``: the follower's episodes on tasks the ALSO run does not play,
    recorded as the chat a model sees (a Strategy line per arm), then a LoRA adapter that the
    harness's ``--base hf:PATH`` loads."""
    import json

    import agentgym
    from agentgym.agent import agent_factory
    from agentgym.agents.also import STRATEGY_SETS
    from experiments import also, also_sft

    argv = ["--model", str(tiny_model), "--model-layers", "2", "--lora-layers", "1",
            "--lora-r", "4", "--out", str(tmp_path), "--tasks", "2", "--steps", "1",
            "--sft-batch", "2"]  # fmt: skip
    adapter = also_sft.main(argv)
    assert (adapter / "adapter_config.json").is_file()
    rows = [json.loads(line) for line in (tmp_path / "follower.jsonl").read_text().splitlines()]
    held_out = also.draw_tasks(also.parse_args(["--seeds", "1", "--episodes", "10"]))[0]
    assert len(rows) == 2 and not {r["task_id"] for r in rows} & {t.id for t in held_out}
    for row in rows:
        users = [m["content"] for m in row["messages"] if m["role"] == "user"]
        replies = [m["content"] for m in row["messages"] if m["role"] == "assistant"]
        assert row["messages"][0]["role"] == "system" and len(users) == len(row["arms"])
        for arm, user in zip(row["arms"], users, strict=True):
            text = STRATEGY_SETS[13][arm][1]
            assert user.startswith(f"Strategy: {text}\n") if text else "Strategy:" not in user
        assert all(r.split(":")[0] in {"speak", "action", "leave", "none"} for r in replies)
    (tmp_path / "sft").rename(tmp_path / "first")
    assert (
        also_sft.main(argv)
        and json.loads((tmp_path / "follower.jsonl").read_text().splitlines()[0]) == rows[0]
    )  # the kept chats are read, not recorded again
    env = agentgym.make("Social-v0")
    obs, info = env.reset(seed=0)
    agent = agent_factory(f"hf:{adapter}?max_tokens=4")(env)
    agent.reset(info)
    assert isinstance(agent.act(obs, info).text, str)


def test_move_counts_of_the_strategy_follower():
    """``experiments.also_moves``: the follower's every move is valid, and it makes deals."""
    from experiments import also_moves

    counts = also_moves.main(["--arms", "0", "3", "--episodes", "2"])
    for c in counts.values():
        assert c["turns"] > 0 and c["valid"] == c["turns"]
        assert c["action"] + c["speak"] + c["leave"] + c["none"] == c["turns"]
