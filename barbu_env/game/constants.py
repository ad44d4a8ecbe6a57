"""The game's fixed sizes and names: seats, hands, contracts, phases, and the agent name of
each seat. Below everything but ``cards``: the action ids (``actions.py``) and the engine
build on it, and ``barbu_env.game.engine`` re-exports every name here.

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
#: Contract names for people, in ``Contract`` order (the one table: the terminal seat, the
#: browser table, the frames and the tournament's plots all read it).
CONTRACT_LABELS = (
    "No Tricks",
    "No Hearts",
    "No Queens",
    "No King of Hearts (Barbu)",
    "No Last Two",
    "Trumps",
    "Domino",
)
POSITIVE_CONTRACTS = (Contract.TRUMPS, Contract.DOMINO)


class Refusal(enum.IntEnum):
    """Why an action is not legal for the seat to act: the code the kernels' ``refusal``
    (``BarbuState.refusal``) returns, computed next to the legality code (LEGAL exactly
    for the legal actions). ``barbu_env.view.refusals`` puts them into words."""

    LEGAL = 0
    NO_SUCH_ACTION = 1  # not an action id 0-84
    GAME_OVER = 2  # the game is over: nothing is legal
    WRONG_PHASE = 3  # not a decision of this phase (a card while declaring, a contract while doubling ...)
    NOT_HELD = 4  # a card the seat does not hold
    FOLLOW_SUIT = 5  # must follow the suit led (with a trump, in Trumps, when trumps were led)
    OVERTRUMP = 6  # Trumps, trumps_must_overtrump: must play a trump higher than the trick's trumps
    RUFF = 7  # Trumps, trumps_must_ruff: void in the suit led, must play a trump
    HEART_LEAD = 8  # No Hearts / Barbu: no heart lead while holding another suit
    KING_FIRST = 9  # Barbu, barbu_king_first_chance: must play the K of hearts at the first chance
    NOT_ON_LAYOUT = 10  # Domino: the card cannot be placed on the layout now
    MUST_PLACE = 11  # Domino: a pass while a card can be placed
    ALREADY_DECLARED = 12  # the declarer has already played this contract in its seven hands
    MUST_DOUBLE_DECLARER = 13  # min_declarer_doubles: the seat must double the declarer now
    DECLARER_REDOUBLES_ONLY = 14  # the declarer may only redouble players who doubled it
    DECLARER_ONLY_CONTRACT = 15  # Trumps and Domino: only the declarer may be doubled
    DECLARER_ONLY_RULE = 16  # doubling_targets "declarer_only": only the declarer may be doubled
    REDOUBLE_PASS_ONLY = 17  # redouble_pass turn: only redoubles of later players who doubled the seat


__all__ = [
    "AGENTS",
    "CARDS_PER_HAND",
    "CONTRACT_LABELS",
    "CONTRACT_NAMES",
    "EPISODE_HANDS",
    "HANDS_PER_DECLARER",
    "NUM_CONTRACTS",
    "NUM_HANDS",
    "NUM_PLAYERS",
    "POSITIVE_CONTRACTS",
    "Contract",
    "Phase",
    "Refusal",
]
