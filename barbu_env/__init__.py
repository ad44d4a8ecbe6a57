"""barbu_env: the complete game of Barbu as a fast PettingZoo AEC environment.

``barbu_env.env(rules="standard", render_mode=None)`` returns the guarded AEC
environment, ``barbu_env.raw_env`` is its class (documented in ``barbu_env.env``'s
module, ``barbu_env/aec.py``). It is the current version, v1, also importable the
PettingZoo way: ``from barbu_env import barbu_v1; env = barbu_v1.env()``. The engine
(``barbu_env.engine``) is importable on its own, without pettingzoo or torch: the
environment is loaded on first use.

The single-agent Gymnasium environment ``"Barbu-v1"`` (``GYM_ENV_ID``,
``barbu_env/gym_env.py``) is registered with Gymnasium by ``import barbu_env.gym_env``,
and by ``import barbu_env`` when Gymnasium is already imported (importing ``barbu_env``
alone loads no framework).

Old versions are refused with what changed since them: ``barbu_env.barbu_v0.env()``
raises PettingZoo's ``DeprecatedEnv``, ``gymnasium.make("Barbu-v0")`` Gymnasium's
(``barbu_env._versions``). ``__version__`` is the installed distribution's version.
"""

from __future__ import annotations

import sys
from importlib import metadata

from . import _versions
from .cards import card_from_text, card_text
from .engine import BarbuState, Contract, IllegalActionError, Phase
from .rules import Rules, RulesError, load_rules

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
        from . import aec

        return getattr(aec, name)
    old = _versions.old_pettingzoo_module(name)  # barbu_v0: PettingZoo's deprecation stand-in
    if old is not None:
        return old
    raise AttributeError(f"module 'barbu_env' has no attribute {name!r}")


#: Gymnasium id of ``barbu_env.gym_env.BarbuGymEnv``.
GYM_ENV_ID = _versions.GYM_ENV_ID


def _register_with_loaded_gymnasium() -> None:
    """Register ``GYM_ENV_ID``, and the old ids that refuse, if Gymnasium is imported (by
    their entry-point strings, so nothing more is imported); ``barbu_env.gym_env`` calls
    it once it has imported Gymnasium itself."""
    gymnasium = sys.modules.get("gymnasium")
    registry = getattr(gymnasium, "registry", None)
    if registry is not None and GYM_ENV_ID not in registry:
        gymnasium.register(id=GYM_ENV_ID, entry_point="barbu_env.gym_env:BarbuGymEnv")
        for old_id, entry_point in _versions.OLD_GYM_IDS.items():
            if old_id not in registry:
                gymnasium.register(id=old_id, entry_point=entry_point)


_register_with_loaded_gymnasium()
