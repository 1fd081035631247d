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
