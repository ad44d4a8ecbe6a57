"""Barbu v1, the current version of the environment, imported the PettingZoo way.

``from barbu_env import barbu_v1; env = barbu_v1.env(rules="standard")``: ``env`` and
``raw_env`` are ``barbu_env.env`` and ``barbu_env.raw_env`` (documented in
``barbu_env/aec.py``, with the version history); ``raw_env.metadata["name"]`` is
``"barbu_v1"``. The single-agent Gymnasium form is ``gymnasium.make("Barbu-v1")``.
"""

from .aec import env, raw_env

__all__ = ["env", "raw_env"]
