"""TextArena's offline games as agentgym envs: ``agentgym.make("textarena/TowerOfHanoi-v0")``.

Each game runs on TextArena's own engine (the unwrapped ``-raw`` variant); a task is a seed. A
single-player game is a :class:`TextArenaEnv`; a two-player game is a PettingZoo
:class:`TextArenaParallelEnv` (both seats, turn by turn) and, for ``agentgym eval``, the
:class:`TextArenaSeatEnv`, player 0's seat with player 1 embedded as a partner. Registration
(:func:`register_envs`, the ``textarena`` entry point of ``agentgym.envs``) imports no TextArena.
"""

from agentgym.envs.textarena.env import TextArenaEnv
from agentgym.envs.textarena.experts import EXPERTS
from agentgym.envs.textarena.games import SINGLE_PLAYER, TWO_PLAYER, TextArenaConfig, env_id
from agentgym.envs.textarena.parallel import TextArenaParallelEnv
from agentgym.envs.textarena.seat import TextArenaSeatEnv


def register_envs() -> None:
    """Register every wrapped game (``agentgym.envs`` entry point; imports no TextArena)."""
    from agentgym.registry import register

    for game, line in SINGLE_PLAYER.items():
        register(env_id(game), f"{__name__}.env:TextArenaEnv", {"game": game}, line)
    for game, line in TWO_PLAYER.items():
        register(env_id(game), f"{__name__}.seat:TextArenaSeatEnv", {"game": game}, line)


__all__ = [
    "EXPERTS",
    "SINGLE_PLAYER",
    "TWO_PLAYER",
    "TextArenaConfig",
    "TextArenaEnv",
    "TextArenaParallelEnv",
    "TextArenaSeatEnv",
    "env_id",
    "register_envs",
]
