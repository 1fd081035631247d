"""skyrl-gym's offline built-in envs (``gsm8k``, ``gsm8k_multi_turn``) as agentgym envs:
``agentgym.make("skyrl/gsm8k")``.

:class:`SkyRLGymEnv` runs skyrl-gym's own env class on a task whose config holds the SkyRL dataset
row (``prompt`` messages and ``extras`` with ``reward_spec``). Registration (:func:`register_envs`,
the ``skyrl`` entry point of ``agentgym.envs``) imports no skyrl-gym. The other direction, agentgym
envs in skyrl-gym's registry, is the adapter ``agentgym.integrations.skyrl_gym``.
"""

from agentgym.envs.skyrl.env import BUILTIN, NAMESPACE, SkyRLGymEnv, SkyRLRow


def register_envs() -> None:
    """Register ``skyrl/<id>`` for each wrapped built-in (``agentgym.envs`` entry point)."""
    from agentgym.registry import register

    for name, line in BUILTIN.items():
        register(f"{NAMESPACE}/{name}", f"{__name__}.env:SkyRLGymEnv", {"skyrl_env": name}, line)


__all__ = [
    "BUILTIN",
    "SkyRLGymEnv",
    "SkyRLRow",
    "register_envs",
]
