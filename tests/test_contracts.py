"""The rules of play of every contract (docs/rules.md), the doubling turns, the
declarer rotation and illegal actions, on scripted deals written as card strings."""

from __future__ import annotations

import copy
import re

import numpy as np
import pytest
from scripted import (
    MAX_TURNS_PER_HAND,
    NOBODY,
    SUIT_PER_SEAT,
    deal,
    declare,
    double,
    finish_game,
    finish_hand,
    hand_of,
    legal_text,
    lowest_action,
    names,
    new_game,
    play,
    start,
    take_turns,
)

from barbu_env.game.engine import BarbuState, Contract, IllegalActionError, Phase, contract_total
from barbu_env.game.rules import Rules

# ---------------------------------------------------------------------------- deals

#: P0 leads and wins tricks 1-11 with clubs (AC down to 4C), loses trick 12 (2D) to
#: P1's AD, and trick 13 (P1 leads 3H) goes to P2's AH over the off-suit AS.
LADDER = deal(
    "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 2D 2H",
    "AD KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 3H",
    "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 2S 3S",
    "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 2C 3C",
)
LADDER_TRICKS = [
    "AC 3D 2S 2C", "KC 4D 3S 3C", "QC 5D 4H 4S", "JC 6D 5H 5S", "TC 7D 6H 6S",
    "9C 8D 7H 7S", "8C 9D 8H 8S", "7C TD 9H 9S", "6C JD TH TS", "5C QD JH JS",
    "4C KD QH QS",  # the 4th queen: No Queens ends here
    "2D AD KH KS",  # K♥ to P1: Barbu ends here
    "3H AH AS 2H",  # led by P1 (hearts only left)
]  # fmt: skip

#: Trick 1: P0 leads 2C and P1's AC wins; P1 then holds six hearts and six spades.
P1_WINS_FIRST_TRICK = deal(
    "2C 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD KD",
    "AC 2H 3H 4H 5H 6H 7H 2S 3S 4S 5S 6S 7S",
    "3C 4C 5C 6C 7C 8C 9C TC JC QC KC AD 8H",
    "9H TH JH QH KH AH 8S 9S TS JS QS KS AS",
)

#: Trumps: P0 holds every club; P1 (QS AS), P2 (4S KS) and P3 (nine low spades) are void
#: in clubs.
TRUMPS_DEAL = deal(
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "QS AS 2D 3D 4D 5D 6D 7D 8D 9D TD JD QD",
    "4S KS KD AD 2H 3H 4H 5H 6H 7H 8H 9H TH",
    "2S 3S 5S 6S 7S 8S 9S TS JS JH QH KH AH",
)
P3_SPADES = "2S 3S 5S 6S 7S 8S 9S TS JS"

#: No Hearts: P0 leads clubs and wins every trick; the other three dump all 13 hearts in
#: tricks 1-5 (A♥ in trick 3).
HEARTS_DUMP = deal(
    "2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC AC",
    "2H 3H 4H 5H 6H 2D 3D 4D 5D 6D 7D 8D 9D",
    "7H 8H 9H TH JH TD JD QD KD AD 2S 3S 4S",
    "QH KH AH 5S 6S 7S 8S 9S TS JS QS KS AS",
)
HEARTS_DUMP_TRICKS = ["2C 2H 7H QH", "3C 3H 8H KH", "4C 4H 9H AH", "5C 5H TH 5S", "6C 6H JH 6S"]

#: Barbu, K♥ at the first chance: P0 wins three club tricks and is left with only hearts;
#: P2 holds K♥ and Q♥; A♥ is P1's (or P3's in the variant).
KING_CHANCE = deal(
    "AC KC QC 2H 3H 4H 5H 6H 7H 8H 9H TH JH",
    "AH 5C 6C 7C 8C 9C TC JC 2D 3D 4D 5D 6D",
    "KH QH 2C 3C 4C 7D 8D 9D TD JD QD KD AD",
    "2S 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
)
KING_CHANCE_ACE_LATE = deal(
    "AC KC QC 2H 3H 4H 5H 6H 7H 8H 9H TH JH",
    "2S 5C 6C 7C 8C 9C TC JC 2D 3D 4D 5D 6D",
    "KH QH 2C 3C 4C 7D 8D 9D TD JD QD KD AD",
    "AH 3S 4S 5S 6S 7S 8S 9S TS JS QS KS AS",
)

#: Domino from the ace: P0 has no ace and passes first; P1 is blocked until P3's 5D
#: (round 12); P2 plays a heart every round and goes out first; P3 is stuck on QS until
#: P0's KS. Out order P2, P0, P3; P1 last.
DOMINO_BLOCKS = deal(
    "KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 2C KS",
    "4D 3D 2D JS TS 9S 8S 7S 6S 5S 4S 3S 2S",
    "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H 2H",
    "AC AS AD KD QD JD TD 9D 8D 7D 6D 5D QS",
)
DOMINO_BLOCKS_ROUNDS = [  # P0 P1 P2 P3; "--" is a pass
    "-- -- AH AC", "KC -- KH AS", "QC -- QH AD", "JC -- JH KD", "TC -- TH QD", "9C -- 9H JD",
    "8C -- 8H TD", "7C -- 7H 9D", "6C -- 6H 8D", "5C -- 5H 7D", "4C -- 4H 6D", "3C -- 3H 5D",
    "2C 4D 2H --",  # P2 plays its last card; P3 waits for KS
    "KS 3D QS",  # P0 out second, P2 is skipped, P3 out third: the hand ends
]  # fmt: skip


# ---------------------------------------------------------------------------- leading hearts


@pytest.mark.parametrize("contract", ["no_hearts", "no_king_of_hearts"])
def test_heart_lead_ban_binds_every_trick_leader(contract):
    s = new_game(P1_WINS_FIRST_TRICK)
    start(s, contract)
    play(s, "2C AC 3C 9H")
    assert s.current_player == 1
    assert legal_text(s) == "2S 3S 4S 5S 6S 7S"


@pytest.mark.parametrize("contract", ["no_tricks", "no_queens", "no_last_two"])
def test_hearts_may_be_led_in_the_other_trick_contracts(contract):
    s = new_game(P1_WINS_FIRST_TRICK)
    start(s, contract)
    play(s, "2C AC 3C 9H")
    assert legal_text(s) == hand_of(s, 1) == "2H 3H 4H 5H 6H 7H 2S 3S 4S 5S 6S 7S"


def test_hearts_may_be_led_in_trumps():
    s = new_game(LADDER)
    start(s, "trumps", trump="C")
    assert "2H" in legal_text(s).split()


@pytest.mark.parametrize("contract", ["no_hearts", "no_king_of_hearts"])
def test_heart_lead_is_allowed_to_a_leader_holding_only_hearts(contract):
    s = new_game(SUIT_PER_SEAT, first_declarer=2)  # seat 2 holds the 13 hearts
    start(s, contract)
    assert s.current_player == 2
    assert legal_text(s) == "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH"


def test_heart_lead_is_allowed_once_the_leader_has_only_hearts_left():
    s = new_game(KING_CHANCE)
    start(s, "no_hearts")
    assert legal_text(s) == "QC KC AC"
    play(s, "AC 5C 2C 2S | KC 6C 3C 3S | QC 7C 4C 4S")
    assert s.current_player == 0
    assert legal_text(s) == "2H 3H 4H 5H 6H 7H 8H 9H TH JH"


# ---------------------------------------------------------------------------- following and winning


def test_player_must_follow_the_led_suit_when_able():
    s = new_game(LADDER)
    start(s, "no_tricks")
    play(s, "AC 3D 2S")
    assert legal_text(s) == "2C 3C"  # P3 holds two clubs among eleven spades
    play(s, "2C")
    assert legal_text(s) == "4C 5C 6C 7C 8C 9C TC JC QC KC 2D 2H"  # the leader may lead anything


def test_player_void_in_the_led_suit_may_play_any_card():
    s = new_game(LADDER)
    start(s, "no_tricks")
    play(s, "AC")
    assert legal_text(s) == hand_of(s, 1)


def test_a_discard_shows_the_player_void_in_the_led_suit_until_the_hand_ends():
    s = new_game(SUIT_PER_SEAT)
    start(s, "no_tricks")
    assert s.voids == [0, 0, 0, 0]
    play(s, "2C AD AH AS")  # seats 1-3 hold no club
    assert s.voids == [0, 1 << 0, 1 << 0, 1 << 0]
    play(s, "3C KD")
    assert s.voids == [0, 1 << 0, 1 << 0, 1 << 0]  # nothing new: seat 1 was known void in clubs
    s.apply_action(s.legal_actions()[0])
    while s.hand_number == 0:
        s.apply_action(s.legal_actions()[0])
    assert s.voids == [0, 0, 0, 0]  # a new hand, nothing shown yet


def test_trick_goes_to_the_highest_card_of_the_led_suit_not_to_a_higher_discard():
    s = new_game(SUIT_PER_SEAT)
    start(s, "no_tricks")
    play(s, "2C AD AH AS")  # three aces discarded on a two
    assert s.current_player == 0
    assert s.tricks_won == [1, 0, 0, 0]
    assert s.points == [-2, 0, 0, 0]
    s = new_game(LADDER)
    start(s, "no_tricks")
    play(s, " | ".join(LADDER_TRICKS[:11]))
    play(s, "2D AD KH KS")
    assert s.current_player == 1  # AD beats 2D; K♥ and K♠ were discards
    play(s, "3H AH AS")
    assert s.current_player == 0 and s.trick_size == 3  # the trick is still open
    result = play(s, "2H")
    assert result.tricks == (11, 1, 1, 0)  # trick 13 went to A♥, not to the off-suit A♠


# ---------------------------------------------------------------------------- Trumps

ALL = "whole hand"


@pytest.mark.parametrize(
    "overtrump, ruff, p1, p2, p3",
    [
        # P1: void, no trump in the trick yet; P2: void, holds a trump above QS (KS) and
        # one below (4S); P3: void, holds only trumps below KS.
        (True, True, "QS AS", "KS", ALL),
        (True, False, ALL, "KS", ALL),
        (False, True, "QS AS", "4S KS", P3_SPADES),
        (False, False, ALL, ALL, ALL),
    ],
)
def test_trumps_on_a_plain_lead_ruff_and_overtrump_switches(overtrump, ruff, p1, p2, p3):
    s = new_game(TRUMPS_DEAL, rules={"trumps_must_overtrump": overtrump, "trumps_must_ruff": ruff})
    start(s, "trumps", trump="S")
    play(s, "2C")
    assert legal_text(s) == (hand_of(s, 1) if p1 is ALL else p1)
    play(s, "QS")
    assert legal_text(s) == (hand_of(s, 2) if p2 is ALL else p2)
    play(s, "KS")
    assert legal_text(s) == (hand_of(s, 3) if p3 is ALL else p3)
    play(s, "2S")
    # The highest trump wins: K♠ over Q♠, both over the led club.
    assert s.current_player == 2
    assert s.tricks_won == [0, 0, 1, 0]
    assert s.points == [0, 0, 5, 0]


@pytest.mark.parametrize("overtrump", [True, False])
@pytest.mark.parametrize("ruff", [True, False])
def test_trumps_on_a_trump_lead_must_follow_with_a_trump_and_overtrump_if_switched_on(overtrump, ruff):
    s = new_game(TRUMPS_DEAL, rules={"trumps_must_overtrump": overtrump, "trumps_must_ruff": ruff}, first_declarer=1)
    start(s, "trumps", trump="S")
    assert s.current_player == 1
    play(s, "QS")
    assert legal_text(s) == ("KS" if overtrump else "4S KS")
    play(s, "KS")
    assert legal_text(s) == P3_SPADES  # only lower trumps: any of them, nothing else
    play(s, "2S")
    assert legal_text(s) == hand_of(s, 0)  # no trump at all: any card
    play(s, "2C")
    assert s.current_player == 2
    assert s.tricks_won == [0, 0, 1, 0]


def test_trumps_follows_suit_before_ruffing():
    s = new_game(LADDER)
    start(s, "trumps", trump="S")
    play(s, "AC 3D")  # P1 void in clubs and without spades: anything
    assert legal_text(s) == "2S 3S"  # P2 void in clubs must ruff
    play(s, "2S")
    assert legal_text(s) == "2C 3C"  # P3 holds clubs: follows suit, may not ruff
    play(s, "2C")
    assert s.current_player == 2  # the 2♠ ruff beats the A♣


# ---------------------------------------------------------------------------- scoring


@pytest.mark.parametrize(
    "contract, trump, raw",
    [
        ("no_tricks", None, (-22, -2, -2, 0)),  # -2 per trick
        ("no_last_two", None, (0, -10, -20, 0)),  # trick 12 to P1, trick 13 to P2
        ("no_hearts", None, (-18, -2, -10, 0)),  # 9 hearts; K♥; A♥ (-6) with 3♥ and 2♥
        ("trumps", "C", (55, 5, 5, 0)),  # +5 per trick
    ],
)
def test_trick_contract_scores_the_same_play(contract, trump, raw):
    s = new_game(LADDER)
    start(s, contract, trump=trump)
    result = play(s, " | ".join(LADDER_TRICKS))
    assert result is not None
    assert result.contract == contract
    assert result.tricks == (11, 1, 1, 0)
    assert result.raw == raw
    assert result.settled == raw  # nobody doubled
    assert s.scores == list(raw)
    assert s.hand_number == 1 and s.phase is Phase.DECLARE


def test_contract_totals_of_the_default_points():
    totals = [contract_total(Rules(), c) for c in Contract]
    assert totals == [-26, -30, -24, -20, -30, 65, 65]
    assert contract_total(Rules(no_last_two_points=(-15, -15), domino_scores=(50, 25, 0, -10)), 4) == -30


def test_no_hearts_scores_two_per_heart_and_six_for_the_ace():
    s = new_game(HEARTS_DUMP)
    start(s, "no_hearts")
    after_each_trick = []
    for trick in HEARTS_DUMP_TRICKS:
        play(s, trick)
        after_each_trick.append(s.points[0])
    assert after_each_trick == [-6, -12, -22, -26, -30]  # trick 3: A♥ -6 plus two hearts


def test_no_last_two_points_are_configurable():
    s = new_game(LADDER, rules={"no_last_two_points": [-15, -15]})
    start(s, "no_last_two")
    assert play(s, " | ".join(LADDER_TRICKS)).raw == (0, -15, -15, 0)


# ---------------------------------------------------------------------------- early ends


@pytest.mark.parametrize(
    "contract, switch, raw",
    [
        ("no_queens", "end_no_queens_early", (-24, 0, 0, 0)),
        ("no_king_of_hearts", "end_barbu_early", (0, -20, 0, 0)),
    ],
)
def test_with_the_early_end_switched_off_all_13_tricks_are_played(contract, switch, raw):
    s = new_game(LADDER, rules={switch: False})
    start(s, contract)
    assert play(s, " | ".join(LADDER_TRICKS[:12])) is None
    assert s.trick_number == 12 and s.hand_number == 0
    result = play(s, LADDER_TRICKS[12])
    assert result.raw == raw  # the scores are the same
    assert result.tricks == (11, 1, 1, 0)


def test_no_queens_ends_when_the_trick_holding_the_fourth_queen_is_complete_not_before():
    s = new_game(SUIT_PER_SEAT)
    start(s, "no_queens")
    assert play(s, "2C QD QH QS | QC 2D 2H") is None  # the 4th queen is in, the trick is open
    assert s.current_player == 3 and s.hand_number == 0
    result = play(s, "2S")
    assert result.raw == (-24, 0, 0, 0)
    assert result.tricks == (2, 0, 0, 0)


def test_barbu_ends_when_the_trick_holding_the_king_of_hearts_is_complete_not_before():
    s = new_game(SUIT_PER_SEAT, first_declarer=2)  # seat 2 holds only hearts and may lead them
    start(s, "no_king_of_hearts")
    assert play(s, "KH 2S 2C") is None
    assert s.hand_number == 0
    result = play(s, "2D")
    assert result.raw == (0, 0, -20, 0)
    assert result.tricks == (0, 0, 1, 0)


def test_no_hearts_plays_on_after_the_last_heart_by_default():
    s = new_game(HEARTS_DUMP)
    start(s, "no_hearts")
    assert play(s, " | ".join(HEARTS_DUMP_TRICKS)) is None
    assert s.trick_number == 5
    result = finish_hand(s)
    assert result.raw == (-30, 0, 0, 0)
    assert result.tricks == (13, 0, 0, 0)


def test_end_no_hearts_early_ends_the_hand_once_all_hearts_are_taken():
    s = new_game(HEARTS_DUMP, rules={"end_no_hearts_early": True})
    start(s, "no_hearts")
    assert play(s, " | ".join(HEARTS_DUMP_TRICKS[:4])) is None  # 2 hearts still out
    result = play(s, HEARTS_DUMP_TRICKS[4])
    assert result is not None
    assert result.raw == (-30, 0, 0, 0)
    assert result.tricks == (5, 0, 0, 0)


# ---------------------------------------------------------------------------- K♥ at the first chance


@pytest.mark.parametrize("first_chance, expected", [(True, "KH"), (False, "2H 3H 4H 5H 6H 7H 8H 9H TH JH QH KH AH")])
def test_barbu_king_first_chance_when_void_in_the_led_suit(first_chance, expected):
    s = new_game(SUIT_PER_SEAT, rules={"barbu_king_first_chance": first_chance})
    start(s, "no_king_of_hearts")
    play(s, "2C")
    assert legal_text(s) == hand_of(s, 1)  # void, but no K♥: anything
    play(s, "2D")
    assert legal_text(s) == expected


@pytest.mark.parametrize(
    "dealt, first_three_tricks, second_card, first_chance, expected",
    [
        # P1 follows the 2H lead with A♥: P2 must drop K♥ on it.
        (KING_CHANCE, "AC 5C 2C 2S | KC 6C 3C 3S | QC 7C 4C 4S", "AH", True, "KH"),
        (KING_CHANCE, "AC 5C 2C 2S | KC 6C 3C 3S | QC 7C 4C 4S", "AH", False, "QH KH"),
        # A♥ is P3's, to come after P2: P2 may keep K♥.
        (KING_CHANCE_ACE_LATE, "AC 5C 2C 3S | KC 6C 3C 4S | QC 7C 4C 5S", "2D", True, "QH KH"),
    ],
)
def test_barbu_king_first_chance_on_a_heart_lead(dealt, first_three_tricks, second_card, first_chance, expected):
    s = new_game(dealt, rules={"barbu_king_first_chance": first_chance})
    start(s, "no_king_of_hearts")
    play(s, first_three_tricks)
    assert legal_text(s) == "2H 3H 4H 5H 6H 7H 8H 9H TH JH"  # P0 holds only hearts now
    play(s, f"2H {second_card}")
    assert s.current_player == 2
    assert legal_text(s) == expected


# ---------------------------------------------------------------------------- Domino


def test_domino_rows_grow_from_the_starting_rank_up_to_the_ace_and_down_to_the_two():
    s = new_game(SUIT_PER_SEAT)
    start(s, "domino", rank="7")
    ranks = "7 8 9 T J Q K A 6 5 4 3 2".split()
    expected_p0 = ["7C", "6C 8C", "6C 9C", "6C TC", "6C JC", "6C QC", "6C KC", "6C AC",
                   "6C", "5C", "4C", "3C", "2C"]  # fmt: skip
    result = None
    for r, expected in zip(ranks, expected_p0):
        assert s.current_player == 0
        assert legal_text(s) == expected
        result = play(s, " ".join(r + suit for suit in ("C", "D", "H", "S")[: 3 if r == "2" else 4]))
    assert result is not None
    assert result.out_order == (0, 1, 2)
    assert result.raw == (45, 20, 5, -5)
    assert result.starting_rank == 5 and result.contract == "domino"


@pytest.mark.parametrize("rank, first, second", [("2", "2C", "3C"), ("A", "AC", "KC")])
def test_domino_rows_do_not_wrap_between_ace_and_two(rank, first, second):
    s = new_game(SUIT_PER_SEAT)
    start(s, "domino", rank=rank)
    assert legal_text(s) == first
    play(s, f"{first} {rank}D {rank}H {rank}S")
    assert legal_text(s) == second


def test_domino_any_card_of_the_starting_rank_opens_its_row_at_any_time():
    s = new_game(DOMINO_BLOCKS)
    start(s, "domino", rank="A")
    assert legal_text(s) == "pass"  # P0: no ace, no open row
    play(s, "--")
    assert legal_text(s) == "pass"  # P1: no ace either
    play(s, "-- AH")
    assert legal_text(s) == "AC AD AS"  # P3 may open any of three rows
    play(s, "AC | KC --")
    assert legal_text(s) == "KH"  # the only card next to an open row end
    play(s, "KH")
    assert legal_text(s) == "AD AS"  # the other two aces still open their rows
    play(s, "AS | QC -- QH")
    assert legal_text(s) == "AD"  # opened late, in round 3


def test_domino_forced_passes_skipped_players_and_finishing_order():
    s = new_game(DOMINO_BLOCKS)
    start(s, "domino", rank="A")
    result = None
    for round_number, script in enumerate(DOMINO_BLOCKS_ROUNDS, start=1):
        seats = [0, 1, 2, 3] if round_number < 14 else [0, 1, 3]  # P2 is out after round 13
        for seat, token in zip(seats, script.split()):
            assert s.current_player == seat, f"round {round_number}"
            if token == "--":
                assert s.legal_actions() == [84], f"round {round_number}: seat {seat} has no playable card"
            assert result is None
            result = play(s, token)
    assert result is not None
    assert result.out_order == (2, 0, 3)
    assert result.raw == (20, -5, 45, 5)  # 2nd +20, last -5, 1st +45, 3rd +5
    assert result.tricks == (0, 0, 0, 0)
    assert s.hand_number == 1


# ---------------------------------------------------------------------------- doubling turns


def doubling_turn(s):
    """(seat to act, legal actions) of the current doubling turn."""
    assert s.phase is Phase.DOUBLE
    return s.current_player, s.legal_actions()


def test_doubling_turns_go_left_opposite_right_then_declarer():
    s = new_game(SUIT_PER_SEAT, first_declarer=2)
    declare(s, "no_tricks")
    order = []
    for _ in range(4):
        order.append(s.current_player)
        s.apply_action(NOBODY)
    assert order == [3, 0, 1, 2]
    assert s.phase is Phase.TRICKS and s.current_player == 2


def test_in_negative_contracts_a_non_declarer_may_double_any_set_of_players():
    s = new_game(SUIT_PER_SEAT)
    declare(s, "no_hearts")
    assert doubling_turn(s) == (1, list(range(76, 84)))


def test_declarer_may_only_redouble_the_players_who_doubled_them():
    s = new_game(SUIT_PER_SEAT)
    declare(s, "no_queens")
    take_turns(s, [names(1, 0, 2), names(2, 3), names(3, 0, 1)])  # P2 does not double P0
    assert doubling_turn(s) == (0, [76, names(0, 1), names(0, 3), names(0, 1, 3)])  # 76, 77, 80, 81
    s.apply_action(names(0, 1, 3))
    assert s.levels() == [[0, 2, 0, 2], [2, 0, 1, 1], [0, 1, 0, 1], [2, 1, 1, 0]]
    assert s.phase is Phase.TRICKS


def test_declarer_nobody_doubled_still_gets_a_turn_with_only_pass():
    s = new_game(SUIT_PER_SEAT)
    declare(s, "no_tricks")
    take_turns(s, [names(1, 2), names(2, 3), names(3, 1)])
    assert doubling_turn(s) == (0, [76])
    s.apply_action(76)
    assert s.phase is Phase.TRICKS


@pytest.mark.parametrize("contract, trump, rank", [("trumps", "H", None), ("domino", None, "7")])
def test_in_positive_contracts_non_declarers_may_double_only_the_declarer(contract, trump, rank):
    s = new_game(SUIT_PER_SEAT)
    declare(s, contract, trump=trump, rank=rank)
    assert doubling_turn(s) == (1, [76, names(1, 0)])  # 80: P0 is P1's right
    s.apply_action(names(1, 0))
    assert doubling_turn(s) == (2, [76, names(2, 0)])  # 78: opposite
    s.apply_action(76)
    assert doubling_turn(s) == (3, [76, names(3, 0)])  # 77: left
    s.apply_action(names(3, 0))
    assert doubling_turn(s) == (0, [76, 77, 80, 81])  # redouble P1 and/or P3


def test_doubling_targets_declarer_only_applies_to_negative_contracts_too():
    s = new_game(SUIT_PER_SEAT, rules={"doubling_targets": "declarer_only"})
    declare(s, "no_hearts")
    assert doubling_turn(s) == (1, [76, 80])
    s.apply_action(80)
    assert doubling_turn(s) == (2, [76, 78])
    s.apply_action(76)
    assert doubling_turn(s) == (3, [76, 77])
    s.apply_action(76)
    assert doubling_turn(s) == (0, [76, 77])


def test_redouble_pass_gives_an_extra_turn_only_to_players_doubled_by_a_later_player():
    rules = {"redouble_pass": True}
    s = new_game(SUIT_PER_SEAT, rules=rules)
    declare(s, "no_tricks")
    # P1 doubles P3; P2 doubles P1 and P3; P3 redoubles P1 (not P2); P0 was not doubled.
    double_turns = [names(1, 3), names(2, 1, 3), names(3, 1), 76]
    take_turns(s, double_turns)
    # P1 was doubled by the later P2: one more turn, to redouble P2 only. P3 was doubled
    # only by earlier players (it had its turn to answer); P2 by nobody.
    assert doubling_turn(s) == (1, [76, names(1, 2)])
    s.apply_action(names(1, 2))
    assert s.phase is Phase.TRICKS
    assert s.levels()[1][2] == 2
    # Without the switch, play starts after the declarer's turn.
    s = new_game(SUIT_PER_SEAT)
    declare(s, "no_tricks")
    take_turns(s, double_turns)
    assert s.phase is Phase.TRICKS


def test_redouble_pass_turns_come_in_doubling_order():
    s = new_game(SUIT_PER_SEAT, rules={"redouble_pass": True})
    declare(s, "no_last_two")
    take_turns(s, [76, names(2, 1), names(3, 1, 2), 76])  # P0 was not doubled
    assert doubling_turn(s) == (1, [76, names(1, 2), names(1, 3), names(1, 2, 3)])
    s.apply_action(names(1, 2, 3))
    assert doubling_turn(s) == (2, [76, names(2, 3)])
    s.apply_action(names(2, 3))
    assert s.phase is Phase.TRICKS
    levels = s.levels()
    assert (levels[1][2], levels[1][3], levels[2][3]) == (2, 2, 2)
    assert levels[0] == [0, 0, 0, 0]


# ---------------------------------------------------------------------------- the doubling obligation


def play_hands_doubling_only_when_forced(rules, hands, first_declarer=0, voluntary=None):
    """Play ``hands`` hands (random deals from seed 0) choosing the lowest legal action
    at every turn, so a player names the declarer only when obliged; at the turns
    ``voluntary[hand, seat]`` the player names those seats instead. Returns the state
    and, per doubling turn of a non-declarer, (hand, declarer, seat, legal actions)."""
    voluntary = voluntary or {}
    s = BarbuState.new_game(rules=rules, rng=np.random.default_rng(0), first_declarer=first_declarer)
    turns = []
    for _ in range(hands * MAX_TURNS_PER_HAND):
        if s.hand_number == hands:
            break
        if s.phase is Phase.DOUBLE and s.current_player != s.declarer and s.double_pos < 4:
            legal = s.legal_actions()
            turns.append((s.hand_number, s.declarer, s.current_player, legal))
            if (s.hand_number, s.current_player) in voluntary:
                s.apply_action(names(s.current_player, *voluntary[s.hand_number, s.current_player]))
                continue
        s.apply_action(lowest_action(s))
    assert s.hand_number == hands, "the hands did not end"
    return s, turns


def names_declarer(seat, declarer, action):
    return (action - 76) >> ((declarer - seat - 1) % 4) & 1


@pytest.mark.parametrize(
    "rules, forced",
    [
        ({}, lambda h: h % 7 >= 5),  # two doubles owed: the last two of each declarer's 7 hands
        ({"min_declarer_doubles": 1}, lambda h: h % 7 == 6),
        ({"min_declarer_doubles": 0}, lambda h: False),
        ({"min_declarer_doubles": 7}, lambda h: True),
        ({"rotation": "every_hand"}, lambda h: h >= 20),  # a declarer's 6th and 7th hands
    ],
)
def test_doubling_obligation_forces_naming_the_declarer_when_hands_run_out(rules, forced):
    s, turns = play_hands_doubling_only_when_forced(rules, 28)
    assert s.is_terminal
    assert len(turns) == 28 * 3
    for hand, declarer, seat, legal in turns:
        if forced(hand):
            assert all(names_declarer(seat, declarer, a) for a in legal), (hand, seat, legal)
            assert 76 not in legal
        else:
            assert 76 in legal, (hand, seat, legal)


def test_doubles_of_the_declarer_made_early_reduce_what_is_owed_and_other_doubles_do_not():
    # P1 doubles P0 in hand 0, so at hand 5 (two of P0's hands left) P1 owes only one.
    # P2 doubles P1 and P3 in hands 0-4: none of that counts, towards P0 or towards P1
    # when P1 declares hands 7-13.
    voluntary = {(0, 1): [0]} | {(h, 2): [1, 3] for h in range(5)}
    s, turns = play_hands_doubling_only_when_forced({}, 14, voluntary=voluntary)
    legal = {(hand, seat): legal for hand, _, seat, legal in turns}
    assert 76 in legal[5, 1]
    assert 76 not in legal[5, 2] and 76 not in legal[5, 3]
    assert 76 in legal[11, 2] and 76 not in legal[12, 2]
    assert all(names_declarer(1, 0, a) for a in legal[6, 1])  # the last hand: one still owed
    assert s.owed[1][0] == s.owed[2][0] == s.owed[3][0] == 0
    assert s.owed[2][1] == 0  # P2's two forced doubles of P1, in hands 12 and 13


def test_the_obligation_in_a_positive_contract_leaves_only_the_double_of_the_declarer():
    s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0, rules={"min_declarer_doubles": 7})
    declare(s, "trumps", trump="S")
    assert doubling_turn(s) == (1, [80])
    s.apply_action(80)
    assert doubling_turn(s) == (2, [78])
    s.apply_action(78)
    assert doubling_turn(s) == (3, [77])
    s.apply_action(77)
    assert doubling_turn(s) == (0, list(range(76, 84)))


# ---------------------------------------------------------------------------- declarers


@pytest.mark.parametrize(
    "rotation, declarers",
    [
        ("seven_in_a_row", [2] * 7 + [3] * 7 + [0] * 7 + [1] * 7),
        ("every_hand", [2, 3, 0, 1] * 7),
    ],
)
def test_rotation_decides_the_declarer_of_each_hand(rotation, declarers):
    s = BarbuState.new_game(rules={"rotation": rotation}, rng=np.random.default_rng(1), first_declarer=2)
    seen = []
    while not s.is_terminal:
        assert s.phase is Phase.DECLARE and s.current_player == s.declarer
        seen.append(s.declarer)
        finish_hand(s)
    assert seen == declarers
    assert [r.declarer for r in s.results] == declarers
    pairs = {(r.declarer, r.contract) for r in s.results}
    assert len(pairs) == 28  # every declarer declared every contract once


def test_declarer_is_offered_only_unused_contracts():
    s = BarbuState.new_game(rng=np.random.default_rng(1), first_declarer=0)
    offered = []
    for contract in ("no_queens", "domino", "no_tricks"):
        offered.append(s.legal_actions())
        declare(s, contract, trump="S", rank="7")
        double(s)
        finish_hand(s)
    assert offered == [list(range(52, 59)), [52, 53, 55, 56, 57, 58], [52, 53, 55, 56, 57]]


# ---------------------------------------------------------------------------- illegal actions


#: The public fields of a state (properties computed from its kernel arrays).
PUBLIC_FIELDS = tuple(n for n, v in vars(BarbuState).items() if isinstance(v, property))


def snapshot(s: BarbuState) -> dict:
    """Every public field and every __slots__ field, the kernel arrays included (deep-copied;
    the rng by its bit-generator state)."""
    out = {}
    for name in (*BarbuState.__slots__, *PUBLIC_FIELDS):
        value = getattr(s, name)
        out[name] = copy.deepcopy(value.bit_generator.state if name == "rng" else value)
    return out


def assert_unchanged(s: BarbuState, before: dict) -> None:
    after = snapshot(s)
    cache_before, cache_after = before.pop("_legal"), after.pop("_legal")
    for name in before:
        a, b = after[name], before[name]
        if isinstance(a, tuple) and a and isinstance(a[0], np.ndarray):  # a bundle of kernel arrays
            assert all(np.array_equal(x, y) for x, y in zip(a, b)), f"field {name!r} changed"
        else:
            assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f"field {name!r} changed"
    # The legal-action cache may have been filled in; it may never hold anything else.
    assert cache_before is None or cache_after == cache_before
    assert cache_after is None or cache_after == s.legal_mask()


def at_declare():
    return new_game(LADDER)


def at_trump():
    s = new_game(LADDER)
    s.apply_action(57)
    return s


def at_double_in_trumps():
    s = new_game(LADDER)
    declare(s, "trumps", trump="S")
    return s


def at_declarer_double():
    s = new_game(LADDER)
    declare(s, "no_tricks")
    take_turns(s, [names(1, 2), 76, 76])
    return s


def at_heart_lead():
    s = new_game(LADDER)
    start(s, "no_hearts")
    return s


def at_follow():
    s = new_game(LADDER)
    start(s, "no_tricks")
    play(s, "AC 3D 2S")
    return s


def at_overtrump():
    s = new_game(TRUMPS_DEAL)
    start(s, "trumps", trump="S")
    play(s, "2C QS")
    return s


def at_domino_turn():
    s = new_game(SUIT_PER_SEAT)
    start(s, "domino", rank="7")
    play(s, "7C 7D 7H 7S")
    return s


def at_domino_pass():
    s = new_game(DOMINO_BLOCKS)
    start(s, "domino", rank="A")
    return s


@pytest.mark.parametrize(
    "make, action",
    [
        (at_declare, 0),  # a card while declaring
        (at_declare, 85),  # out of range
        (at_declare, -1),
        (at_trump, 52),  # declaring twice
        (at_double_in_trumps, 77),  # P1 doubling P2 in Trumps
        (at_declarer_double, 77),  # the declarer doubling a player who did not double them
        (at_heart_lead, 51),  # 2H led in No Hearts
        (at_follow, 40),  # P3 holds clubs and plays a spade
        (at_overtrump, 42),  # P2 under-trumps with 4S while holding KS
        (at_domino_turn, 84),  # a pass while holding a playable card
        (at_domino_pass, 11),  # P0's KC before AC opened the row
    ],
)
def test_illegal_action_raises_naming_the_legal_actions_and_changes_nothing(make, action):
    s = make()
    legal = s.legal_actions()
    assert action not in legal
    before = snapshot(s)
    with pytest.raises(IllegalActionError) as info:
        s.apply_action(action)
    assert isinstance(info.value, ValueError)
    message = str(info.value)
    assert re.search(rf"(?<![\d-]){re.escape(str(action))}(?!\d)", message), message
    for a in legal:
        assert re.search(rf"(?<!\d){a}(?!\d)", message), f"legal action {a} not named in {message!r}"
    assert_unchanged(s, before)
    # The game goes on normally afterwards, and only the legal action is recorded.
    history = list(s.history)
    s.apply_action(legal[0])
    assert s.history == history + [legal[0]]


def test_a_used_contract_cannot_be_declared_again():
    s = at_declare()
    start(s, "no_tricks")
    finish_hand(s)
    assert s.declarer == 0 and 52 not in s.legal_actions()
    before = snapshot(s)
    with pytest.raises(IllegalActionError, match="legal actions"):
        s.apply_action(52)
    assert_unchanged(s, before)


def test_any_action_after_the_game_is_over_raises():
    s = finish_game(BarbuState.new_game(rng=np.random.default_rng(5), first_declarer=1))
    assert s.legal_mask() == 0 and s.current_player == -1
    before = snapshot(s)
    with pytest.raises(IllegalActionError, match="over"):
        s.apply_action(52)
    assert_unchanged(s, before)
