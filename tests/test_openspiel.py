"""The OpenSpiel game ``python_barbu`` (``barbu_env.envs.openspiel``), checked with OpenSpiel's own
tools: ``random_sim_test`` with serialization over every preset and episode mode; random
games through pyspiel and through the PettingZoo environment with the same deals and
actions, every legal action set, reward, return and observation compared; the
information state sees play order where the observation does not; resampling keeps the
player's information and is uniform; Shimmy's PettingZoo wrapper passes ``api_test``
(OpenSpiel's bots: tests/test_openspiel_ismcts.py, tests/test_openspiel_rewards.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pyspiel = pytest.importorskip("pyspiel")

import barbu_env  # noqa: E402
from barbu_env.envs import openspiel as bo  # noqa: E402
from barbu_env.game.engine import BarbuState, episode_hands  # noqa: E402
from barbu_env.game.observation import INFO_DIM, INFO_OFFSETS, OBS_DIM, OFFSETS, decode_information_state  # noqa: E402
from barbu_env.game.rules import Rules, load_rules, preset_names  # noqa: E402
from barbu_env.game.worlds import count_worlds  # noqa: E402

EPISODES = ("hand", "round", "game")
PRESETS = preset_names()
NO_TRICKS, NOBODY = 52, 76


def chance_sequence(deal) -> list[int]:
    """The 52 chance outcomes that deal ``deal`` (four lists of 13 card ids): card k goes to seat k % 4."""
    hands = [sorted(h) for h in deal]
    return [hands[k % 4][k // 4] for k in range(52)]


def random_deal(rng: np.random.Generator) -> list[list[int]]:
    perm = rng.permutation(52)
    return [sorted(int(c) for c in perm[13 * s : 13 * (s + 1)]) for s in range(4)]


def dealt_state(game, deal, first_declarer: int = 0):
    state = game.new_initial_state()
    state.apply_action(first_declarer)
    for card in chance_sequence(deal):
        state.apply_action(card)
    return state


# ---------------------------------------------------------------------- parameters and type


@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("rules", PRESETS)
def test_game_string_loads_the_same_game_with_the_presets_rules(rules, episode):
    game = pyspiel.load_game(f"python_barbu(rules={rules},episode={episode})")
    again = pyspiel.load_game(str(game))
    assert str(again) == str(game)
    assert game.rules == again.rules == load_rules(rules)
    assert game.episode == again.episode == episode
    assert bo.load_game(rules, episode).rules == game.rules


def test_a_switch_given_overrides_the_preset_and_the_others_keep_the_presets_values():
    game = pyspiel.load_game("python_barbu(rules=declarer_only,trumps_points=7,no_last_two_points=-5;-25)")
    rules = load_rules("declarer_only")
    assert game.rules == Rules(**{**rules.to_dict(), "trumps_points": 7, "no_last_two_points": (-5, -25)})
    assert game.rules.doubling_targets == "declarer_only" and game.rules.domino_scores == (50, 25, 0, -10)
    assert "trumps_points=7" in str(game) and "no_last_two_points=-5;-25" in str(game)
    # A mapping of parameters takes tuples as text with ';' or ','.
    assert pyspiel.load_game("python_barbu", {"domino_scores": "40,20,10,-10"}).rules.domino_scores == (40, 20, 10, -10)
    # game_params names every switch: any rules, presets or not, load exactly.
    odd = Rules(rotation="every_hand", trumps_must_ruff=False, min_declarer_doubles=0, barbu_points=-30)
    params = bo.game_params(odd, "round")
    assert set(params) == {"rules", "episode", "rewards", *Rules().to_dict()}
    assert bo.load_game(odd, "round").rules == odd


def test_game_type_and_info_are_truthful():
    game = bo.load_game("standard", "game")
    t = game.get_type()
    assert (t.dynamics, t.chance_mode, t.information, t.reward_model) == (
        pyspiel.GameType.Dynamics.SEQUENTIAL,
        pyspiel.GameType.ChanceMode.EXPLICIT_STOCHASTIC,
        pyspiel.GameType.Information.IMPERFECT_INFORMATION,
        pyspiel.GameType.RewardModel.REWARDS,
    )
    assert (game.num_players(), game.num_distinct_actions(), game.max_chance_outcomes()) == (4, 85, 52)
    assert t.utility == pyspiel.GameType.Utility.ZERO_SUM and game.utility_sum() == 0.0
    assert game.max_utility() == -game.min_utility() == Rules().score_bound()
    assert game.observation_tensor_shape() == [OBS_DIM] and game.information_state_tensor_shape() == [INFO_DIM]
    # A hand's scores do not add up to a constant; a round's under seven_in_a_row do, under every_hand not.
    assert bo.load_game("standard", "hand").get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    assert bo.load_game("standard", "round").get_type().utility == pyspiel.GameType.Utility.ZERO_SUM
    assert bo.load_game("rotating", "round").get_type().utility == pyspiel.GameType.Utility.GENERAL_SUM
    # Trumps at 6 a trick: the contracts' totals add up to 13, a game's scores to 4 x 13.
    rich = bo.load_game(Rules(trumps_points=6), "game")
    assert rich.get_type().utility == pyspiel.GameType.Utility.CONSTANT_SUM and rich.utility_sum() == 52.0
    # Every contract worth 0 in total: even a hand is zero-sum.
    flat = Rules(trumps_points=0, no_tricks_points=0, no_hearts_points=0, no_hearts_ace_points=0, no_queens_points=0)
    flat = Rules(**{**flat.to_dict(), "barbu_points": 0, "no_last_two_points": (0, 0), "domino_scores": (3, 1, -1, -3)})
    assert bo.load_game(flat, "hand").get_type().utility == pyspiel.GameType.Utility.ZERO_SUM


# ---------------------------------------------------------------------- OpenSpiel's random simulation test


#: Every preset's hands in the default suite, a round of the standard rules; the other rounds under -m slow.
SIM_CASES = [
    (rules, episode)
    if episode == "hand" or rules == "standard"
    else pytest.param(rules, episode, marks=pytest.mark.slow)
    for episode in ("hand", "round")
    for rules in PRESETS
]


@pytest.mark.parametrize(("rules", "episode"), SIM_CASES)
def test_random_sim_test_with_serialization(rules, episode):
    pyspiel.random_sim_test(
        bo.load_game(rules, episode), num_sims=2 if episode == "hand" else 1, serialize=True, verbose=False
    )


# ---------------------------------------------------------------------- the same games as the environment


def play_both(rules, episode: str, seed: int) -> int:
    """A random game through pyspiel and through ``barbu_env.env`` with the same deals and
    actions; every decision's legal actions, observation, rewards and returns compared.
    Returns the decisions taken."""
    rng = np.random.default_rng(seed)
    hands = episode_hands(episode)
    deals = [random_deal(rng) for _ in range(hands)]
    first = int(rng.integers(4))
    env = barbu_env.env(rules=rules, episode=episode)
    env.reset(seed=seed, options={"deals": deals, "first_declarer": first})
    game = bo.load_game(rules, episode)
    state = game.new_initial_state()
    assert state.current_player() == pyspiel.PlayerId.CHANCE
    state.apply_action(first)
    hand, decisions = 0, 0
    totals = np.zeros(4)
    while not state.is_terminal():
        if state.is_chance_node():
            for card in chance_sequence(deals[hand]):
                assert card in state.legal_actions()
                state.apply_action(card)
            hand += 1
            continue
        seat = state.current_player()
        agent = env.agent_selection
        assert agent == f"player_{seat}"
        obs = env.observe(agent)
        legal = state.legal_actions()
        assert legal == np.flatnonzero(obs["action_mask"]).tolist()
        assert np.array_equal(np.asarray(state.observation_tensor(seat), np.float32), obs["observation"])
        action = legal[int(rng.integers(len(legal)))]
        state.apply_action(action)
        env.step(action)
        decisions += 1
        rewards = [env.rewards[f"player_{p}"] for p in range(4)]
        assert state.rewards() == rewards
        totals += rewards
        assert state.returns() == totals.tolist()
    assert all(env.terminations.values()) and hand == hands
    assert state.returns() == [float(x) for x in env.game.scores]
    return decisions


@pytest.mark.parametrize("rules", PRESETS)
def test_pyspiel_plays_exactly_as_the_environment_over_a_round(rules):
    assert play_both(rules, "round", seed=PRESETS.index(rules)) > 7 * 20


def test_pyspiel_plays_exactly_as_the_environment_over_a_whole_game():
    assert play_both("standard", "game", seed=11) > 28 * 20


# ---------------------------------------------------------------------- tensors and strings


def two_orders():
    """Two states of one deal, No Tricks, after two tricks that the declarer (seat 0) led
    and won with AC and AD: in one order, then in the other. The same cards fell, in the
    same tricks, to the same winner: only the order differs."""
    # Seat 0 holds AC, AD and low cards; every other seat holds clubs and diamonds below the aces.
    deck = set(range(52))
    hands = [[12, 25], [0, 13], [1, 14], [2, 15]]  # AC AD, 2C 2D, 3C 3D, 4C 4D
    rest = sorted(deck - {c for h in hands for c in h})
    for s in range(4):
        hands[s] += rest[11 * s : 11 * (s + 1)]
    game = bo.load_game("standard", "hand")
    states = []
    for first_suit in (0, 1):
        state = dealt_state(game, hands, first_declarer=0)
        for a in (NO_TRICKS, NOBODY, NOBODY, NOBODY, NOBODY):
            state.apply_action(a)
        for suit in (first_suit, 1 - first_suit):
            for seat in range(4):
                assert state.current_player() == seat
                state.apply_action(hands[seat][suit])
        states.append(state)
    return states


def test_information_states_of_two_play_orders_differ_where_the_observations_are_equal():
    a, b = two_orders()
    for p in range(4):
        assert a.observation_tensor(p) == b.observation_tensor(p)
        assert a.observation_string(p) == b.observation_string(p)
        assert a.information_state_tensor(p) != b.information_state_tensor(p)
        assert a.information_state_string(p) != b.information_state_string(p)
        # The first OBS_DIM values of the information state are the observation.
        assert a.information_state_tensor(p)[:OBS_DIM] == a.observation_tensor(p)
    assert "trick 1: me AC left 2C opposite 3C right 4C | trick 2: me AD" in a.information_state_string(0)
    assert "trick 1: me AD left 2D opposite 3D right 4D | trick 2: me AC" in b.information_state_string(0)


def test_tensors_are_the_engine_views_and_the_observer_types_are_kept():
    game = bo.load_game("classic", "hand")
    state = dealt_state(game, random_deal(np.random.default_rng(3)), first_declarer=2)
    for _ in range(9):
        state.apply_action(state.legal_actions()[-1])
    p = state.current_player()
    engine = state.barbu
    assert np.array_equal(state.observation_tensor(p), engine.observe(p))
    assert np.array_equal(state.information_state_tensor(p), engine.information_state(p))
    # The strings are the tensors read back.
    for seat in range(4):
        assert state.information_state_string(seat) == bo.describe(np.array(state.information_state_tensor(seat)))
        assert state.observation_string(seat) == bo.describe(np.array(state.observation_tensor(seat)))
    hand = slice(*OFFSETS["hand"][:2])
    hidden = game.make_py_observer(
        pyspiel.IIGObservationType(perfect_recall=True, private_info=pyspiel.PrivateInfoType.NONE)
    )
    hidden.set_from(state, p)
    full = engine.information_state(p)
    assert not hidden.tensor[hand].any() and full[hand].any()
    assert np.array_equal(
        np.delete(hidden.tensor, np.r_[hand, INFO_OFFSETS["dealt"][0] : INFO_OFFSETS["dealt"][1]]),
        np.delete(full, np.r_[hand, INFO_OFFSETS["dealt"][0] : INFO_OFFSETS["dealt"][1]]),
    )
    private = game.make_py_observer(pyspiel.IIGObservationType(perfect_recall=False, public_info=False))
    private.set_from(state, p)
    assert np.array_equal(private.tensor[hand], full[hand]) and private.tensor.sum() == full[hand].sum()


def test_the_observer_writes_every_tensor_in_place_into_its_own_buffer():
    from open_spiel.python.observation import make_observation

    game = bo.load_game("standard", "round")
    rng = np.random.default_rng(4)
    observers = [make_observation(game, pyspiel.IIGObservationType(perfect_recall=r)) for r in (False, True)]
    buffers = [(o.tensor, o.tensor.__array_interface__["data"][0], o.dict["hand"]) for o in observers]
    state, checked = game.new_initial_state(), 0
    while not state.is_terminal() and checked < 300:
        if state.is_chance_node():
            outcomes = state.chance_outcomes()
            state.apply_action(outcomes[rng.integers(len(outcomes))][0])
            continue
        engine = state.barbu
        for o, (tensor, address, hand), perfect_recall in zip(observers, buffers, (False, True)):
            for p in range(4):
                o.set_from(state, p)
                assert o.tensor is tensor and tensor.__array_interface__["data"][0] == address
                expected = engine.information_state(p) if perfect_recall else engine.observe(p)
                assert np.array_equal(tensor, expected) and np.array_equal(hand, expected[: OFFSETS["hand"][1]])
        legal = state.legal_actions()
        state.apply_action(legal[rng.integers(len(legal))])
        checked += 1


def test_at_a_dealing_node_a_player_holds_the_cards_dealt_to_it_so_far():
    game = bo.load_game("standard", "round")
    deal = random_deal(np.random.default_rng(5))
    state = game.new_initial_state()
    assert not any(state.observation_tensor(0))  # the first declarer is not drawn yet
    state.apply_action(1)
    sequence = chance_sequence(deal)
    for card in sequence[:10]:
        state.apply_action(card)
    assert state.is_chance_node() and state.barbu is None
    outcomes = state.chance_outcomes()
    assert [c for c, _ in outcomes] == sorted(set(range(52)) - set(sequence[:10]))
    assert all(abs(p - 1 / 42) < 1e-12 for _, p in outcomes)
    assert state.action_to_string(pyspiel.PlayerId.CHANCE, 51) == "deal AS to seat 2"
    for p in range(4):
        x = decode_information_state(np.asarray(state.information_state_tensor(p), np.float32))
        held = set(np.flatnonzero(x["hand"]).tolist())
        assert held == {c for k, c in enumerate(sequence[:10]) if k % 4 == p}
        assert set(np.flatnonzero(x["dealt"]).tolist()) == held
        assert np.allclose(x["cards_left"] * 13, [len(range(10)[(p + r) % 4 :: 4]) for r in range(4)])
        assert "hand:" in state.observation_string(p) and "dealing" in state.information_state_string(p)


# ---------------------------------------------------------------------- state_from_engine and resampling


def test_state_from_engine_continues_the_engine_game():
    engine = BarbuState.new_game(rng=np.random.default_rng(8), episode="hand")
    for a in (NO_TRICKS, NOBODY, NOBODY, NOBODY, NOBODY):
        engine.apply_action(a)
    game = bo.load_game(None, "hand")
    state = bo.state_from_engine(game, engine)
    assert state.history() == [] and state.barbu is not engine
    rng = np.random.default_rng(0)
    while not engine.is_terminal:
        assert state.legal_actions() == engine.legal_actions()
        assert state.current_player() == engine.current_player
        a = engine.legal_actions()[int(rng.integers(len(engine.legal_actions())))]
        engine.apply_action(a)
        state.apply_action(a)
    assert state.is_terminal() and state.returns() == [float(x) for x in engine.results[-1].settled]


def mid_hand(seed: int, tricks: int):
    """A No Tricks hand after ``tricks`` random tricks, the seat to act's view."""
    game = bo.load_game("standard", "hand")
    rng = np.random.default_rng(seed)
    state = dealt_state(game, random_deal(rng), first_declarer=int(rng.integers(4)))
    for a in (NO_TRICKS, NOBODY, NOBODY, NOBODY, NOBODY):
        state.apply_action(a)
    for _ in range(4 * tricks):
        legal = state.legal_actions()
        state.apply_action(legal[int(rng.integers(len(legal)))])
    return state


def test_resampling_keeps_the_players_information_and_everything_public():
    sampler = pyspiel.UniformProbabilitySampler(0.0, 1.0)
    for seed in range(4):
        state = mid_hand(seed, tricks=4)
        p = state.current_player()
        e = state.barbu
        others = [(p + r) % 4 for r in (1, 2, 3)]
        changed = 0
        for _ in range(10):
            r = state.resample_from_infostate(p, sampler)
            assert r.information_state_tensor(p) == state.information_state_tensor(p)
            assert r.observation_tensor(p) == state.observation_tensor(p)
            assert r.history() == state.history() and r.current_player() == p
            assert r.legal_actions() == state.legal_actions()
            h = r.barbu.hands
            assert h[p] == e.hands[p] and h[others[0]] | h[others[1]] | h[others[2]] == sum(e.hands[q] for q in others)
            assert all(h[q].bit_count() == e.hands[q].bit_count() and not h[q] & e.excluded[q] for q in others)
            assert all(r.barbu.dealt[q] == h[q] | e.played[q] for q in range(4))
            changed += h != e.hands
        assert changed > 0
        assert state.barbu.hands == e.hands  # the original is untouched
    # While a hand is dealt, the others' cards so far are redrawn, the player's kept.
    dealing = bo.load_game("standard", "hand").new_initial_state()
    dealing.apply_action(0)
    for card in chance_sequence(random_deal(np.random.default_rng(1)))[:23]:
        dealing.apply_action(card)
    r = dealing.resample_from_infostate(1, sampler)
    assert (
        r.information_state_tensor(1) == dealing.information_state_tensor(1)
        and r.chance_outcomes() != dealing.chance_outcomes()
    )


@pytest.mark.slow  # a frequency test
def test_resampling_is_uniform_over_the_consistent_worlds():
    """Late in a hand with a void shown: every consistent world is drawn about equally often."""
    scipy_stats = pytest.importorskip("scipy.stats")
    for seed in range(40):
        state = mid_hand(seed, tricks=10)
        e = state.barbu
        p = state.current_player()
        others = [(p + r) % 4 for r in (1, 2, 3)]
        unknown = sum(e.hands[q] for q in others)
        absent = [e.excluded[q] for q in others]
        sizes = [e.hands[q].bit_count() for q in others]
        n = count_worlds(unknown, sizes, absent)
        if any(absent) and 5 <= n <= 200:
            break
    else:
        pytest.fail("no small position with an exclusion among the seeds")
    samples = 40 * n
    rng = np.random.default_rng(1)
    counts = Counter(tuple(state.resample_from_infostate(p, rng.random).barbu.hands) for _ in range(samples))
    assert len(counts) == n
    expected = samples / n
    stat = sum((c - expected) ** 2 / expected for c in counts.values())
    assert scipy_stats.chi2.sf(stat, n - 1) > 1e-3


def test_the_same_sampler_value_gives_the_same_world():
    state = mid_hand(2, tricks=3)
    p = state.current_player()
    a = state.resample_from_infostate(p, lambda: 0.25).barbu.hands
    b = state.resample_from_infostate(p, lambda: 0.25).barbu.hands
    c = state.resample_from_infostate(p, lambda: 0.75).barbu.hands
    assert a == b != c


# ---------------------------------------------------------------------- Shimmy


def test_shimmy_gives_a_pettingzoo_env_that_passes_api_test():
    shimmy = pytest.importorskip("shimmy")
    from pettingzoo.test import api_test

    # Shimmy's reset loads the game again by name and config: the parameters go in config.
    env = shimmy.OpenSpielCompatibilityV0(game_name=bo.GAME_NAME, config=bo.game_params("classic", "hand"))
    with pytest.warns(UserWarning, match="infinity"):  # Shimmy's Box is unbounded
        api_test(env, num_cycles=400, verbose_progress=False)
    env.reset(seed=0)
    assert env.observation_space("player_0").shape == (OBS_DIM,)
    assert all(env.observe(a)[slice(*OFFSETS["hand"][:2])].sum() == 13 for a in env.agents)
