"""barbu_env: the complete game of Barbu as a fast PettingZoo AEC environment.

``barbu_env.env(rules="standard", render_mode=None)`` returns the guarded AEC
environment, ``barbu_env.raw_env`` is its class (documented in ``barbu_env.env``'s
module, ``barbu_env/aec.py``). The engine (``barbu_env.engine``) is importable on its
own, without pettingzoo or torch: the environment is loaded on first use.
"""

from __future__ import annotations

from .cards import card_from_text, card_text
from .engine import BarbuState, Contract, IllegalActionError, Phase
from .rules import Rules, RulesError, load_rules

__all__ = [
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
