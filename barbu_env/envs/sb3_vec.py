"""Barbu for Stable-Baselines3 at the batched engine's speed: an SB3 ``VecEnv`` of N ``Barbu-v1`` games.

===================  =============================================================
Import               ``from barbu_env.envs import make_sb3_vec`` (needs the ``train``
                     extra: stable-baselines3)
Make                 ``make_sb3_vec(num_envs, seed=None, **kwargs)``: the ``VecEnv``
                     inside SB3's ``VecMonitor``, seeded: what SB3's
                     ``make_vec_env("Barbu-v1", n_envs, seed, env_kwargs=kwargs)``
                     returns, without its N environments
Class                ``BarbuSB3VecEnv(num_envs=1, **kwargs)``, a
                     ``stable_baselines3.common.vec_env.VecEnv``
Sub-environment i    one ``Barbu-v1``: the learner at ``seat``, three agents
                     (``barbu_env/envs/gym_env.py``; ``kwargs`` are its arguments)
Observation, action  ``Box(1132,) float32``, ``Discrete(85)`` per sub-environment
Action masks         ``action_masks()`` bool [N, 85]; sb3-contrib's ``MaskablePPO``
                     finds them (``get_action_masks``: ``env_method("action_masks")``)
===================  =============================================================

It adapts ``barbu_env.envs.vector_gym.BarbuGymVectorEnv`` (``gymnasium.make_vec("Barbu-v1",
...)``, documented in docs/vector.md) to SB3's vector API: one ``step`` applies the
learner's actions of all N games and plays their opponents in batch on the batched
engine, where SB3's ``DummyVecEnv`` steps N ``Barbu-v1`` one after the other::

    from sb3_contrib import MaskablePPO
    from barbu_env.envs import make_sb3_vec

    env = make_sb3_vec(64, seed=0, opponents="random", seat="rotate", reward_scale=0.01, illegal_action="raise")
    model = MaskablePPO("MlpPolicy", env, n_steps=64, batch_size=512, seed=0)
    model.learn(total_timesteps=100_000)

What equals what: with opponents given by name, sub-environment i plays the games of a
``Barbu-v1`` made with the same arguments and seeded with the same seed, move by move,
and this ``VecEnv`` returns what SB3's ``DummyVecEnv`` of such ``Barbu-v1``\\ s returns
(``make_vec_env("Barbu-v1", n_envs=N, seed=s, env_kwargs=kwargs)`` beside
``make_sb3_vec(N, seed=s, **kwargs)``): for the same actions, the same observations,
rewards, dones, masks and infos, step for step, games after games
(``tests/test_sb3_vec.py``). So MaskablePPO seeded alike learns the same on both. The
exceptions are ``BarbuGymVectorEnv``'s (docs/vector.md): an ``Agent`` object given as an
opponent is one instance shared by every game.

SB3's conventions, as ``DummyVecEnv`` keeps them:

* ``seed(s)`` sets the seeds ``s + i`` that the next ``reset()`` uses (``_seeds``; ``None``:
  SB3 draws ``s``), ``set_options(options)`` its options (``Barbu-v1``'s ``"seat"``,
  ``"deals"``, ``"first_declarer"``, the same for every sub-environment); both are used
  once. A ``reset()`` without seeds draws each sub-environment's next game from its
  generator, as ``Barbu-v1``'s ``reset()``. ``reset_infos[i]`` is the info of
  sub-environment i's latest reset (through ``make_sb3_vec``'s ``VecMonitor``:
  ``env.unwrapped.reset_infos``; SB3's wrappers keep an empty list of their own).
* ``step_wait`` returns ``obs`` float32 [N, 1132], ``rewards`` float32 [N], ``dones`` bool
  [N] (a game's last hand settled; nothing is truncated) and one info dict per
  sub-environment: ``Barbu-v1``'s step info (``"seat"``, ``"action_mask"`` int8 [85],
  ``"scores"`` on the last step, ``"hand_results"`` with ``hand_results=True``,
  ``"illegal_action"``), ``"TimeLimit.truncated"`` (false), and where done
  ``"terminal_observation"``, the learner's last view of the finished game. A done
  sub-environment is reset at once: ``obs[i]`` and ``action_masks()[i]`` are its next
  game's first decision, its reset info in ``reset_infos[i]``.
* ``get_attr(name)`` gives the setting ``name`` of the sub-environments, N times (they
  share their settings: ``render_mode``, ``rules``, ``reward_scale``, ...);
  ``set_attr`` sets it for all. ``env_method`` has one method, ``"action_masks"``,
  the rows of ``action_masks()``. ``env_is_wrapped`` is false (the sub-environments
  are not Gymnasium environments, so none is wrapped). ``render_mode`` is None.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium.vector import AutoresetMode

from ..util.extras import needs
from .vector_gym import BarbuGymVectorEnv

with needs("train", "barbu_env.envs.sb3_vec", package="stable-baselines3"):  # one line if the extra is missing
    from stable_baselines3.common.vec_env import VecEnv, VecMonitor
    from stable_baselines3.common.vec_env.base_vec_env import VecEnvIndices

__all__ = ["BarbuSB3VecEnv", "make_sb3_vec"]


def make_sb3_vec(num_envs: int = 1, seed: int | None = None, **kwargs: Any) -> VecMonitor:
    """``num_envs`` games of ``Barbu-v1`` (``kwargs``: its arguments) as one SB3 ``VecEnv``,
    seeded with ``seed`` (the next ``reset()`` seeds sub-environment i with ``seed + i``)
    and inside SB3's ``VecMonitor`` (episode returns and lengths, as the ``Monitor`` of
    ``make_vec_env``)."""
    env = BarbuSB3VecEnv(num_envs, **kwargs)
    env.seed(seed)
    return VecMonitor(env)


class BarbuSB3VecEnv(VecEnv):
    """N ``Barbu-v1`` games as one SB3 ``VecEnv`` on the batched engine (see the module docstring)."""

    def __init__(self, num_envs: int = 1, **kwargs: Any):
        # Next-step autoreset underneath keeps each ended game's last observation; step_wait resets those games itself.
        self.gym_vector = BarbuGymVectorEnv(num_envs, autoreset_mode=AutoresetMode.NEXT_STEP, **kwargs)
        super().__init__(num_envs, self.gym_vector.single_observation_space, self.gym_vector.single_action_space)
        self._actions = np.zeros(num_envs, dtype=np.int64)

    def reset(self) -> np.ndarray:
        options = self._options[0]
        if any(o != options for o in self._options):
            raise ValueError("set_options: BarbuSB3VecEnv takes the same options for every sub-environment")
        obs, info = self.gym_vector.reset(seed=self._seeds, options=options or None)
        self.reset_infos = list(_split(info, range(self.num_envs)).values())
        self._reset_seeds()
        self._reset_options()
        return obs

    def step_async(self, actions: np.ndarray) -> None:
        self._actions = actions

    def step_wait(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[dict[str, Any]]]:
        obs, rewards, dones, _, info = self.gym_vector.step(self._actions)
        infos = list(_split(info, range(self.num_envs), {"TimeLimit.truncated": False}).values())
        if dones.any():
            ended = np.flatnonzero(dones).tolist()
            for i, last in zip(ended, obs[dones]):
                infos[i]["terminal_observation"] = last
            first, reset_info = self.gym_vector.reset(options={"reset_mask": dones})
            obs[dones] = first[dones]
            for i, row in _split(reset_info, ended).items():
                self.reset_infos[i] = row
        return obs, rewards.astype(np.float32), dones, infos

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions in every game, bool [N, 85] (what ``MaskablePPO`` reads)."""
        return self.gym_vector.action_masks()

    def close(self) -> None:
        self.gym_vector.close()

    def get_attr(self, attr_name: str, indices: VecEnvIndices = None) -> list[Any]:
        return [getattr(self.gym_vector, attr_name)] * len(self._get_indices(indices))

    def set_attr(self, attr_name: str, value: Any, indices: VecEnvIndices = None) -> None:
        setattr(self.gym_vector, attr_name, value)

    def env_method(self, method_name: str, *method_args, indices: VecEnvIndices = None, **method_kwargs) -> list[Any]:
        if method_name != "action_masks":
            raise AttributeError(f"env_method: the sub-environments' one method is action_masks, not {method_name!r}")
        return list(self.action_masks()[self._get_indices(indices)])

    def env_is_wrapped(self, wrapper_class: type, indices: VecEnvIndices = None) -> list[bool]:
        return [False] * len(self._get_indices(indices))


def _split(info: dict[str, Any], rows: Sequence[int], first: dict[str, Any] | None = None) -> dict[int, dict]:
    """Gymnasium's vector ``info`` (each key with its ``"_key"`` mask) as one dict per
    sub-environment of ``rows``, each starting with the items of ``first``."""
    out = {i: dict(first or {}) for i in rows}
    for key, values in info.items():
        if not key.startswith("_"):
            for i in np.flatnonzero(info["_" + key]).tolist():
                if i in out:
                    out[i][key] = values[i]
    return out
