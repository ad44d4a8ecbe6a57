"""Differential play: the same games through the oracle (``tests/oracle``) and the product.

``play(rules, seed, games, ...)`` plays ``games`` full games in lockstep through the oracle
(``oracle.engine.BarbuState`` and ``oracle.observation.ObservationEncoder``) and, with the
same deals and the same actions, through every level of the product users touch:

* ``barbu_env.game.engine.BarbuState``, driven directly: seat to act, phase and legal mask at
  every decision, the ``HandResult`` of every action (type and value of every field);
* the AEC environment ``barbu_env.env()``: the seat to act, its observation and mask at
  every decision, then rewards, cumulative rewards (``last()``), terminations,
  truncations and infos after every step;
* ``VectorBarbu`` (one slot per game): observation, mask and seat at every decision,
  rewards, dones and infos after every step.

In the "information-state" games (every ``info_every``-th) each decision also compares the
seat's information state (``oracle.information_state``, encoded from the oracle's record of
the hand) with ``BarbuState.information_state``, with the observation of an AEC environment
made with ``observation="information_state"`` and with a ``VectorBarbu`` made so, both
played in lockstep with the others (in deep games, every seat's).

In the "deep" games (every ``deep_every``-th) each decision also compares every public
field and query of the product ``BarbuState`` with the oracle's, the observations of all
four agents and ``state()`` of the AEC environment, ``VectorBarbu.other_hands``, an illegal
action (the product must raise the same error and change nothing), and now and then a
clone and a pickled copy played down another line (games given their deals). Any
difference fails with the game, the decision and the field.

Deals: every other game is dealt from a seed (the oracle, the product state and the AEC
environment each draw from their own ``numpy.random.default_rng(seed)``; ``VectorBarbu``
is given the same deals, derived here as the oracle draws them), the others are given
random deals and first declarers. Actions come from the oracle: uniformly random legal
actions from a seeded Generator, or the heuristic player's choice on the oracle's
observation, or a script (the golden games).
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Sequence

import numpy as np
from oracle.engine import BarbuState as OracleState
from oracle.engine import IllegalActionError as OracleIllegalActionError
from oracle.information_state import INFO_OFFSETS as _INFO_OFFSETS
from oracle.information_state import InformationStateTracker
from oracle.observation import OBS_DIM, OFFSETS
from oracle.observation import ObservationEncoder as OracleEncoder

import barbu_env
from barbu_env.agents import make_agent
from barbu_env.game.actions import AGENTS, DOUBLE_OFFSET, NUM_ACTIONS, PASS_ACTION, mask_array
from barbu_env.game.cards import NUM_CARDS, to_card
from barbu_env.game.constants import CARDS_PER_HAND, CONTRACT_NAMES, NUM_HANDS, NUM_PLAYERS, Phase
from barbu_env.game.engine import BarbuState as ProductState
from barbu_env.game.engine import IllegalActionError
from barbu_env.game.rules import Rules, load_rules
from barbu_env.game.vector import VectorBarbu

#: Public fields of a ``BarbuState`` compared in the deep games: every slot of the oracle's
#: but its private cache and its Generator (which the product may use differently).
STATE_FIELDS = tuple(name for name in OracleState.__slots__ if not name.startswith("_") and name != "rng")
#: Fields a game never changes.
_CONSTANT_FIELDS = ("rules", "deals", "first_declarer")
#: In deep games, a clone is played down another line every this many decisions ...
CLONE_EVERY = 97
#: ... for this many actions.
CLONE_LINE = 24


def random_deals(rng: np.random.Generator, games: int) -> np.ndarray:
    """28 random deals per game as card ids, int [games, 28, 4, 13]."""
    order = np.argsort(rng.random((games, NUM_HANDS, NUM_CARDS)), axis=-1)
    return order.reshape(games, NUM_HANDS, NUM_PLAYERS, CARDS_PER_HAND)


def seeded_game(seed: int) -> tuple[int, np.ndarray]:
    """The first declarer and the 28 deals [28, 4, 13] a game drawn from
    ``default_rng(seed)`` gets in the oracle: the first declarer, then one permutation
    of the deck per hand."""
    rng = np.random.default_rng(seed)
    first = int(rng.integers(NUM_PLAYERS))
    deals = np.stack([rng.permutation(NUM_CARDS).reshape(NUM_PLAYERS, CARDS_PER_HAND) for _ in range(NUM_HANDS)])
    return first, deals


def plain(value, where: str):
    """``value`` as nested lists of Python ints, strings and None, for comparison; list
    and tuple alike, an int enum as its int. Anything else (a numpy scalar or array, a
    bool, a float) is a difference of type from the oracle, whose fields hold only these."""
    kind = type(value)
    if kind is int or kind is str or value is None:
        return value
    if kind is list or kind is tuple:
        return [v if type(v) is int else plain(v, where) for v in value]
    if isinstance(value, int) and not isinstance(value, bool):
        return int(value)
    raise AssertionError(f"{where}: {value!r} is a {kind.__name__}, not a Python int, list or tuple")


def same_exactly(product, oracle, where: str) -> None:
    """Equal values of exactly the same types (tuple is not list, an enum is not an int),
    recursively."""
    assert type(product) is type(oracle), f"{where}: {type(product).__name__} {product!r}, oracle {oracle!r}"
    if isinstance(oracle, (list, tuple)):
        assert len(product) == len(oracle), f"{where}: {product!r}, oracle {oracle!r}"
        for k, (a, b) in enumerate(zip(product, oracle)):
            same_exactly(a, b, f"{where}[{k}]")
    elif isinstance(oracle, dict):
        assert list(product) == list(oracle), f"{where}: keys {list(product)}, oracle {list(oracle)}"
        for k in oracle:
            same_exactly(product[k], oracle[k], f"{where}[{k!r}]")
    else:
        assert product == oracle, f"{where}: {product!r}, oracle {oracle!r}"


def compare_results(product, oracle, where: str) -> None:
    """Two ``apply_action`` returns: both None, or HandResults equal field by field, of the
    same types, with the same ``to_dict()`` (plain JSON)."""
    if oracle is None:
        assert product is None, f"{where}: the product ended a hand ({product!r}), the oracle did not"
        return
    assert product is not None, f"{where}: the oracle ended hand {oracle.hand}, the product did not"
    assert type(product).__name__ == "HandResult", f"{where}: returned a {type(product).__name__}"
    for name in oracle.__dataclass_fields__:
        assert hasattr(product, name), f"{where}: the HandResult has no field {name!r}"
        same_exactly(getattr(product, name), getattr(oracle, name), f"{where}: HandResult.{name}")
    d, expected = product.to_dict(), oracle.to_dict()
    same_exactly(d, expected, f"{where}: HandResult.to_dict()")
    assert json.dumps(d) == json.dumps(expected), where


def differing_slices(obs: np.ndarray, expected: np.ndarray) -> list[str]:
    """Names of the observation (or information-state) slices where ``obs`` and ``expected`` differ."""
    bad = np.flatnonzero(np.asarray(obs) != np.asarray(expected))
    offsets = OFFSETS if len(expected) == OBS_DIM else _INFO_OFFSETS
    return sorted({name for name, (a, b, _) in offsets.items() if ((bad >= a) & (bad < b)).any()})


def compare_obs(obs: np.ndarray, expected: np.ndarray, where: str) -> None:
    assert obs.dtype == np.float32 and obs.shape == expected.shape, f"{where}: {obs.dtype} {obs.shape}"
    assert np.array_equal(obs, expected), f"{where}: differs in {differing_slices(obs, expected)}"


def compare_states(p: ProductState, o: OracleState, where: str, *, whole: bool = False) -> None:
    """Every public field and query of a product state against the oracle's. Unless
    ``whole``, the fields that only grow (``results``, ``history``) are compared by their
    length and last action, and those a game never changes (``rules``, ``deals``,
    ``first_declarer``) not at all."""
    for name in STATE_FIELDS:
        if not whole and name in _CONSTANT_FIELDS:
            continue
        assert hasattr(p, name), f"{where}: the product state has no field {name!r}"
        value = getattr(p, name)
        if name == "results" and whole:
            assert len(value) == len(o.results), f"{where}: {len(value)} results, oracle {len(o.results)}"
            for k, (rp, ro) in enumerate(zip(value, o.results)):
                compare_results(rp, ro, f"{where}: results[{k}]")
        elif name == "results":  # (each compared when it is returned, and all at the end)
            assert len(value) == len(o.results), f"{where}: {len(value)} results, oracle {len(o.results)}"
        elif name == "history" and not whole:
            n = len(o.history)
            assert len(value) == n and (n == 0 or plain(value[-1], where) == o.history[-1]), (
                f"{where}: history has {len(value)} actions ending {value[-1:]}, oracle {n} ending {o.history[-1:]}"
            )
        elif name == "rules":
            assert value == o.rules, f"{where}: rules {value!r}, oracle {o.rules!r}"
        elif name == "phase":
            assert isinstance(value, Phase) and value is o.phase, f"{where}: phase {value!r}, oracle {o.phase!r}"
        else:
            assert plain(value, f"{where}: {name}") == plain(getattr(o, name), name), (
                f"{where}: {name} {value!r}, oracle {getattr(o, name)!r}"
            )
    assert p.is_terminal is o.is_terminal, f"{where}: is_terminal {p.is_terminal}"
    assert p.legal_mask() == o.legal_mask(), f"{where}: legal_mask {p.legal_mask():#x}, oracle {o.legal_mask():#x}"
    assert plain(p.legal_actions(), where) == o.legal_actions(), f"{where}: legal_actions {p.legal_actions()}"
    assert plain(p.levels(), where) == o.levels(), f"{where}: levels {p.levels()}, oracle {o.levels()}"


def check_illegal(p: ProductState, o: OracleState, rng: np.random.Generator, where: str) -> None:
    """An illegal action (a random one, or an id out of range) raises the same error in
    both; the product state is left as it was (the caller compares it next)."""
    legal = o.legal_mask()
    illegal = [a for a in range(NUM_ACTIONS) if not (legal >> a) & 1] + [NUM_ACTIONS, -1]
    bad = illegal[int(rng.integers(len(illegal)))]
    try:
        o.apply_action(bad)
    except OracleIllegalActionError as e:
        expected = str(e)
    else:
        raise AssertionError(f"{where}: the oracle accepted the illegal action {bad}")
    try:
        p.apply_action(bad)
    except IllegalActionError as e:
        assert str(e) == expected, f"{where}: illegal {bad}: message {str(e)!r}, oracle {expected!r}"
    else:
        raise AssertionError(f"{where}: the product accepted the illegal action {bad}")


def check_clone(p: ProductState, o: OracleState, rng: np.random.Generator, where: str) -> None:
    """A clone and a pickled copy of the product state play down a random line of their
    own as a clone of the oracle's does; the originals are untouched (the caller compares
    them next). For games given all their deals: a clone shares its original's
    Generator, so a clone dealing a hand would change the original's next deal."""
    oc = o.clone()
    copies = {"clone": p.clone(), "pickled copy": pickle.loads(pickle.dumps(p))}
    for k in range(CLONE_LINE):
        if oc.is_terminal:
            break
        actions = oc.legal_actions()
        a = actions[int(rng.integers(len(actions)))]
        result = oc.apply_action(a)
        for name, copy in copies.items():
            compare_results(copy.apply_action(a), result, f"{where}: {name}, action {k} of its line")
    for name, copy in copies.items():
        compare_states(copy, oc, f"{where}: {name} after its line", whole=True)


_NO_REWARDS = dict.fromkeys(AGENTS, 0)
_ALL = {flag: dict.fromkeys(AGENTS, flag) for flag in (False, True)}


class AecModel:
    """What the AEC environment must report after each step, from the oracle's results:
    rewards are the settled scores of a hand that just ended (else 0), the cumulative
    reward of an agent is what arrived since its last action, infos hold the last
    ``hand_result`` until the agent's next action."""

    def __init__(self) -> None:
        self.infos: dict[str, dict] = {a: {} for a in AGENTS}
        self.cumulative = dict.fromkeys(AGENTS, 0)

    def step(self, agent: str, result) -> dict[str, int]:
        """Record ``agent``'s step (ending a hand with ``result``, or not); the rewards."""
        self.infos[agent] = {}
        self.cumulative[agent] = 0
        if result is None:
            return _NO_REWARDS
        info = result.to_dict()
        for a, score in zip(AGENTS, result.settled):
            self.cumulative[a] += score
            self.infos[a] = {"hand_result": info}
        return dict(zip(AGENTS, result.settled))


def play(
    rules: Rules | str,
    seed: int,
    games: int,
    *,
    heuristic: bool = False,
    deep_every: int = 8,
    seeded_every: int = 2,
    info_every: int = 0,
    scripts: Sequence[tuple[int, np.ndarray, Sequence[int]]] | None = None,
) -> int:
    """Play ``games`` full games through the oracle and the product in lockstep, comparing
    every decision; returns the decisions compared.

    The games are played by the heuristic (on the oracle's observations) if ``heuristic``,
    else by random legal actions. Game i is dealt from a seed if ``seeded_every`` and
    ``i % seeded_every == 1``, else given random deals and first declarer; it is deep (see
    the module docstring) if ``deep_every`` and ``i % deep_every == 0``, and compares
    information states if ``info_every`` and ``i % info_every == 0``.
    ``scripts`` replaces all that: one ``(first_declarer, deals, actions)`` per game (28
    deals of four hands of 13 cards, ids or text), played as given (all deep)."""
    rules = load_rules(rules)
    rng = np.random.default_rng(seed)
    if scripts is not None:
        games = len(scripts)
        first = np.array([s[0] for s in scripts])
        deals = np.array([[[[to_card(c) for c in hand] for hand in deal] for deal in s[1]] for s in scripts])
        seeds: list[int | None] = [None] * games
    else:
        deals = random_deals(rng, games)
        first = rng.integers(NUM_PLAYERS, size=games)
        seeds = [None] * games
        for i in range(games):
            if seeded_every and i % seeded_every == 1:
                seeds[i] = seed * 10_000 + i
                first[i], deals[i] = seeded_game(seeds[i])
    heuristic = heuristic and scripts is None
    deep = [scripts is not None or (bool(deep_every) and i % deep_every == 0) for i in range(games)]
    info = [bool(info_every) and i % info_every == 0 for i in range(games)]
    trackers = {i: InformationStateTracker() for i in range(games) if info[i]}
    info_envs = {}
    player = make_agent("heuristic", rules=rules) if heuristic else None

    oracles, products, envs, models, encoders = [], [], [], [], []
    for i in range(games):
        if seeds[i] is not None:
            o = OracleState.new_game(rules, np.random.default_rng(seeds[i]))
            p = ProductState.new_game(rules, np.random.default_rng(seeds[i]))
            options = None
        else:
            options = {"deals": deals[i].tolist(), "first_declarer": int(first[i])}
            o = OracleState.new_game(rules, np.random.default_rng(0), **options)
            p = ProductState.new_game(rules, np.random.default_rng(0), **options)
        env = barbu_env.env(rules=rules)
        env.reset(seed=seeds[i], options=options)
        if info[i]:
            info_envs[i] = barbu_env.env(rules=rules, observation="information_state")
            info_envs[i].reset(seed=seeds[i], options=options)
        assert o.first_declarer == first[i] and o.dealt == tuple(sum(1 << int(c) for c in h) for h in deals[i][0])
        oracles.append(o)
        products.append(p)
        envs.append(env)
        models.append(AecModel())
        encoders.append(OracleEncoder())
    vec = VectorBarbu(games, rules=rules, seed=seed)
    vobs, vmasks, vseat = vec.reset(deals=deals, first_declarers=first)
    if trackers:  # the same games, writing information states
        ivec = VectorBarbu(games, rules=rules, seed=seed, observation="information_state")
        iobs, imasks, iseat = ivec.reset(deals=deals, first_declarers=first)

    live = np.ones(games, dtype=bool)
    step = np.zeros(games, dtype=np.int64)
    compared = 0
    # Each game's doubles in the hand under way, decoded from the oracle's doubling actions as the
    # tournament used to: [i, j] = 1 if seat i doubled j, 2 if it redoubled j (j had named i first).
    doubles = np.zeros((games, NUM_PLAYERS, NUM_PLAYERS), dtype=np.int8)
    while live.any():
        actions = np.argmax(np.where(vmasks, rng.random(vmasks.shape), -1.0), axis=1)  # for finished slots
        if player is not None:
            obs_rows = np.zeros((games, OBS_DIM), dtype=np.float32)
            mask_rows = np.zeros((games, NUM_ACTIONS), dtype=np.int8)
        vseats = vseat.tolist()
        draws = rng.random(games).tolist()
        for i in np.flatnonzero(live).tolist():
            o, p, env, enc = oracles[i], products[i], envs[i], encoders[i]
            seat = o.current_player

            def where(i=i, o=o, seat=seat) -> str:  # (formatted only when an assertion fails)
                return f"game {i} decision {step[i]} (hand {o.hand_number}, {o.phase.name}, seat {seat})"

            legal = o.legal_mask()
            omask = mask_array(legal)
            oobs = enc.observe(o, seat)
            mask_bytes, obs_bytes = omask.tobytes(), oobs.tobytes()
            # The product state.
            assert p.current_player == seat, f"{where()}: state: current_player {p.current_player}"
            assert p.phase is o.phase, f"{where()}: state: phase {p.phase!r}"
            assert p.legal_mask() == legal, f"{where()}: state: legal_mask {p.legal_mask():#x}, oracle {legal:#x}"
            # The AEC environment.
            agent = AGENTS[seat]
            assert env.agent_selection == agent, f"{where()}: env: agent_selection {env.agent_selection}"
            seen = env.observe(agent)
            if seen["action_mask"].tobytes() != mask_bytes or seen["observation"].tobytes() != obs_bytes:
                assert seen["action_mask"].dtype == np.int8, f"{where()}: env: action_mask dtype"
                assert np.array_equal(seen["action_mask"], omask), f"{where()}: env: action_mask"
                compare_obs(seen["observation"], oobs, f"{where()}: env: observation")
            # VectorBarbu.
            assert vseats[i] == seat, f"{where()}: vector: seat {vseats[i]}"
            if vmasks[i].tobytes() != mask_bytes or vobs[i].tobytes() != obs_bytes:
                assert np.array_equal(vmasks[i], omask), f"{where()}: vector: mask"
                compare_obs(vobs[i], oobs, f"{where()}: vector: observation")
            if deep[i]:
                assert seen["observation"].dtype == np.float32 and seen["action_mask"].dtype == np.int8, where()
                assert vobs.dtype == np.float32 and vmasks.dtype == bool, where()
                check_illegal(p, o, rng, where())
                compare_states(p, o, f"{where()}: state", whole=step[i] == 0)
                if seeds[i] is None and step[i] % CLONE_EVERY == CLONE_EVERY - 1:
                    check_clone(p, o, rng, where())
                    compare_states(p, o, f"{where()}: state after cloning")
                for other in range(NUM_PLAYERS):
                    if other != seat:
                        seen = env.observe(AGENTS[other])
                        assert not seen["action_mask"].any(), f"{where()}: env: mask of {AGENTS[other]}"
                        compare_obs(seen["observation"], enc.observe(o, other), f"{where()}: env: {AGENTS[other]}")
                compare_obs(env.state(), enc.state_vector(o), f"{where()}: env: state()")
                assert np.array_equal(vec.other_hands()[i], enc.privileged(oobs, seat)[OBS_DIM:]), (
                    f"{where()}: vector: other_hands"
                )
            if info[i]:
                tracker, ienv = trackers[i], info_envs[i]
                expected = tracker.encode(o, seat, oobs)
                compare_obs(p.information_state(seat), expected, f"{where()}: state: information_state")
                assert ienv.agent_selection == agent, f"{where()}: info env: agent_selection {ienv.agent_selection}"
                seen = ienv.observe(agent)
                assert np.array_equal(seen["action_mask"], omask), f"{where()}: info env: action_mask"
                compare_obs(seen["observation"], expected, f"{where()}: info env: observation")
                assert iseat[i] == seat and np.array_equal(imasks[i], omask), f"{where()}: info vector: seat, mask"
                compare_obs(iobs[i], expected, f"{where()}: info vector: observation")
                if deep[i]:
                    for other in range(NUM_PLAYERS):
                        if other != seat:
                            expected = tracker.encode(o, other, enc.observe(o, other))
                            compare_obs(p.information_state(other), expected, f"{where()}: state: seat {other}")
                            seen = ienv.observe(AGENTS[other])["observation"]
                            compare_obs(seen, expected, f"{where()}: info env: {AGENTS[other]}")
            if scripts is not None:
                actions[i] = scripts[i][2][step[i]]
            elif player is not None:
                obs_rows[i], mask_rows[i] = oobs, omask
            else:
                choices = o.legal_actions()
                actions[i] = choices[int(draws[i] * len(choices))]
            compared += 1
        if player is not None:
            rows = np.flatnonzero(live)
            actions[rows] = player.act_batch(obs_rows[rows], mask_rows[rows])

        # One action per game through every level.
        vobs, vmasks, vseat, vrewards, vdones, vinfos = vec.step(actions)
        if trackers:
            iobs, imasks, iseat, *_ = ivec.step(actions)
        vrewards_l, vdones_l, hand_over = vrewards.tolist(), vdones.tolist(), vinfos["hand_over"].tolist()
        last_hands = vec.last_hands() if any(hand_over) else None
        for i in np.flatnonzero(live).tolist():
            o, p, env, model = oracles[i], products[i], envs[i], models[i]
            a = int(actions[i])
            hand, phase, seat = o.hand_number, o.phase, o.current_player

            def where(i=i, a=a, hand=hand, phase=phase, seat=seat) -> str:
                return f"game {i} decision {step[i]} (hand {hand}, {phase.name}, seat {seat}, action {a})"

            if info[i]:
                trackers[i].record(o, a)
                info_envs[i].step(a)
            if DOUBLE_OFFSET <= a < PASS_ACTION:
                for k in range(NUM_PLAYERS - 1):
                    if (a - DOUBLE_OFFSET) >> k & 1:
                        target = (seat + 1 + k) % NUM_PLAYERS
                        doubles[i, seat, target] = 1 + (o.named[target] >> seat & 1)
            result = o.apply_action(a)
            product_result = p.apply_action(a)
            if product_result is not None or result is not None:
                compare_results(product_result, result, f"{where()}: state: apply_action")
            env.step(a)
            raw = env.unwrapped
            rewards = model.step(AGENTS[seat], result)
            done = o.is_terminal
            assert raw.rewards == rewards, f"{where()}: env: rewards {raw.rewards}, oracle {rewards}"
            assert raw.infos == model.infos, f"{where()}: env: infos {raw.infos}"
            assert raw.terminations == _ALL[done], f"{where()}: env: terminations {raw.terminations}"
            assert raw.truncations == _ALL[False], f"{where()}: env: truncations {raw.truncations}"
            nxt = AGENTS[(seat + 1) % NUM_PLAYERS if done else o.current_player]
            assert env.agent_selection == nxt, f"{where()}: env: agent_selection {env.agent_selection}, oracle {nxt}"
            last = env.last(observe=False)
            assert last[1:] == (model.cumulative[nxt], done, False, model.infos[nxt]), f"{where()}: env: last() {last}"
            assert vrewards_l[i] == list(rewards.values()), f"{where()}: vector: rewards {vrewards_l[i]}"
            assert hand_over[i] == (result is not None), f"{where()}: vector: hand_over"
            if result is not None:
                record = {key: value[i].tolist() for key, value in last_hands.items()}
                expected = {
                    "hand": result.hand,
                    "declarer": result.declarer,
                    "contract": CONTRACT_NAMES.index(result.contract),
                    "raw": list(result.raw),
                    "settled": list(result.settled),
                    "doubles": doubles[i].tolist(),
                }
                assert record == expected, f"{where()}: vector: last_hands {record}, oracle {expected}"
                named = doubles[i] > 0
                assert (named.astype(int) + named.T).tolist() == [list(r) for r in result.levels], where()
                doubles[i] = 0
            assert vdones_l[i] == done, f"{where()}: vector: done"
            step[i] += 1
            if done:
                assert vinfos["final_scores"][i].tolist() == o.scores, f"{where()}: vector: final_scores"
                assert vinfos["game_length"][i] == len(o.history), f"{where()}: vector: game_length"
                assert len(o.results) == NUM_HANDS
                compare_states(p, o, f"{where()}: state at the end", whole=True)
                if info[i]:  # the last hand's record stays
                    for other in range(NUM_PLAYERS):
                        expected = trackers[i].encode(o, other, encoders[i].observe(o, other))
                        compare_obs(p.information_state(other), expected, f"{where()}: state at the end: seat {other}")
                        seen = info_envs[i].observe(AGENTS[other])["observation"]
                        compare_obs(seen, expected, f"{where()}: info env at the end: {AGENTS[other]}")
                live[i] = False
    return compared


__all__ = ["STATE_FIELDS", "compare_results", "compare_states", "play", "random_deals", "seeded_game"]
