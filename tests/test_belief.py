"""``barbu_env.belief``: the probabilities respect every constraint, the sampled deals are
consistent, the weighted dynamic program is exact (uniform weights: the counts of
``worlds.count_worlds``; other weights: every deal enumerated), inconsistent observations
are refused, and the network needs torch, with the one-line hint.

Positions come from whole random games of the standard game (all 28 hands, every
contract), observed at random decisions by the seat to act, whose absolute seat and true
hands are known.
"""

from __future__ import annotations

import itertools
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from barbu_env import belief
from barbu_env.game.cards import NUM_CARDS
from barbu_env.game.constants import Contract
from barbu_env.game.engine import BarbuState
from barbu_env.game.observation import OFFSETS, decode
from barbu_env.game.position import Positions
from barbu_env.game.worlds import count_worlds
from barbu_env.util.extras import install_hint

DECK = (1 << NUM_CARDS) - 1


def bits(card_set: int) -> np.ndarray:
    return np.array([card_set >> c & 1 for c in range(NUM_CARDS)], dtype=bool)


class RandomLogits:
    """A stand-in network: fixed random logits (no torch), to exercise the fitting."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)

    def logits(self, obs):
        return self.rng.normal(0, 2, size=(len(obs), NUM_CARDS, 3))


@pytest.fixture(scope="module")
def positions():
    """(observation, absolute seat of the observer, the four hands) at random decisions of
    three random games: every contract, and Domino and Trumps positions with exclusions."""
    out = []
    rng = np.random.default_rng(7)
    for game in range(3):
        s = BarbuState.new_game(rng=np.random.default_rng(game))
        while not s.is_terminal:
            if rng.random() < 0.04:
                out.append((s.observe(s.current_player), s.current_player, [int(h) for h in s.hands]))
            s.apply_action(int(rng.choice(s.legal_actions())))
    contracts = {int(decode(obs)["contract"].argmax()) for obs, _, _ in out if decode(obs)["contract"].max() > 0}
    assert contracts == set(range(7))
    for contract in (Contract.DOMINO, Contract.TRUMPS):
        assert any(decode(obs)["contract"][contract] > 0 and decode(obs)["excluded"][1:].any() for obs, _, _ in out), (
            contract.name
        )
    return out


def check_probabilities(p, obs, seat, hands):
    d = decode(obs)
    own = hands[seat]
    played = 0
    for row in d["played"]:
        played |= sum(1 << int(c) for c in np.flatnonzero(row > 0.5))
    assert p.shape == (NUM_CARDS, 4) and p.dtype == np.float64
    assert (p >= 0).all()
    for c in range(NUM_CARDS):
        if own >> c & 1:
            assert p[c].tolist() == [1.0 if q == seat else 0.0 for q in range(4)]
        elif played >> c & 1:
            assert not p[c].any()
        else:
            assert p[c, seat] == 0 and abs(p[c].sum() - 1) < 1e-8
            owner = next(q for q in range(4) if hands[q] >> c & 1)
            assert p[c, owner] > 0, "the true owner is always possible"
    for r in range(1, 4):
        q = (seat + r) % 4
        unseen = hands[q]
        assert abs(p[:, q].sum() - unseen.bit_count()) < 1e-8
        excluded = bits(sum(1 << int(c) for c in np.flatnonzero(d["excluded"][r] > 0.5)))
        assert not p[excluded, q].any()


@pytest.mark.parametrize("model", ["uniform", "random logits"])
def test_probabilities_respect_every_constraint(positions, model):
    for k, (obs, seat, hands) in enumerate(positions):
        m = RandomLogits(k) if model == "random logits" else model
        check_probabilities(belief.probabilities(obs, model=m, seat=seat), obs, seat, hands)


def test_the_shipped_network_respects_every_constraint(positions):
    pytest.importorskip("torch")
    for obs, seat, hands in positions[::5]:
        check_probabilities(belief.probabilities(obs, seat=seat), obs, seat, hands)


@pytest.mark.parametrize("model", ["uniform", "random logits"])
def test_sampled_deals_are_consistent(positions, model):
    rng = np.random.default_rng(0)
    for k, (obs, seat, hands) in enumerate(positions[::2]):
        m = RandomLogits(k) if model == "random logits" else model
        deals = belief.sample_deals(obs, 6, rng, model=m, seat=seat)
        assert deals.shape == (6, 4) and deals.dtype == np.uint64
        d = decode(obs)
        played = sum(1 << int(c) for c in np.flatnonzero(d["played"].max(axis=0) > 0.5))
        for deal in deals.tolist():
            assert deal[seat] == hands[seat]
            assert sum(h.bit_count() for h in deal) == (deal[0] | deal[1] | deal[2] | deal[3]).bit_count()
            assert deal[0] | deal[1] | deal[2] | deal[3] | played == DECK
            for r in range(1, 4):
                q = (seat + r) % 4
                assert deal[q].bit_count() == hands[q].bit_count()
                excluded = sum(1 << int(c) for c in np.flatnonzero(d["excluded"][r] > 0.5))
                assert not deal[q] & excluded
        # the hidden hands in sample_worlds' format load into the position as they are
        hidden = belief.sample_hidden(obs, 3, rng, model=m)
        assert hidden.shape == (3, 3) and hidden.dtype == np.uint64
        Positions.from_observation(obs, seat=seat).with_hidden(hidden, check=True)


def test_sampling_is_a_function_of_the_generator(positions):
    obs, seat, _ = positions[len(positions) // 2]
    a = belief.sample_deals(obs, 5, np.random.default_rng(3), model="uniform", seat=seat)
    b = belief.sample_deals(obs, 5, np.random.default_rng(3), model="uniform", seat=seat)
    assert (a == b).all()


def hidden_of(obs):
    """(unknown cards, sizes of relative seats 1-3, their excluded sets) of an observation."""
    p = Positions.from_observation(obs)
    return int(p.unknown_cards[0]), p.sizes[0, 1:].tolist(), [int(x) for x in p.excluded[0, 1:]]


def test_uniform_marginals_are_the_counts_of_count_worlds(positions):
    # P(card c at seat k) = worlds with c at k / all worlds, each count exact
    for obs, _, _ in positions[::6]:
        unknown, sizes, absent = hidden_of(obs)
        total = count_worlds(unknown, sizes, absent)
        p = belief.probabilities(obs, model="uniform")
        for c in range(NUM_CARDS):
            if unknown >> c & 1:
                for k in range(3):
                    others = [a | (1 << c if j != k else 0) for j, a in enumerate(absent)]
                    assert p[c, k + 1] == pytest.approx(count_worlds(unknown, sizes, others) / total, abs=1e-12)


def test_weighted_marginals_are_exact_on_every_deal_enumerated(positions):
    # late positions (at most 9 unseen cards): the weighted sum over every consistent deal
    late = [obs for obs, _, _ in positions if 0 < bin(hidden_of(obs)[0]).count("1") <= 9]
    assert len(late) >= 3
    rng = np.random.default_rng(1)
    for obs in late[:4]:
        unknown, sizes, absent = hidden_of(obs)
        cards = [c for c in range(NUM_CARDS) if unknown >> c & 1]
        w = rng.uniform(0.1, 3.0, size=(NUM_CARDS, 3))
        expected, z = np.zeros((NUM_CARDS, 3)), 0.0
        for owners in itertools.product(range(3), repeat=len(cards)):
            if [owners.count(k) for k in range(3)] != sizes:
                continue
            if any(absent[k] >> c & 1 for c, k in zip(cards, owners)):
                continue
            weight = np.prod([w[c, k] for c, k in zip(cards, owners)])
            z += weight
            for c, k in zip(cards, owners):
                expected[c, k] += weight
        np.testing.assert_allclose(belief.exact_marginals(obs, w), expected / z, atol=1e-12)


def frequencies(hidden: np.ndarray) -> np.ndarray:
    """Per card and relative seat 1-3, the share of the deals where the seat holds it, [52, 3]."""
    shifts = np.arange(NUM_CARDS, dtype=np.uint64)
    return ((hidden[:, :, None] >> shifts) & np.uint64(1)).mean(axis=0).T


@pytest.mark.parametrize("model", ["uniform", "random logits"])
def test_sampled_frequencies_match_the_probabilities(positions, model):
    # 4000 deals: a frequency's standard deviation is at most 0.008, so 0.045 is over 5 of them
    obs = next(o for o, _, _ in positions if decode(o)["excluded"][1:].any() and decode(o)["played"].sum() > 8)

    def fresh():  # the same logits for both calls
        return RandomLogits(0) if model == "random logits" else model

    p = belief.probabilities(obs, model=fresh())[:, 1:]
    hidden = belief.sample_hidden(obs, 4000, np.random.default_rng(2), model=fresh())
    assert np.abs(frequencies(hidden) - p).max() < 0.045


def test_inconsistent_observations_are_refused(positions):
    obs = next(o for o, _, _ in positions if decode(o)["played"].sum() > 12).copy()
    a = OFFSETS["cards_left"][0]
    wrong = obs.copy()
    wrong[a + 1] += 1 / 13  # one card more than there are unseen cards
    with pytest.raises(ValueError, match="inconsistent observation"):
        belief.probabilities(wrong, model="uniform")
    unknown, sizes, absent = hidden_of(obs)
    card = (unknown & -unknown).bit_length() - 1
    e = OFFSETS["excluded"][0]
    nowhere = obs.copy()
    nowhere[[e + r * NUM_CARDS + card for r in (1, 2, 3)]] = 1  # no other seat may hold it
    with pytest.raises(ValueError, match="inconsistent observation"):
        belief.sample_deals(nowhere, 2, np.random.default_rng(0), model="uniform")
    # seat 1 may hold only one of the unseen cards, but holds more
    crowded = obs.copy()
    for c in range(NUM_CARDS):
        if unknown >> c & 1 and c != card:
            crowded[e + NUM_CARDS + c] = 1
    assert sizes[0] > 1
    with pytest.raises(ValueError, match="inconsistent observation"):
        belief.probabilities(crowded, model=RandomLogits(0))


def test_a_seat_forced_by_counting_gets_its_cards_with_certainty(positions):
    # Seat 1 may hold exactly as many unseen cards as it holds: it holds those, surely,
    # though no exclusion says so of the other seats; the fit converges all the same.
    obs = next(o for o, _, _ in positions if decode(o)["played"].sum() > 12).copy()
    unknown, sizes, _ = hidden_of(obs)
    mine = [c for c in range(NUM_CARDS) if unknown >> c & 1][: sizes[0]]
    e = OFFSETS["excluded"][0]
    obs[e + NUM_CARDS : e + 4 * NUM_CARDS] = 0
    for c in range(NUM_CARDS):
        if unknown >> c & 1 and c not in mine:
            obs[e + NUM_CARDS + c] = 1
    for model in ("uniform", RandomLogits(0)):
        p = belief.probabilities(obs, model=model)
        assert (p[mine, 1] == pytest.approx(1.0, abs=1e-8)) and not p[mine, 2:].any()


WITHOUT_TORCH = """
import sys
sys.modules["torch"] = None
import numpy as np
from barbu_env import belief
from barbu_env.game.engine import BarbuState
obs = BarbuState.new_game(rng=np.random.default_rng(0)).observe(0)
assert belief.probabilities(obs, model="uniform").shape == (52, 4)
try:
    belief.probabilities(obs)
except ImportError as e:
    print(type(e).__name__, e)
"""


@pytest.mark.slow  # an interpreter without torch
def test_the_network_without_torch_is_one_line_naming_the_extra():
    done = subprocess.run([sys.executable, "-c", WITHOUT_TORCH], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"MissingExtraError the belief network needs torch: {install_hint('train')}\n"


class ObsLogits:
    """A stand-in network whose logits are a fixed function of each observation (no torch)."""

    def __init__(self, seed: int):
        self.weights = np.random.default_rng(seed).normal(0, 0.2, size=(OFFSETS["phase"][0], NUM_CARDS * 3))

    def logits(self, obs):
        obs = np.asarray(obs)[:, : self.weights.shape[0]]
        return np.sin(obs @ self.weights).reshape(len(obs), NUM_CARDS, 3) * 3


@pytest.mark.parametrize("model", ["uniform", ObsLogits(4)])
def test_samplers_ask_the_network_once_for_many_observations_and_draw_as_sample_hidden(positions, model):
    observations = np.stack([obs for obs, _, _ in positions[::7]])
    drawers = belief.samplers(observations, model=model)
    assert len(drawers) == len(observations)
    for obs, drawer in zip(observations, drawers):
        once = belief.sample_hidden(obs, 6, np.random.default_rng(11), model=model)
        rng = np.random.default_rng(11)
        assert (drawer.draw(6, rng) == once).all()
        Positions.from_observation(obs).with_hidden(drawer.draw(4, rng), check=True)  # and again, consistent


class Constant:
    """A stand-in model that outputs a given array, whatever it is asked."""

    def __init__(self, out):
        self.out = out

    def logits(self, obs):
        return np.broadcast_to(self.out, (len(obs), NUM_CARDS, 3)) if np.ndim(self.out) == 0 else self.out


def test_a_model_sure_of_everything_still_gives_exact_probabilities_and_deals(positions):
    # logits of 1e8 one way or the other, and the shipped network at temperature 0.002: hands
    # of the right sizes, cards only where allowed, probabilities that respect every constraint
    from barbu_models.belief import BeliefModel

    signs = np.random.default_rng(1).choice([-1e8, 1e8], size=(1, NUM_CARDS, 3))
    sharp = BeliefModel(belief.load_model().net, 0.002)
    for k, (obs, seat, hands) in enumerate(positions[::3]):
        model = Constant(signs) if k % 3 == 0 else sharp
        p = belief.probabilities(obs, model=model, seat=seat)
        assert np.isfinite(p).all()
        unseen = p.sum(axis=1) > 0
        assert np.allclose(p.sum(axis=1)[unseen], 1)
        held = np.array([sum(int(h) >> c & 1 for c in np.flatnonzero(unseen)) for h in hands])
        assert np.allclose(p[unseen].sum(axis=0), held, atol=1e-6)
        hidden = belief.sample_hidden(obs, 3, np.random.default_rng(2), model=model)
        Positions.from_observation(obs).with_hidden(hidden, check=True)


@pytest.mark.parametrize(
    "model, message",
    [
        ("beleif", "beleif: no such belief network checkpoint file"),
        (str(Path(__file__).parents[1] / "README.md"), "README.md is not a belief network checkpoint"),
    ],
)
def test_a_model_that_is_not_a_model_is_refused_in_one_line(positions, model, message):
    with pytest.raises(ValueError, match=message) as info:
        belief.probabilities(positions[0][0], model=model)
    assert "\n" not in str(info.value) and len(str(info.value)) < 400


def test_the_shipped_network_answers_to_belief_and_a_bad_checkpoint_is_named(positions, tmp_path):
    obs = positions[5][0]
    assert np.array_equal(belief.probabilities(obs, model="belief"), belief.probabilities(obs))
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="empty.pt is not a belief network checkpoint"):
        belief.load_model(tmp_path / "empty.pt")


def test_exact_marginals_do_not_change_when_a_seat_or_a_card_is_weighted_by_any_factor(positions):
    obs = positions[0][0]
    uniform = belief.exact_marginals(obs, np.ones((NUM_CARDS, 3)))
    for factor in (1e-26, 1e24, 1e300):
        w = np.ones((NUM_CARDS, 3))
        w[:, 0] = factor
        assert np.allclose(belief.exact_marginals(obs, w), uniform)
        assert np.allclose(belief.exact_marginals(obs, np.full((NUM_CARDS, 3), factor)), uniform)


def test_checkpoints_a_network_cannot_answer_from_are_refused_at_load(tmp_path):
    import torch

    from barbu_models.belief import BeliefConfig, BeliefModel, BeliefNet

    data = torch.load(belief.SHIPPED_MODEL, weights_only=True)
    narrow = BeliefModel(BeliefNet(BeliefConfig(obs_dim=100, hidden=8)))
    narrow.save(tmp_path / "narrow.pt")
    nan = {k: torch.full_like(v, float("nan")) for k, v in data["state_dict"].items()}
    torch.save({**data, "state_dict": nan}, tmp_path / "nan.pt")
    torch.save({**data, "temperature": 1e-40}, tmp_path / "cold.pt")
    for name, message in [("narrow", "reads 100 values"), ("nan", "NaN or infinity"), ("cold", "temperature")]:
        with pytest.raises(ValueError, match=message) as info:
            belief.load_model(tmp_path / f"{name}.pt")
        assert "\n" not in str(info.value)
    assert repr(belief.load_model()) == f"BeliefModel({belief.SHIPPED_MODEL.resolve()})"


def test_what_the_environment_gives_an_agent_is_read_as_the_vector_and_its_seat():
    import barbu_env

    env = barbu_env.env()
    env.reset(seed=3)
    obs, *_ = env.last()
    while decode(obs["observation"])["played"].sum() < 8:  # two tricks in
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))
        obs, *_ = env.last()
    agent = env.agent_selection
    seat = env.possible_agents.index(agent)
    assert seat != 0  # else a seat ignored would pass as well
    vector = obs["observation"]
    p = belief.probabilities(obs, model="uniform", seat=agent)
    assert np.array_equal(p, belief.probabilities(vector, model="uniform", seat=seat))
    deals = belief.sample_deals(obs, 4, np.random.default_rng(0), model="uniform", seat=agent)
    assert np.array_equal(deals, belief.sample_deals(vector, 4, np.random.default_rng(0), model="uniform", seat=seat))
    sampler = belief.samplers([obs], model="uniform")[0]
    assert np.array_equal(
        sampler.draw(2, np.random.default_rng(1)), belief.Sampler(vector, "uniform").draw(2, np.random.default_rng(1))
    )
    # a deal's hands as card ids: the observer's are its true cards
    own = np.flatnonzero(env.state()[seat * NUM_CARDS : (seat + 1) * NUM_CARDS]).tolist()
    assert belief.cards_of(deals[0, seat]) == own and len(belief.hand_text(deals[0, seat]).split()) == len(own)
    with pytest.raises(ValueError, match="player_0"):
        belief.probabilities(obs, model="uniform", seat="player_4")
