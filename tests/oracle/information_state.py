"""The oracle's information states (see ``tests/oracle/__init__.py``): what one seat
remembers of the hand under way, written independently of the product's kernels.

An information state is the oracle's observation (``observation.py``) followed by four
slices (the layout of ``barbu_env.game.observation.INFO_SLICES``, restated here):

* ``dealt`` (52): the observer's hand as dealt this hand;
* ``play_order`` (52 x 52): ``[k, card] = 1`` when ``card`` was the (k+1)-th card played
  this hand (trick cards and Domino placements alike);
* ``doubling_turns`` (7 x 8): row t is the t-th doubling turn taken this hand: the relative
  seat that took it (one-hot, 0-3), then the relative seats it named (4-7);
* ``domino_passes`` (4 x 52): ``[r, k] = 1`` when relative seat r passed with k cards placed.

``InformationStateTracker`` keeps the record: ``record(state, action)`` is called with every
action just before the oracle applies it, and notes the action with the seat and phase it
is taken in; ``encode(state, seat, obs)`` builds the vector from that record, the oracle
state's deal and ``obs``, the oracle's observation of ``seat``. After the last hand the
record stays the last hand's.
"""

from __future__ import annotations

import numpy as np

from barbu_env.game.actions import DOUBLE_OFFSET, PASS_ACTION
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.constants import NUM_PLAYERS, Phase
from tests.oracle.engine import BarbuState
from tests.oracle.observation import OBS_DIM, SLICES

#: Doubling turns in a hand at most: four, then at most three redouble-pass turns.
MAX_TURNS = 7
EXTRA_SLICES = (
    ("dealt", (NUM_CARDS,)),
    ("play_order", (NUM_CARDS, NUM_CARDS)),
    ("doubling_turns", (MAX_TURNS, 2 * NUM_PLAYERS)),
    ("domino_passes", (NUM_PLAYERS, NUM_CARDS)),
)
INFO_SLICES = SLICES + EXTRA_SLICES
INFO_DIM = OBS_DIM + sum(int(np.prod(shape)) for _, shape in EXTRA_SLICES)
#: name -> (start, end, shape) of every slice, as ``observation.OFFSETS``.
INFO_OFFSETS: dict[str, tuple[int, int, tuple[int, ...]]] = {}
_start = 0
for _name, _shape in INFO_SLICES:
    INFO_OFFSETS[_name] = (_start, _start + int(np.prod(_shape)), _shape)
    _start += int(np.prod(_shape))
_DEALT = 0  # offsets within the extra part
_PLAY = _DEALT + NUM_CARDS
_TURNS = _PLAY + NUM_CARDS * NUM_CARDS
_PASSES = _TURNS + MAX_TURNS * 2 * NUM_PLAYERS


class InformationStateTracker:
    """The record of one game's hand under way (see the module docstring)."""

    def __init__(self) -> None:
        self.hand = -1
        self.cards: list[int] = []  # cards played this hand, in order
        self.turns: list[tuple[int, int]] = []  # doubling turns: (seat, b of action 76 + b)
        self.passes: list[tuple[int, int]] = []  # Domino passes: (seat, cards placed before)

    def record(self, state: BarbuState, action: int) -> None:
        """Note ``action``, about to be applied to ``state`` by its seat to act."""
        if state.hand_number != self.hand:
            self.hand = state.hand_number
            self.cards, self.turns, self.passes = [], [], []
        seat, phase = state.current_player, state.phase
        if phase is Phase.DOUBLE:
            self.turns.append((seat, action - DOUBLE_OFFSET))
        elif phase is Phase.TRICKS or phase is Phase.DOMINO:
            if action == PASS_ACTION:
                self.passes.append((seat, len(self.cards)))
            else:
                self.cards.append(action)

    def encode(self, state: BarbuState, seat: int, obs: np.ndarray) -> np.ndarray:
        """``seat``'s information state: ``obs`` (its oracle observation of ``state``), then
        the record, from its seat."""
        extra = np.zeros(INFO_DIM - OBS_DIM, dtype=np.float32)
        dealt = state.dealt[seat]
        for card in range(NUM_CARDS):
            if (dealt >> card) & 1:
                extra[_DEALT + card] = 1.0
        if state.is_terminal or state.hand_number == self.hand:
            for k, card in enumerate(self.cards):
                extra[_PLAY + NUM_CARDS * k + card] = 1.0
            for t, (actor, b) in enumerate(self.turns):
                row = _TURNS + 2 * NUM_PLAYERS * t
                extra[row + (actor - seat) % NUM_PLAYERS] = 1.0
                for j in range(3):  # bit j: the seat j + 1 places to the actor's left
                    if (b >> j) & 1:
                        extra[row + NUM_PLAYERS + (actor + 1 + j - seat) % NUM_PLAYERS] = 1.0
            for passer, placed in self.passes:
                extra[_PASSES + NUM_CARDS * ((passer - seat) % NUM_PLAYERS) + placed] = 1.0
        return np.concatenate([np.asarray(obs, dtype=np.float32), extra])
