"""Episode length modes (docs/rules.md#episodes): an episode of ``"round"`` (7 hands) or
``"hand"`` (1 hand) is the start of the whole game, exactly, with the same deals, first
declarer and actions, and ends when its last hand settles. Compared with whole games in
the AEC environment, the engine, the batched engine (dones, automatic reset, slot
streams, loaded positions), the Gymnasium environments, the RLlib environment and the
trainer's collector; an unknown mode is an error listing the modes."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from differential import random_deals
from integration_extras import require
from pettingzoo.test import api_test

import barbu_env
from barbu_env.envs.gym_env import BarbuGymEnv
from barbu_env.envs.vector_gym import BarbuVectorEnv
from barbu_env.game import _kernels as K
from barbu_env.game.actions import AGENTS, DOUBLE_OFFSET
from barbu_env.game.cards import card_text
from barbu_env.game.constants import EPISODE_HANDS, HANDS_PER_DECLARER, NUM_HANDS, NUM_PLAYERS, Phase
from barbu_env.game.engine import BarbuState, contract_total
from barbu_env.game.observation import OFFSETS
from barbu_env.game.position import Positions
from barbu_env.game.rules import load_rules
from barbu_env.game.vector import VectorBarbu

PRESETS = ("standard", "classic", "rotating", "declarer_only")
SHORT = ("round", "hand")  # the modes shorter than the game
NO_DOUBLE = DOUBLE_OFFSET  # the doubling action that names nobody
MODES_MESSAGE = "'game'.*'round'.*'hand'"  # what an unknown mode's error lists


def random_legal(rng: np.random.Generator, masks: np.ndarray) -> np.ndarray:
    """A uniformly random legal action per row of ``masks``."""
    return np.argmax(np.where(masks, rng.random(masks.shape), -1.0), axis=1)


def phase_of(obs: np.ndarray) -> Phase:
    start, end, _ = OFFSETS["phase"]
    return Phase(int(np.argmax(obs[start:end])))


# ---------------------------------------------------------------------- the AEC environment


def aec_play(rules, episode: str, seed: int, options, choose, stop_after_hands: int | None = None):
    """One run of ``barbu_env.env``: every ``last()`` record (agent, observation, mask,
    reward, termination, truncation, hand result), the actions played and the game.
    ``choose(k, mask)`` gives the k-th action; with ``stop_after_hands`` the run stops at
    the first decision after that many hands."""
    env = barbu_env.env(rules=rules, episode=episode)
    env.reset(seed=seed, options=options)
    game = env.unwrapped.game
    records, actions = [], []
    for agent in env.agent_iter():
        obs, reward, term, trunc, info = env.last()
        mask = obs["action_mask"]
        records.append(
            (agent, obs["observation"].tobytes(), mask.tobytes(), reward, term, trunc, info.get("hand_result"))
        )
        if term or trunc:
            env.step(None)
            continue
        if stop_after_hands is not None and len(game.results) >= stop_after_hands:
            break
        action = choose(len(actions), mask)
        actions.append(action)
        env.step(action)
    return records, actions, game


def deal_options(seed: int) -> dict:
    """A given first declarer and the deals of the first three hands, as text."""
    rng = np.random.default_rng(seed)
    deals = [[" ".join(card_text(int(c)) for c in hand) for hand in deal] for deal in random_deals(rng, 1)[0, :3]]
    return {"first_declarer": int(rng.integers(NUM_PLAYERS)), "deals": deals}


@pytest.mark.parametrize(
    ("preset", "episode", "with_options"),
    [
        ("standard", "round", False),
        ("classic", "hand", True),
        ("rotating", "round", True),
        ("declarer_only", "hand", False),
    ],
)
def test_an_aec_episode_is_the_whole_games_start_and_ends_after_its_last_hand(preset, episode, with_options):
    hands = EPISODE_HANDS[episode]
    seed = 100 + PRESETS.index(preset) + 10 * with_options
    options = deal_options(seed) if with_options else None
    rng = np.random.default_rng(seed)
    full, played, whole = aec_play(
        preset, "game", seed, options, lambda k, mask: int(rng.choice(np.flatnonzero(mask))), stop_after_hands=hands
    )

    def replay(k: int, mask: np.ndarray) -> int:
        assert k < len(played), "the episode went on past its last hand"
        return played[k]

    short, actions, game = aec_play(preset, episode, seed, options, replay)
    n = len(actions)
    assert n == len(played)  # the episode ends with the action that settles its last hand, no sooner
    assert short[:n] == full[:n]  # every observation, mask, seat to act, reward and hand result until then
    # Then all four agents terminate (no truncation), each with its score of that hand.
    last = whole.results[hands - 1]
    ends = short[n:]
    assert sorted(r[0] for r in ends) == list(AGENTS)
    for agent, obs, mask, reward, term, trunc, result in ends:
        assert term and not trunc
        assert reward == last.settled[AGENTS.index(agent)]
        assert result == last.to_dict()
        assert phase_of(np.frombuffer(obs, dtype=np.float32)) is Phase.GAME_OVER
        assert not np.frombuffer(mask, dtype=np.int8).any()
    assert game.is_terminal and game.hand_number == hands and game.results == whole.results[:hands]
    assert game.scores == [sum(r.settled[p] for r in whole.results[:hands]) for p in range(NUM_PLAYERS)]
    if with_options:
        assert game.first_declarer == options["first_declarer"]
    declarers = [r.declarer for r in game.results]
    if load_rules(preset).rotation == "every_hand":
        assert declarers == [(game.first_declarer + h) % NUM_PLAYERS for h in range(hands)]
    else:  # one declarer's hands, each contract once
        assert set(declarers) == {game.first_declarer}
        assert len({r.contract for r in game.results}) == hands


@pytest.mark.parametrize("episode", SHORT)
def test_pettingzoo_api_test_passes_for_short_episodes(episode):
    api_test(barbu_env.env(episode=episode), num_cycles=1000)


@pytest.mark.parametrize("preset", PRESETS)
def test_a_hand_episode_never_forces_a_double(preset):
    # The obligation binds only when the declarer has as few hands left as the doubles owed.
    env = barbu_env.env(rules=preset, episode="hand")
    doubling_turns = 0
    for seed in range(6):
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        game = env.unwrapped.game
        while not game.is_terminal:
            legal = game.legal_actions()
            if game.phase is Phase.DOUBLE and game.current_player != game.declarer:
                doubling_turns += 1
                assert NO_DOUBLE in legal
            env.step(int(rng.choice(legal)))
    assert doubling_turns >= 6 * 3


def test_a_round_forces_the_doubles_still_owed_in_the_declarers_last_two_hands():
    # Nobody doubles unless forced: each non-declarer owes two doubles at hand 6 (of 0-6).
    env = barbu_env.env(episode="round")
    env.reset(seed=4)
    game = env.unwrapped.game
    forced = []
    while not game.is_terminal:
        legal = game.legal_actions()
        if game.phase is Phase.DOUBLE and game.current_player != game.declarer:
            forced.append((game.hand_number, NO_DOUBLE not in legal))
            action = NO_DOUBLE if NO_DOUBLE in legal else legal[0]
        else:
            action = legal[0]
        env.step(action)
    assert game.hand_number == HANDS_PER_DECLARER
    assert forced == [(h, h >= HANDS_PER_DECLARER - 2) for h in range(HANDS_PER_DECLARER) for _ in range(3)]


# ---------------------------------------------------------------------- the engine


def test_the_engine_keeps_its_episode_through_clone_and_pickle():
    s = BarbuState.new_game(rng=np.random.default_rng(0), episode="hand")
    assert s.episode == "hand" and BarbuState.new_game(rng=np.random.default_rng(0)).episode == "game"
    for copy in (s.clone(), pickle.loads(pickle.dumps(s))):
        rng = np.random.default_rng(1)
        while not copy.is_terminal:
            copy.apply_action(int(rng.choice(copy.legal_actions())))
        assert copy.episode == "hand" and copy.hand_number == 1 and len(copy.results) == 1


# ---------------------------------------------------------------------- the batched engine


@pytest.mark.parametrize(("preset", "episode"), zip(PRESETS, SHORT * 2))
def test_vector_episodes_are_the_whole_games_start_then_the_slot_resets(preset, episode):
    B, hands = 6, EPISODE_HANDS[episode]
    rng = np.random.default_rng(200 + PRESETS.index(preset))
    deals, firsts = random_deals(rng, B), rng.integers(NUM_PLAYERS, size=B).tolist()
    whole = VectorBarbu(B, preset, seed=3)
    short = VectorBarbu(B, preset, seed=3, episode=episode)
    f_obs, f_masks, f_seat = whole.reset(deals=deals, first_declarers=firsts)
    s_obs, s_masks, s_seat = short.reset(deals=deals, first_declarers=firsts)
    ended = np.zeros(B, dtype=bool)  # the short slot's first episode is over
    hands_done = np.zeros(B, dtype=np.int64)
    steps = 0
    while not ended.all():
        live = ~ended
        assert (s_obs[live] == f_obs[live]).all() and (s_masks[live] == f_masks[live]).all()
        assert (s_seat[live] == f_seat[live]).all()
        actions = random_legal(rng, f_masks)  # the same actions while the episode lasts
        f_obs, f_masks, f_seat, f_rew, f_dones, f_infos = whole.step(actions)
        s_obs, s_masks, s_seat, s_rew, s_dones, s_infos = short.step(np.where(live, actions, s_masks.argmax(1)))
        steps += 1
        hands_done += f_infos["hand_over"]
        expected = live & f_infos["hand_over"] & (hands_done == hands)
        assert (s_dones[live] == expected[live]).all(), steps
        assert (s_rew[live] == f_rew[live]).all() and (s_infos["hand_over"][live] == f_infos["hand_over"][live]).all()
        assert not f_dones.any()
        for i in np.flatnonzero(expected):
            # the totals of the episode's hands, its length, and a new game in the slot
            assert s_infos["final_scores"][i].tolist() == whole.scores()[i].tolist()
            assert s_infos["game_length"][i] == steps
            assert short.hand_numbers()[i] == 0 and short.scores()[i].tolist() == [0] * NUM_PLAYERS
            assert s_masks[i, 52:59].all() and s_masks[i].sum() == 7  # a declarer with every contract
        ended |= expected
    assert (hands_done >= hands).all()


def first_legal_streams(B: int, episode: str, seed: int, steps: int) -> np.ndarray:
    """The observations of B slots playing their first legal action for ``steps`` steps."""
    vec = VectorBarbu(B, seed=seed, episode=episode)
    obs, masks, _ = vec.reset()
    out, dones = [obs.copy()], 0
    for _ in range(steps):
        obs, masks, _, _, done, _ = vec.step(masks.argmax(1))
        out.append(obs.copy())
        dones += done.sum()
    assert dones > B  # several episodes per slot
    return np.stack(out, axis=1)


def test_a_slots_episodes_depend_on_the_seed_and_the_slot_only():
    small, large = first_legal_streams(2, "hand", 9, 300), first_legal_streams(4, "hand", 9, 300)
    assert (small == large[:2]).all()
    assert not (large[2] == large[3]).all()


def test_a_short_episode_slot_deals_a_new_game_from_its_stream_after_each_episode():
    vec = VectorBarbu(1, seed=2, episode="hand")
    _, masks, _ = vec.reset()
    dealt = []
    for _ in range(4):
        dealt.append(vec._cards[0, :NUM_PLAYERS].tolist())  # the hands as dealt
        done = False
        while not done:
            _, masks, _, _, dones, _ = vec.step(masks.argmax(1))
            done = dones[0]
    assert len({tuple(d) for d in dealt}) == 4  # every episode is dealt afresh
    again = VectorBarbu(1, seed=2, episode="hand")
    again.reset()
    assert again._cards[0, :NUM_PLAYERS].tolist() == dealt[0]


@pytest.mark.parametrize(("episode", "end"), [("hand", 10), ("round", 14), ("game", NUM_HANDS)])
def test_a_loaded_position_plays_to_the_end_of_the_slots_episode(episode, end):
    # A position in the middle of hand 9 (0-based): the slot's episode ends with that hand,
    # with hand 13 (the end of hands 7-13), or with the game; every decision on the way is
    # the game's. The position comes from a one-hand game: the slot's mode decides.
    rng = np.random.default_rng(5)
    state = BarbuState.new_game(rules="standard", rng=np.random.default_rng(6))
    while state.hand_number < 9 or state.phase is not Phase.TRICKS:
        state.apply_action(int(rng.choice(state.legal_actions())))
    position = Positions.from_state(state)
    position.ints[:, K.F_EPISODE] = EPISODE_HANDS["hand"]
    vec = VectorBarbu(1, "standard", seed=0, episode=episode)
    obs, masks, seat = vec.load(position)
    while True:
        assert seat[0] == state.current_player and (obs[0] == state.observe(state.current_player)).all()
        action = int(rng.choice(state.legal_actions()))
        state.apply_action(action)
        obs, masks, seat, rewards, dones, infos = vec.step(np.array([action]))
        if dones[0]:
            break
    assert state.hand_number == end and infos["final_scores"][0].tolist() == state.scores


# ---------------------------------------------------------------------- Gymnasium


def gym_play(episode: str, seed: int, limit: int):
    """The learner's records (observation, reward, termination, truncation, hand results)
    against random opponents; at most ``limit`` steps."""
    env = BarbuGymEnv(opponents="random", seat=1, rules="rotating", episode=episode)
    obs, info = env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    records = [(obs.tobytes(), 0.0, False, False, None)]
    while len(records) <= limit:
        action = int(rng.choice(np.flatnonzero(info["action_mask"])))
        obs, reward, term, trunc, info = env.step(action)
        records.append((obs.tobytes(), reward, term, trunc, info.get("hand_results")))
        if term:
            return records, env, info
    return records, env, info


@pytest.mark.parametrize("episode", SHORT)
def test_a_gymnasium_episode_is_the_whole_games_start(episode):
    short, env, info = gym_play(episode, 8, limit=1000)
    full, _, _ = gym_play("game", 8, limit=len(short))
    n = len(short)
    assert short[: n - 1] == full[: n - 1]
    # the last step: the same reward and hand results as the game's, and the end
    _, reward, term, trunc, results = short[-1]
    _, full_reward, full_term, _, full_results = full[n - 1]
    assert reward == full_reward and results == full_results
    assert term and not trunc and not full_term
    game = env.game
    assert game.hand_number == EPISODE_HANDS[episode] and info["scores"] == game.scores
    assert sum(r[1] for r in short) == game.scores[1]
    with pytest.raises(RuntimeError, match="episode is over"):
        env.step(0)


def test_the_gymnasium_vector_env_ends_each_episode_after_its_hands():
    envs = BarbuVectorEnv(3, seed=1, episode="hand")
    _, info = envs.reset(seed=1)
    rng = np.random.default_rng(0)
    hands = np.zeros(3, dtype=np.int64)
    ended = 0
    while ended < 6:
        _, _, terminated, truncated, info = envs.step(random_legal(rng, info["action_mask"]))
        hands += info["hand_over"]
        assert (terminated == info["hand_over"]).all() and not truncated.any()  # every hand ends the episode
        assert (info["game_length"][terminated] > 40).all()
        ended += terminated.sum()
    assert hands.sum() == ended


# ---------------------------------------------------------------------- RLlib


def test_the_rllib_env_takes_the_episode_from_its_config():
    require("ray.rllib")
    from barbu_env.envs.rllib_env import BarbuMultiAgentEnv

    env = BarbuMultiAgentEnv({"episode": "round"})
    obs, _ = env.reset(seed=3)
    totals = dict.fromkeys(AGENTS, 0.0)
    rng = np.random.default_rng(0)
    while True:
        ((agent, o),) = obs.items()
        obs, rewards, terminated, _, _ = env.step({agent: int(rng.choice(np.flatnonzero(o["action_mask"])))})
        for a, r in rewards.items():
            totals[a] += r
        if terminated["__all__"]:
            break
    game = env.env.unwrapped.game
    assert game.hand_number == HANDS_PER_DECLARER and [totals[a] for a in AGENTS] == game.scores


# ---------------------------------------------------------------------- the trainer


def test_the_trainer_collects_one_hand_episodes_when_its_config_asks():
    torch = pytest.importorskip("torch")
    from barbu_models.policy import BarbuActorCritic
    from barbu_training import config, config_cli, rollout

    args = config_cli.load_args(
        overrides={"num_games": 4, "opp_self": 1.0, "opp_pool": 0.0, "opp_baselines": 0.0, "episode": "hand"}
    )
    args.gamma = args.gae_lambda = 1.0
    rules = load_rules("standard")
    torch.manual_seed(0)
    collector = rollout.Collector(args, rules)
    assert collector.env.episode == "hand"
    r = collector.collect(
        BarbuActorCritic(config.model_config(args)), {}, np.random.default_rng(1), torch.Generator().manual_seed(1)
    )
    assert r.decisions < 4 * 100  # four single hands (a whole game is about 1,570 decisions)
    totals = {contract_total(rules, c) for c in range(7)}
    for g in range(4):
        assert sum(r.final_scores[g]) in totals  # one hand's scores (a whole game's sum to 0)
        for seat in range(NUM_PLAYERS):
            mine = np.flatnonzero((r.game_ids == g) & (r.seats == seat))
            assert r.rewards[mine].sum() == pytest.approx(r.final_scores[g, seat] * args.reward_scale, abs=1e-6)
            assert r.returns[mine[0]] == pytest.approx(r.final_scores[g, seat] * args.reward_scale, abs=1e-3)
            assert r.dones[mine].tolist() == [False] * (len(mine) - 1) + [True]


# ---------------------------------------------------------------------- errors


def test_an_unknown_episode_mode_is_an_error_listing_the_modes():
    with pytest.raises(ValueError, match=MODES_MESSAGE):
        barbu_env.env(episode="trick")
