"""barbu_env: the complete game of Barbu as a fast PettingZoo AEC environment.

``barbu_env.env(rules="standard", render_mode=None)`` returns the guarded AEC
environment, ``barbu_env.raw_env`` is its class (documented in ``barbu_env.env``'s
module, ``barbu_env/aec.py``). The engine (``barbu_env.engine``) is importable on its
own, without pettingzoo or torch: the environment is loaded on first use.

The single-agent Gymnasium environment ``"Barbu-v0"`` (``barbu_env/gym_env.py``) is
registered with Gymnasium by ``import barbu_env.gym_env``, and by ``import barbu_env``
when Gymnasium is already imported (importing ``barbu_env`` alone loads no framework).
"""

from __future__ import annotations

import sys

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


def __getattr__(name: str):
    # The PettingZoo adapter is imported lazily so that the engine stays framework-free.
    if name in ("env", "raw_env"):
        from . import aec

        return getattr(aec, name)
    raise AttributeError(f"module 'barbu_env' has no attribute {name!r}")


#: Gymnasium id of ``barbu_env.gym_env.BarbuGymEnv``.
GYM_ENV_ID = "Barbu-v0"


def _register_with_loaded_gymnasium() -> None:
    """Register ``GYM_ENV_ID`` if Gymnasium is imported (by its entry-point string, so
    nothing more is imported); ``barbu_env.gym_env`` calls it once it has imported
    Gymnasium itself."""
    gymnasium = sys.modules.get("gymnasium")
    registry = getattr(gymnasium, "registry", None)
    if registry is not None and GYM_ENV_ID not in registry:
        gymnasium.register(id=GYM_ENV_ID, entry_point="barbu_env.gym_env:BarbuGymEnv")


_register_with_loaded_gymnasium()
