"""``openspiel-ismcts``: OpenSpiel's Information Set MCTS bot (``open_spiel.python.algorithms.
ismcts.ISMCTSBot``, Cowling, Powley and Whitehouse 2011) as a barbu agent, an external
baseline that no one here wrote. docs/agents.md has how it searches, and where its
defaults come from.

At each decision with more than one legal action, the agent rebuilds the position its
observation shows (``Positions.from_observation``; it never sees the environment), fills
the three hidden hands with one world drawn uniformly among the consistent ones
(``barbu_env.game.worlds.sample_worlds``; the bot redeals them at every simulation through
``resample_from_infostate``), makes it a state of the pyspiel game ``python_barbu`` with
``episode=hand`` (``BarbuState.from_position(..., episode="hand")``,
``barbu_env.envs.openspiel.state_from_engine``) and answers with the bot's most visited
action. A simulation is worth the hand's settled score for the player: the horizon is the
end of the current hand, as for ``pimc``'s rollouts. Forced decisions (one legal action)
are taken without search.

Parameters (``make_agent("openspiel-ismcts", simulations=200)`` or
``"openspiel-ismcts:simulations=200,uct_c=40"`` on the command line): ``simulations``
per decision (default 1000), ``uct_c`` the UCT exploration constant (default 2.0, on the
scale of the hand's scores: it explores little), ``rollouts`` random playouts per new
node (default 1), ``seed``. It is deterministic for a seed.

It needs the ``openspiel`` extra; without it, making the agent raises
``barbu_env.util.extras.MissingExtraError`` with the one line to act on. Importing this module
(``import barbu_env``, the registry) does not import ``pyspiel``.
"""

from __future__ import annotations

import importlib

import numpy as np

from ..game.engine import BarbuState
from ..game.position import Positions
from ..game.rules import Rules, load_rules
from ..game.worlds import sample_worlds
from ..util.extras import require
from .base import Agent
from .registry import register

#: OpenSpiel's command-line MCTS example (``open_spiel/python/examples/mcts.py``) flags.
DEFAULT_SIMULATIONS = 1000
DEFAULT_UCT_C = 2.0
#: ``RandomRolloutEvaluator(n_rollouts=1)``, and the example's ``--rollout_count``.
DEFAULT_ROLLOUTS = 1
#: What the agent is called in messages when it needs OpenSpiel.
FEATURE = "the agent 'openspiel-ismcts'"


@register("openspiel-ismcts")
class OpenSpielISMCTSAgent(Agent):
    """OpenSpiel's ``ISMCTSBot`` searching to the end of the hand (see the module
    docstring); registered as ``openspiel-ismcts``, the constructor's keywords its
    parameters."""

    def __init__(
        self,
        seed: int = 0,
        rules: Rules | str | dict | None = None,
        simulations: int = DEFAULT_SIMULATIONS,
        uct_c: float = DEFAULT_UCT_C,
        rollouts: int = DEFAULT_ROLLOUTS,
    ):
        if simulations < 1 or rollouts < 1 or uct_c < 0:  # checked before OpenSpiel is imported
            raise ValueError("openspiel-ismcts: simulations and rollouts must be at least 1, uct_c at least 0")
        pyspiel = require("pyspiel", "openspiel", FEATURE, "open_spiel")
        spiel = importlib.import_module("barbu_env.envs.openspiel")
        ismcts = importlib.import_module("open_spiel.python.algorithms.ismcts")
        mcts = importlib.import_module("open_spiel.python.algorithms.mcts")
        self.rules = load_rules(rules)
        self.simulations, self.uct_c, self.rollouts, self.seed = simulations, float(uct_c), rollouts, seed
        default = (simulations, self.uct_c, rollouts) == (DEFAULT_SIMULATIONS, DEFAULT_UCT_C, DEFAULT_ROLLOUTS)
        self.name = "openspiel-ismcts" if default else f"openspiel-ismcts{simulations}"
        seeds = np.random.SeedSequence([seed, 0x15C75]).generate_state(4)
        self.rng = np.random.default_rng(seeds[0])  # the root world
        self._state_from_engine = spiel.state_from_engine
        self.game = spiel.load_game(self.rules, episode="hand")
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=rollouts, random_state=np.random.RandomState(seeds[1]))
        self.bot = ismcts.ISMCTSBot(
            game=self.game,
            evaluator=evaluator,
            uct_c=self.uct_c,
            max_simulations=simulations,
            random_state=np.random.RandomState(seeds[2]),
        )
        # The bot's own resampler draws from an unseeded sampler; this one is seeded.
        sampler = pyspiel.UniformProbabilitySampler(int(seeds[3] % 2**31), 0.0, 1.0)
        self.bot.set_resampler(lambda state, player: state.resample_from_infostate(player, sampler))

    def root(self, observation: dict[str, np.ndarray]):
        """The pyspiel state (``python_barbu``, ``episode=hand``) the search starts from:
        the observed position, its hidden hands one consistent world."""
        base = Positions.from_observation(observation["observation"], self.rules)
        hidden = sample_worlds(int(base.unknown_cards[0]), base.sizes[0, 1:], base.excluded[0, 1:], 1, self.rng)
        engine = BarbuState.from_position(base.with_hidden(hidden, check=False), rules=self.rules, episode="hand")
        return self._state_from_engine(self.game, engine)

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        legal = np.flatnonzero(np.asarray(observation["action_mask"]))
        if len(legal) == 1:
            return int(legal[0])
        return int(self.bot.step(self.root(observation)))
