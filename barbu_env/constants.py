"""The game's fixed sizes and names: seats, hands, contracts, phases, and the agent name of
each seat. Below everything but ``cards``: the action ids (``actions.py``) and the engine
build on it, and ``barbu_env.engine`` re-exports every name here.

>>> Contract.DOMINO, CONTRACT_NAMES[Contract.NO_KING_OF_HEARTS], AGENTS[2]
(<Contract.DOMINO: 6>, 'no_king_of_hearts', 'player_2')
"""

from __future__ import annotations

import enum
from types import MappingProxyType

NUM_PLAYERS = 4
NUM_HANDS = 28
HANDS_PER_DECLARER = 7
CARDS_PER_HAND = 13

#: The episode lengths the environments offer (their ``episode`` argument), each a prefix of
#: the game: the whole game, the first seven hands (one declarer's seven under the default
#: rotation), the first hand. Mode name -> hands played (docs/rules.md#episodes).
EPISODE_HANDS = MappingProxyType({"game": NUM_HANDS, "round": HANDS_PER_DECLARER, "hand": 1})

#: The agent name of each seat, as the environments name them: ``AGENTS[seat]``.
AGENTS = tuple(f"player_{seat}" for seat in range(NUM_PLAYERS))


class Contract(enum.IntEnum):
    NO_TRICKS = 0
    NO_HEARTS = 1
    NO_QUEENS = 2
    NO_KING_OF_HEARTS = 3  # "Barbu"
    NO_LAST_TWO = 4
    TRUMPS = 5
    DOMINO = 6


class Phase(enum.IntEnum):
    """Where a hand stands: who decides what next."""

    DECLARE = 0  # declarer picks one of their unused contracts
    TRUMP = 1  # Trumps: declarer names the trump suit
    DOMINO_RANK = 2  # Domino: declarer names the starting rank
    DOUBLE = 3  # the doubling turns
    TRICKS = 4  # trick play (every contract but Domino)
    DOMINO = 5  # Domino play
    GAME_OVER = 6  # after hand 28 (or the last hand of a shorter episode)


NUM_CONTRACTS = len(Contract)
CONTRACT_NAMES = ("no_tricks", "no_hearts", "no_queens", "no_king_of_hearts", "no_last_two", "trumps", "domino")
POSITIVE_CONTRACTS = (Contract.TRUMPS, Contract.DOMINO)

__all__ = [
    "AGENTS",
    "CARDS_PER_HAND",
    "CONTRACT_NAMES",
    "EPISODE_HANDS",
    "HANDS_PER_DECLARER",
    "NUM_CONTRACTS",
    "NUM_HANDS",
    "NUM_PLAYERS",
    "POSITIVE_CONTRACTS",
    "Contract",
    "Phase",
]
