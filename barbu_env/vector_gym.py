"""The batched engine as a Gymnasium vector environment (a loose fit; read on).

===================  =============================================================
Class                ``barbu_env.vector_gym.BarbuVectorEnv(num_envs, rules=None,
                     seed=None, episode="game")``, a ``gymnasium.vector.VectorEnv``
Sub-environment i    game i of a ``barbu_env.vector.VectorBarbu``, all four seats
                     played by the caller (self-play)
Single obs space     ``Box(1132,) float32``: the observation of the seat to act
Single action space  ``Discrete(85)`` (docs/rules.md#cards-actions-and-observations)
Action masks         ``envs.action_masks()`` bool [B, 85], also ``info["action_mask"]``
Autoreset            ``AutoresetMode.SAME_STEP`` (``metadata["autoreset_mode"]``)
===================  =============================================================

Why only loosely: Gymnasium's vector environments are single-agent, one observation,
action and reward per sub-environment and step, while a Barbu game has four seats taking
turns. Here the agent of game i at a step is whichever seat is to act
(``info["seat"]``), so observations and actions fit exactly; rewards do not: a hand's
settled scores reach all four seats at once, mostly on another seat's card. The
``reward`` this class returns is the settled score of the seat that has just acted (0
unless its own action ended a hand), which keeps Gymnasium's shapes and checkers happy
but is not a learning signal. Learners use ``info["rewards"]`` (float32 [B, 4], every
seat's settled scores that arrived with the step) with ``info["seat"]`` and per-seat
bookkeeping, as ``barbu_env.vector``'s docstring describes; or use ``VectorBarbu``
directly, which this class only adapts.

``step`` returns ``terminated[i]`` true when game i's 28th hand has ended, or the last
hand of its episode (``episode``: ``"game"``, ``"round"`` or ``"hand"``, as for
``VectorBarbu``; docs/rules.md#episodes); game i is then already reset (same-step
autoreset): the observation is the new game's first decision. There is no terminal
observation (nothing is left to decide), so ``info`` has no ``"final_obs"``; it has
``"final_scores"`` (float32 [B, 4]) and ``"game_length"`` with their masks
``"_final_scores"`` and ``"_game_length"`` (valid where terminated). ``truncated`` is
always false. Every ``info`` also has ``"hand_over"`` (bool [B]). ``reset(seed=..., options=...)`` takes the options
``"deals"`` and ``"first_declarers"`` of ``VectorBarbu.reset``; a ``reset()`` without a
seed continues the games' random streams from where the last seeded one left them.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from gymnasium.vector import AutoresetMode, VectorEnv
from gymnasium.vector.utils import batch_space

from .actions import NUM_ACTIONS
from .observation import OBS_HIGH, OBS_LOW
from .rules import Rules
from .vector import VectorBarbu


class BarbuVectorEnv(VectorEnv):
    """B self-play Barbu games as a Gymnasium ``VectorEnv`` (see the module docstring)."""

    metadata: ClassVar[dict[str, Any]] = {"autoreset_mode": AutoresetMode.SAME_STEP}

    def __init__(
        self, num_envs: int, rules: Rules | str | dict | None = None, seed: int | None = None, episode: str = "game"
    ):
        self.games = VectorBarbu(num_envs, rules=rules, seed=seed, episode=episode)
        self.num_envs = self.games.num_games
        self.single_observation_space = spaces.Box(OBS_LOW, OBS_HIGH, dtype=np.float32)
        self.single_action_space = spaces.Discrete(NUM_ACTIONS)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._masks = np.zeros((self.num_envs, NUM_ACTIONS), dtype=bool)
        self._seat = np.zeros(self.num_envs, dtype=np.int64)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        options = options or {}
        obs, self._masks, self._seat = self.games.reset(
            seed=seed, deals=options.get("deals"), first_declarers=options.get("first_declarers")
        )
        return obs, {"action_mask": self._masks, "seat": self._seat}

    def step(self, actions):
        acted = self._seat
        obs, self._masks, self._seat, rewards, dones, infos = self.games.step(actions)
        reward = rewards[np.arange(self.num_envs), acted]
        info = {
            "action_mask": self._masks,
            "seat": self._seat,
            "rewards": rewards,
            "hand_over": infos["hand_over"],
            "final_scores": infos["final_scores"],
            "_final_scores": dones,
            "game_length": infos["game_length"],
            "_game_length": dones,
        }
        return obs, reward, dones, np.zeros(self.num_envs, dtype=bool), info

    def action_masks(self) -> np.ndarray:
        """The legal actions of every game's seat to act, bool [B, 85]."""
        return self._masks
