"""Deals given to ``BarbuState.new_game`` (and so to ``reset(options={"deals": ...})``):
four hands of 13 cards, ids or text, all 52 distinct; anything else is a ``DealError``."""

from __future__ import annotations

import numpy as np
import pytest
from scripted import SUIT_PER_SEAT, finish_hand, start

from barbu_env.game.cards import card_from_text, parse_hand
from barbu_env.game.engine import BarbuState, DealError


def new_game(deals):
    return BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0, deals=deals)


def good():
    return [list(hand) for hand in SUIT_PER_SEAT]


def with_seat(seat, hand):
    d = good()
    d[seat] = hand
    return d


def test_a_deal_as_text_ids_or_strings_is_dealt_as_given():
    as_ids = [[card_from_text(c) for c in hand] for hand in SUIT_PER_SEAT]
    as_strings = [" ".join(hand) for hand in SUIT_PER_SEAT]
    with_ten = with_seat(0, "2C 3C 4C 5C 6C 7C 8C 9C 10C JC QC KC AC".split())
    expected = tuple(parse_hand(hand) for hand in SUIT_PER_SEAT)
    for deals in ([good()], [as_ids], [as_strings], [with_ten], [np.array(as_ids)]):
        assert new_game(deals).dealt == expected


def test_given_deals_are_used_in_order_and_later_hands_are_dealt_from_the_rng():
    second = [SUIT_PER_SEAT[3], SUIT_PER_SEAT[0], SUIT_PER_SEAT[1], SUIT_PER_SEAT[2]]
    s = new_game([good(), second])
    dealt = []
    for contract in ("no_tricks", "no_hearts", "no_queens"):
        dealt.append(s.dealt)
        start(s, contract)
        finish_hand(s)
    assert dealt[0] == tuple(parse_hand(h) for h in SUIT_PER_SEAT)
    assert dealt[1] == tuple(parse_hand(h) for h in second)
    assert dealt[2] not in dealt[:2]
    assert sorted(h.bit_count() for h in dealt[2]) == [13] * 4
    assert dealt[2][0] | dealt[2][1] | dealt[2][2] | dealt[2][3] == (1 << 52) - 1


@pytest.mark.parametrize(
    "deal, message",
    [
        (with_seat(0, "2C 2C 3C 4C 5C 6C 7C 8C 9C TC JC QC KC".split()), "seat 0"),  # duplicate in a hand
        (with_seat(1, "AC KD QD JD TD 9D 8D 7D 6D 5D 4D 3D 2D".split()), "52"),  # AC dealt twice, AD never
        (with_seat(2, "AH KH QH JH TH 9H 8H 7H 6H 5H 4H 3H".split()), "seat 2"),  # 12 cards
        (with_seat(3, "AS KS QS JS TS 9S 8S 7S 6S 5S 4S 3S 2S AD".split()), "seat 3"),  # 14 cards
        (with_seat(0, "AC KC QC JC TC 9C 8C 7C 6C 5C 4C 3C 1C".split()), "1C"),  # unknown card text
        (with_seat(0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 52]), "52"),  # card id out of range
        (with_seat(0, [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12.0]), "12.0"),  # not an id
        (with_seat(0, None), "seat 0"),  # not a hand at all
        (good()[:3], "four hands"),  # three seats
        (good() + [[]], "four hands"),  # five seats
        (7, "four hands"),
    ],
)
def test_malformed_deal_raises_deal_error_at_new_game(deal, message):
    with pytest.raises(DealError, match=message):
        new_game([deal])
    with pytest.raises(DealError, match=message):
        new_game([good(), deal])  # a later deal is checked up front too


@pytest.mark.parametrize("deals", [[good()] * 29, "deals", 5])
def test_deals_must_be_a_list_of_at_most_28_deals(deals):
    with pytest.raises(DealError, match="28"):
        new_game(deals)


def test_a_new_game_deals_each_hand_from_one_permutation_of_the_deck_in_hand_order():
    # The reference: hand h (after those given) from the h-th rng.permutation(52), four hands of 13.
    from barbu_env.game.engine import BarbuState

    for given in (0, 3):
        rng = np.random.default_rng(17)
        first = int(rng.integers(4))
        expected = []
        for _ in range(28 - given):
            perm = rng.permutation(52).reshape(4, 13)
            expected.append([sum(1 << int(c) for c in hand) for hand in perm])
        after = rng.integers(2**62)
        other = np.random.default_rng(99)
        fixed = [other.permutation(52).reshape(4, 13).tolist() for _ in range(given)]
        game_rng = np.random.default_rng(17)
        game = BarbuState.new_game(rng=game_rng, deals=fixed)
        assert game.first_declarer == first
        assert [list(map(int, d)) for d in game._games.preset[0, given:]] == expected
        assert game_rng.integers(2**62) == after  # the generator is left where the 28 draws leave it
