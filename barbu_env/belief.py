"""Where the hidden cards are, from one seat's observation: the public name of
``barbu_env.agents.belief`` (its docstring is the contract; ``docs/belief.md`` the guide).

``probabilities(observation, model=None, seat=0)`` float64 [52, 4] by absolute seat;
``sample_deals(observation, n, rng, model=None, seat=0)`` uint64 [n, 4] whole deals;
``sample_hidden(observation, n, rng, model=None)`` uint64 [n, 3], the other seats' hands
(``worlds.sample_worlds``' format); ``samplers(observations, model=None)`` one reusable
``Sampler`` per observation, the network asked once; ``model``: None (the shipped network,
torch needed), ``"uniform"``, a checkpoint path, or a loaded model (``load_model``).
An ``observation`` is the vector or an environment's dict (``env.last()``'s); a ``seat``
is 0-3 or the agent's name (``env.agent_selection``). ``cards_of(mask)``: the card ids of
a card set (a 52-bit int, or an element of the uint64 arrays above), ascending
(``barbu_env.game.cards.cards_of``; ``hand_text(mask)`` writes them as text).
"""

from .agents.belief import *  # noqa: F403  (the names of its __all__)
from .agents.belief import __all__ as _belief_names
from .game.cards import cards_of, hand_text

__all__ = [*_belief_names, "cards_of", "hand_text"]
