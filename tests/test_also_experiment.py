"""``experiments.also`` with a model as the negotiator whose ``Strategy:`` line ALSO steers."""

from __future__ import annotations


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
    from agentgym.agents.llm import ChatAgent
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
