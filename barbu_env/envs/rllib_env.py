"""Barbu for RLlib (new API stack): a ``MultiAgentEnv`` and the masked PPO module it needs.

Needs the ``rllib`` extra (``pip install -c constraints.txt -e ".[rllib]"``); nothing
else in ``barbu_env`` imports this module.

``BarbuMultiAgentEnv(config)`` turns ``barbu_env.env()`` into an RLlib
``MultiAgentEnv``; ``config`` may give ``rules`` and ``episode`` (``"game"``, the
default, ``"round"`` or ``"hand"``), as for ``barbu_env.env``, and ``reward_scale``
(default 1).

=================  ==============================================================
Agents             ``player_0`` ... ``player_3`` (all four act; map them to one policy
                   or to several)
Observation        ``{"observations": float32[1132], "action_mask": float32[85]}``: the
                   keys RLlib's action-masking modules read (PettingZoo's
                   ``"observation"`` renamed, the mask as floats)
Action             ``Discrete(85)`` (the actions of docs/rules.md)
Step               only the agent to act gets an observation, as in the AEC env
Rewards            each agent's own settled hand scores (times ``reward_scale``): those
                   of the hands that ended since its previous decision arrive with its
                   next observation; when the episode ends every agent gets its last ones
                   with a final observation (mask all zero) and ``terminated``
=================  ==============================================================

``reset``'s ``options`` are the AEC environment's. ``step`` takes a dict with the action of
the agent to act (``action_dict[agent]``), an action id as the AEC environment takes it (a
Python or numpy integer, a 0-d integer array): anything else is an ``IllegalActionError``
(a ``ValueError``) naming it.

RLlib's env checker steps with unmasked random actions, which the game rejects (an
illegal action raises, as in the AEC environment): build with
``.environment(BarbuMultiAgentEnv, disable_env_checking=True)``.

``MaskedPPOTorchRLModule`` is RLlib's default PPO module over the ``"observations"``
vector whose logits are set to the lowest float off ``"action_mask"`` (so illegal
actions get probability 0 and add nothing to the entropy), as RLlib's
``ActionMaskingTorchRLModule`` example does on the deprecated ``PPOTorchRLModule``.
``examples/rllib_ppo.py`` trains both; ``barbu_training.external_agents.load_rllib_agent``
plays a saved module in ``barbu eval``.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from ..game.actions import AGENTS, NUM_ACTIONS
from ..game.credit import SeatCredit
from ..game.observation import OBS_HIGH, OBS_LOW, observation_bounds
from ..util.extras import needs
from .aec import env

with needs("rllib", "barbu_env.envs.rllib_env", package="ray[rllib]"):  # one line if the extra is missing
    from ray.rllib.algorithms.ppo.torch.default_ppo_torch_rl_module import DefaultPPOTorchRLModule
    from ray.rllib.core.columns import Columns
    from ray.rllib.env.multi_agent_env import MultiAgentEnv
    from ray.rllib.utils.torch_utils import FLOAT_MIN


def observation_space(low: np.ndarray = OBS_LOW, high: np.ndarray = OBS_HIGH) -> spaces.Dict:
    """An agent's observation space for observation bounds ``low``, ``high``."""
    return spaces.Dict(
        {
            "observations": spaces.Box(low, high, dtype=np.float32),
            "action_mask": spaces.Box(0.0, 1.0, (NUM_ACTIONS,), dtype=np.float32),
        }
    )


#: An observation space that holds under every rules variant; each environment's own is
#: bounded by its rules (``observation_bounds``).
OBSERVATION_SPACE = observation_space()


class BarbuMultiAgentEnv(MultiAgentEnv):
    """``barbu_env.env()`` as an RLlib ``MultiAgentEnv`` (see the module docstring)."""

    def __init__(self, config: dict | None = None):
        super().__init__()
        config = dict(config or {})
        self.env = env(rules=config.get("rules"), episode=config.get("episode", "game"))
        self.reward_scale = float(config.get("reward_scale", 1.0))
        self.agents = self.possible_agents = list(AGENTS)
        space = observation_space(*observation_bounds(self.env.unwrapped.rules))
        self.observation_spaces = {a: space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self._credit = SeatCredit()  # each agent's rewards since its latest decision

    def reset(self, *, seed: int | None = None, options: dict | None = None):
        self.env.reset(seed=seed, options=options)
        self._credit.reset()
        agent = self.env.agent_selection
        return {agent: self._observe(agent)}, {}

    def step(self, action_dict: dict):
        aec = self.env
        aec.step(action_dict[aec.agent_selection])  # the AEC environment checks that it is an action id
        # This step's rewards (a hand's settled scores, or 0) go to each agent's latest decision.
        self._credit.add([[self.reward_scale * aec.rewards[a] for a in AGENTS]])
        if all(aec.terminations.values()):  # the episode is over: every seat's last rewards
            obs = {a: self._observe(a) for a in AGENTS}
            _, owed = self._credit.end(0)
            rewards = {a: float(r) for a, r in zip(AGENTS, owed)}
            done = {a: True for a in AGENTS} | {"__all__": True}
            return obs, rewards, done, {"__all__": False}, {}
        agent = aec.agent_selection
        reward = self._credit.take(0, AGENTS.index(agent))  # its rewards since its previous decision
        return {agent: self._observe(agent)}, {agent: reward}, {"__all__": False}, {"__all__": False}, {}

    def _observe(self, agent: str) -> dict[str, np.ndarray]:
        obs = self.env.observe(agent)
        return {"observations": obs["observation"], "action_mask": obs["action_mask"].astype(np.float32)}


class MaskedPPOTorchRLModule(DefaultPPOTorchRLModule):
    """RLlib's default PPO module with masked logits (see the module docstring)."""

    def __init__(self, *, observation_space: spaces.Space | None = None, **kwargs):
        # The networks are built for the observation vector; the module keeps the dict space.
        self.observation_space_with_mask = observation_space
        inner = observation_space["observations"] if isinstance(observation_space, spaces.Dict) else observation_space
        super().__init__(observation_space=inner, **kwargs)

    def setup(self):
        super().setup()
        self.observation_space = self.observation_space_with_mask

    def _forward(self, batch: dict, **kwargs) -> dict:
        mask = self._split_mask(batch)
        return self._masked(super()._forward(batch, **kwargs), mask)

    def _forward_train(self, batch: dict, **kwargs) -> dict:
        mask = self._split_mask(batch)
        return self._masked(super()._forward_train(batch, **kwargs), mask)

    def compute_values(self, batch: dict, embeddings=None):
        self._split_mask(batch)
        return super().compute_values(batch, embeddings)

    @staticmethod
    def _split_mask(batch: dict):
        """Replace the observation dict by its vector and keep the mask in
        ``batch["action_mask"]``, in place (the learner's batch goes from the value
        computation to the training pass); returns the mask."""
        obs = batch[Columns.OBS]
        if isinstance(obs, dict):
            batch["action_mask"] = obs["action_mask"]
            batch[Columns.OBS] = obs["observations"]
        return batch["action_mask"]

    @staticmethod
    def _masked(out: dict, mask) -> dict:
        out[Columns.ACTION_DIST_INPUTS] = out[Columns.ACTION_DIST_INPUTS].masked_fill(mask <= 0, FLOAT_MIN)
        return out


__all__ = ["OBSERVATION_SPACE", "BarbuMultiAgentEnv", "MaskedPPOTorchRLModule"]
