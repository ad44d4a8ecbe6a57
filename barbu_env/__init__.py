"""barbu_env: the complete game of Barbu as a fast PettingZoo AEC environment.

``barbu_env.env(rules="standard", render_mode=None)`` returns the guarded AEC
environment, ``barbu_env.raw_env`` is its class (documented in ``barbu_env.env``'s
module, ``barbu_env/envs/aec.py``). It is the current version, v1, also importable the
PettingZoo way: ``from barbu_env import barbu_v1; env = barbu_v1.env()``. The engine
(``barbu_env.game.engine``) is importable on its own, without pettingzoo or torch: the
environment is loaded on first use.

``import barbu_env`` registers the single-agent Gymnasium environment ``"Barbu-v1"``
(``GYM_ENV_ID``, ``barbu_env/envs/gym_env.py``) with Gymnasium, whatever was imported before:
``gymnasium.make("Barbu-v1", opponents="random")`` makes one learning seat against three
agents, and ``gymnasium.make_vec("Barbu-v1", num_envs=N)`` N of them stepped together on
the batched engine (its vector entry point, ``barbu_env/envs/vector_gym.py``). Gymnasium 1.x's
``gymnasium.register_envs(barbu_env)`` works too. Only the entry-point strings are
registered: PettingZoo and the environments' modules are imported when first used.

Old versions are refused with what changed since them: ``barbu_env.barbu_v0.env()``
raises PettingZoo's ``DeprecatedEnv``, ``gymnasium.make("Barbu-v0")`` Gymnasium's
(``barbu_env.envs._versions``). ``__version__`` is the installed distribution's version.
"""

from __future__ import annotations

from importlib import metadata

import gymnasium

from .envs import _versions
from .game.cards import card_from_text, card_text
from .game.constants import Contract, Phase
from .game.engine import BarbuState, IllegalActionError
from .game.rules import Rules, RulesError, load_rules

__all__ = [
    "GYM_ENV_ID",
    "BarbuState",
    "Contract",
    "IllegalActionError",
    "Phase",
    "Rules",
    "RulesError",
    "card_from_text",
    "card_text",
    "env",
    "load_rules",
    "raw_env",
]

try:
    __version__ = metadata.version("barbu")
except metadata.PackageNotFoundError:  # run from a source tree that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str):
    # The PettingZoo adapter is imported lazily so that the engine stays framework-free.
    if name in ("env", "raw_env"):
        from .envs import aec

        return getattr(aec, name)
    old = _versions.old_pettingzoo_module(name)  # barbu_v0: PettingZoo's deprecation stand-in
    if old is not None:
        return old
    raise AttributeError(f"module 'barbu_env' has no attribute {name!r}")


#: Gymnasium id of ``barbu_env.envs.gym_env.BarbuGymEnv``.
GYM_ENV_ID = _versions.GYM_ENV_ID


def _register_with_gymnasium() -> None:
    """Register ``GYM_ENV_ID`` (its single and vector entry points) and the old ids that
    refuse, by their entry-point strings, so that nothing more is imported."""
    if GYM_ENV_ID not in gymnasium.registry:
        gymnasium.register(
            id=GYM_ENV_ID,
            entry_point="barbu_env.envs.gym_env:BarbuGymEnv",
            vector_entry_point="barbu_env.envs.vector_gym:BarbuGymVectorEnv",
        )
    for old_id, entry_point in _versions.OLD_GYM_IDS.items():
        if old_id not in gymnasium.registry:
            gymnasium.register(id=old_id, entry_point=entry_point)


_register_with_gymnasium()
