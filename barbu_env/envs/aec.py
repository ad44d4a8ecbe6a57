"""Barbu: the complete four-player game as a PettingZoo AEC environment.

===================  =============================================================
Import               ``from barbu_env import barbu_v1; env = barbu_v1.env(rules="standard")``
                     (or ``barbu_env.env(...)``: the current version)
Agents               ``player_0`` ... ``player_3`` (seats 0-3, play passes left: +1)
Action space         ``Discrete(85)`` for every agent
Observation space    ``Dict(observation=Box(1132,) float32, action_mask=Box(85,) int8)``
                     (``Box(4152,)`` with ``observation="information_state"``)
State space          ``Box(1288,) float32`` (``env.state()``, perfect information)
Episode              one game: 28 hands, about 1,600 decisions (``episode="game"``);
                     ``"round"``: its first 7 hands (about 400); ``"hand"``: its
                     first hand (about 57)
===================  =============================================================

A game is 28 hands. The declarer of each hand picks one of the seven contracts they have
not yet played (five negative trick contracts, Trumps, Domino), names the trump suit or
the Domino starting rank where needed, then every player has a doubling turn (side bets
between pairs of players), then the hand is played. The rules and all their variant
switches are in docs/rules.md; ``barbu_env.game.rules.Rules`` lists the switches and
``barbu_env/game/presets/*.yaml`` the presets.

Arguments
---------
``env(rules=None, render_mode=None, episode="game", illegal_action="raise",
observation="observation")``: ``rules``
is a preset name (``"standard"``, ``"classic"``, ``"rotating"``, ``"declarer_only"``), a
path to a rules YAML file, a mapping of switches, or a ``Rules``; ``render_mode`` is
``"ansi"`` (``render()`` returns a string), ``"human"`` (prints it) or ``"rgb_array"``
(``render()`` returns the table as a picture, ``uint8[640, 960, 3]``, every hand face
up, seat 0 at the bottom: ``barbu_env.view.frames``).
``episode`` is the episode length (below). ``illegal_action``: what ``step`` does with an
action off the mask: ``"raise"`` (the default; see Action mask) or ``"random"``: a
uniformly random legal action, drawn from the environment's generator, is played
instead (for checkers that step with unmasked random actions, such as PettingZoo's
``state_test``). ``observation``: what ``"observation"`` holds: ``"observation"`` (the
default, below) or ``"information_state"`` (the observation followed by the seat's
perfect recall of the hand: see The information state). ``env()`` wraps ``raw_env`` in
PettingZoo's ``OrderEnforcingWrapper`` only: an illegal action already raises.

Episodes
--------
``episode`` chooses how much of a game an episode is (``barbu_env.game.constants.EPISODE_HANDS``;
docs/rules.md#episodes):

- ``"game"`` (the default): the whole game, 28 hands.
- ``"round"``: the first seven hands. Under the default rotation (``seven_in_a_row``)
  they are the first declarer's seven hands, each contract once; under ``rotation:
  every_hand`` they are seven hands of declarers taking turns (the first declarer and
  the next two declare twice, the fourth seat once).
- ``"hand"``: the first hand: the declarer's choice of contract, doubling, play and
  settlement.

An episode is the start of the whole game: with the same seed (or ``deals`` and
``first_declarer``) and the same actions, every observation, action mask, reward and
info up to its end is exactly the whole game's, and the rules that span hands apply as
far as the episode reaches. Contracts already declared stay used. The doubling
obligation counts the declarer's seven hands as in the whole game: it binds only when
the declarer has no more hands left than the doubles owed, so a ``"hand"`` episode
never forces a double (unless ``min_declarer_doubles`` is 7), while in a ``"round"``
episode under the default rotation a player who has not yet doubled the declarer must
in its sixth and seventh hands (with the default ``min_declarer_doubles`` of 2). The
observation does not change: it still numbers the hands of 28 and lists every contract
not yet declared. The episode ends (``terminations``, not ``truncations``) when its
last hand is settled; the sum of an agent's rewards is its score over the hands played.

Actions
-------
=========  ==================================================================
ids        meaning
=========  ==================================================================
0-51       play card id ``suit * 13 + rank`` (suits C D H S; ranks 2 ... A)
52-58      declare No Tricks, No Hearts, No Queens, No King of Hearts,
           No Last Two, Trumps, Domino
59-62      trump suit clubs, diamonds, hearts, spades
63-75      Domino starting rank 2 ... A (``63 + rank``)
76-83      doubling turn ``76 + b``: b names seats relative to the actor, bit 0
           left, bit 1 opposite, bit 2 right; 76 names nobody
84         pass (Domino, only when no card can be played)
=========  ==================================================================

``barbu_env.game.actions.action_text`` / ``parse_action`` convert ids to text ("play QH",
"declare no_queens", "trump spades", "domino 7", "double left+right", "pass") and back.

Action mask
-----------
``action_mask`` marks exactly the legal actions of the agent to act (all zeros for the
others). Every decision is a turn, even a forced one: a declarer nobody doubled gets a
doubling turn with only 76, a Domino player who cannot play a turn with only 84.
Players who are out in Domino are skipped. An illegal action raises
``IllegalActionError`` (a ``ValueError``) naming the action and the legal ones, and
leaves the game exactly as it was (unless ``illegal_action="random"``). An action is an
integer: a Python or numpy integer, or a 0-d integer array (what ``operator.index``
takes); anything else (a bool, a float, a string, an array of shape (1,)), and an integer
outside 0..84, raises ``IllegalActionError`` naming it in either mode.

Observation
-----------
A float32 vector from the observer's seat: relative seat 0 is the observer, 1 left,
2 opposite, 3 right. ``barbu_env.game.observation.decode(obs)`` splits it into these slices:

=================  ========  ===============================================================
slice              shape     meaning
=================  ========  ===============================================================
hand               52        cards the observer holds now
trick              4 x 52    card each relative seat has played to the current trick
played             4 x 52    cards each relative seat has played this hand
taken              4 x 52    cards in the tricks each relative seat has won this hand
domino_playable    52        Domino: cards that could be placed on the layout now
excluded           4 x 52    [i, c] = 1 if the rules have shown that seat i does not hold card
                             c: it would have had to play it (a suit it did not follow;
                             Trumps' ruff and overtrump duties; K♥ under Barbu's
                             first-chance rule; every non-heart after a heart lead in No
                             Hearts or Barbu; the cards it could have placed when it passed
                             in Domino). See docs/rules.md#what-play-reveals
phase              7         one-hot: declare, trump, domino_rank, double, tricks, domino,
                             game_over
contract           7         one-hot contract (no_tricks ... domino)
trump              4         one-hot trump suit (Trumps)
domino_rank        13        one-hot Domino starting rank
declarer           4         one-hot relative seat of the declarer
doubled            4 x 4     [i, j] = 1 if seat i named seat j while doubling this hand
                             (a double, or a redouble if j had named i)
doubling_done      4         seats that have had their doubling turn this hand
owed               4 x 4     [i, d]: doubles i still owes declarer d / min_declarer_doubles
contracts_left     4 x 7     contracts each seat has not yet declared
hand_number        28        one-hot hand number (0-based)
game_scores        4         game totals / 100
to_act             4         one-hot relative seat to act
leader             4         one-hot relative seat that led the current trick
trick_number       13        one-hot current trick (0-based)
tricks_won         4         tricks won this hand / 13
hand_points        4         raw points this hand so far / 10
domino_place       4 x 4     [i, k] = 1 if seat i went out k-th in Domino
cards_left         4         cards held / 13
voids              4 x 4     [i, s] = 1 if seat i has shown void in suit s this hand (did
                             not follow when s was led)
=================  ========  ===============================================================

Nothing hidden is encoded: other players' hands appear only through the cards they
have played and what the rules made those plays reveal (``excluded``).

Bounds: the observation space's bounds are those of the environment's rules
(``barbu_env.game.observation.observation_bounds(rules)``), and none is infinite: every value
lies in 0..1 but ``hand_points`` and ``game_scores``. Under the standard rules
``hand_points`` lies in -3.0..6.5 (both ends reached: every heart, or all 13 tricks of
Trumps) and ``game_scores`` in -54.6..54.6 (the worst case the doubling rules allow, not
necessarily reached); other rules give other bounds, since their point values differ
(``OBS_LOW`` / ``OBS_HIGH`` hold under every rules variant). The information state's and
``state()``'s spaces are bounded the same way.

The information state
---------------------
With ``observation="information_state"`` every agent's ``"observation"`` is its
information state (``barbu_env.game.observation.INFO_SLICES``, layout
``INFO_LAYOUT`` = 1, 4152 values): the 1132 values of the observation above, exactly,
then the hand's record as the observer saw it, in these slices
(``barbu_env.game.observation.decode_information_state`` splits it):

=================  ========  ===============================================================
slice              shape     meaning
=================  ========  ===============================================================
dealt              52        cards the observer was dealt this hand
play_order         52 x 52   [k, c] = 1 if card c was the (k+1)-th card played this hand:
                             in trick play trick k // 4, position k % 4 from its leader; in
                             Domino the (k+1)-th card placed. Who played it: ``played``
doubling_turns     7 x 8     row t: the t-th doubling turn of this hand (the four turns from
                             the declarer's left, then the redouble-pass turns): values 0-3
                             one-hot relative seat that took it, 4-7 the relative seats it
                             named (0/1 each); all zero for turns not yet taken
domino_passes      4 x 52    [i, k] = 1 if seat i passed with k cards on the layout
=================  ========  ===============================================================

The declaration, the trump suit and the Domino rank are the observation's; with the
record they make the hand's whole public action sequence and the observer's own
actions, in order (perfect recall). Earlier hands enter only through the observation's
summary of the game (scores, contracts left, doubles owed, hand number). After the last
hand the record stays the last hand's. ``state()`` does not change.

State
-----
``env.state()``: the four hands (absolute seats, 4 x 52), then seat 0's observation
without its hand slice. For centralized critics.

Rewards
-------
0 on every step except the last step of a hand, where each agent gets its settled score
for that hand (raw contract score plus its side bets). The sum over the game equals the
agent's final score. Scores are not scaled.

Infos
-----
When a hand ends every agent's info gets ``"hand_result"``: hand number, declarer,
contract, trump suit or starting rank, the four hands as dealt, the 4x4 doubling levels,
raw and settled scores, tricks won, Domino finishing order. It stays until that agent's
next action, so each agent sees each hand's result once in ``last()``.

Reset options
-------------
``reset(seed=None, options=None)``; options ``"first_declarer"`` (seat 0-3) and
``"deals"`` (up to 28 deals, each four lists of 13 cards as ids or text, for hands 1, 2,
...; later hands are dealt from the seed). Same seed and options, same game. Other keys
are ignored (PettingZoo's ``api_test`` passes one of its own); ``Barbu-v1`` refuses them.
Malformed deals raise ``DealError`` (a ``ValueError``).

Seeding follows Gymnasium: ``reset(seed=s)`` seeds the environment's generator
(``env.unwrapped.np_random``) and draws the game from it; a ``reset()`` without a seed
draws the next game from the same generator, so seeding once and resetting many times
replays the same sequence of games (fresh entropy only if no reset was ever seeded).

Termination
-----------
All four agents terminate together after hand 28, or after the last hand of a shorter
episode (``episode``); the final observation's phase is ``game_over``. There is no
truncation.

Version history
---------------
* v1: observation layout 2 (``barbu_env.game.observation.OBS_LAYOUT``, 1132 values), the
  ``episode`` and ``observation`` arguments; an unseeded ``reset()`` continues the
  generator of the last seeded one. Networks trained on layout 1 are refused when loaded;
  ``barbu_v0`` raises ``DeprecatedEnv`` saying so.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers
from pettingzoo.utils.env_logger import EnvLogger

from ..game.actions import AGENTS, NUM_ACTIONS, mask_array
from ..game.constants import NUM_PLAYERS
from ..game.engine import BarbuState, DealError, IllegalActionError, action_id, episode_hands
from ..game.observation import information_state_bounds, observation_bounds, state_bounds
from ..game.render import render_state
from ..game.rules import Rules, load_rules
from ..util.files import quote
from .stepping import ILLEGAL_ACTION_MODES, check_illegal_action, play_instead

_NO_MASK = np.zeros(NUM_ACTIONS, dtype=np.int8)

#: What an agent's ``"observation"`` may hold (see ``observation``), with its bounds under given rules.
OBSERVATION_KINDS = {"observation": observation_bounds, "information_state": information_state_bounds}


class OrderEnforcingWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order-enforcing guard with direct paths for the per-decision calls.

    The base class reaches ``agents``, ``agent_selection`` and the fields ``last()`` reads
    through two ``__getattr__`` hops each; this subclass answers them directly once the
    environment is reset and keeps the base class's behaviour otherwise (errors before
    ``reset``, the warning on a step after the game)."""

    @property
    def agents(self) -> list[str]:
        if not self._has_reset:
            raise AttributeError("agents cannot be accessed before reset")
        return self.env.agents

    @property
    def agent_selection(self) -> str:
        if not self._has_reset:
            raise AttributeError("agent_selection cannot be accessed before reset")
        return self.env.agent_selection

    def step(self, action: int | None) -> None:
        if self._has_reset and self.env.agents:
            self._has_updated = True
            self.env.step(action)
        else:
            super().step(action)

    def last(self, observe: bool = True):
        if not self._has_reset:
            EnvLogger.error_observe_before_reset()
        return self.env.last(observe)


def env(**kwargs: Any) -> AECEnv:
    """The Barbu AEC environment, guarded against out-of-order calls."""
    return OrderEnforcingWrapper(raw_env(**kwargs))


class raw_env(AECEnv):
    """The Barbu AEC environment without wrappers (see the module docstring)."""

    metadata = {
        "render_modes": ["ansi", "human", "rgb_array"],
        "name": "barbu_v1",
        "is_parallelizable": False,
        "render_fps": 2,
    }

    def __init__(
        self,
        rules: Rules | str | dict | None = None,
        render_mode: str | None = None,
        episode: str = "game",
        illegal_action: str = "raise",
        observation: str = "observation",
    ):
        super().__init__()
        if observation not in OBSERVATION_KINDS:
            raise ValueError(f"observation must be one of {tuple(OBSERVATION_KINDS)}, not {quote(observation)}")
        self.observation = observation
        self._information_state = observation == "information_state"
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode must be one of {self.metadata['render_modes']} or None, not {quote(render_mode)}"
            )
        self.illegal_action = check_illegal_action(illegal_action, default="raise")
        episode_hands(episode)  # an unknown mode fails here, not at reset
        self.episode = episode
        self.rules = load_rules(rules)
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents: list[str] = []
        self._seat = {a: i for i, a in enumerate(AGENTS)}
        obs_space = spaces.Dict(
            {
                "observation": spaces.Box(*OBSERVATION_KINDS[observation](self.rules), dtype=np.float32),
                "action_mask": spaces.Box(0, 1, (NUM_ACTIONS,), dtype=np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(NUM_ACTIONS) for a in AGENTS}
        self.state_space = spaces.Box(*state_bounds(self.rules), dtype=np.float32)
        self.game: BarbuState | None = None
        self._np_random: np.random.Generator | None = None
        self._mask_key = -1
        self._mask = _NO_MASK

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    @property
    def np_random(self) -> np.random.Generator:
        """The environment's generator: every game is drawn from it (seeded by
        ``reset(seed=...)``; from fresh entropy if no reset was ever seeded)."""
        if self._np_random is None:
            self._np_random = np.random.default_rng()
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random = value

    # ------------------------------------------------------------------ API

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        options = options or {}  # other keys are ignored, as PettingZoo's api_test expects
        if seed is not None or self._np_random is None:
            self._np_random = np.random.default_rng(seed)
        self.game = BarbuState.new_game(
            self.rules,
            self._np_random,  # every deal is drawn now: the next reset continues from here
            first_declarer=options.get("first_declarer"),
            deals=options.get("deals"),
            episode=self.episode,
        )
        self.agents = list(AGENTS)
        self.rewards = {a: 0 for a in AGENTS}
        self._cumulative_rewards = {a: 0 for a in AGENTS}
        self.terminations = {a: False for a in AGENTS}
        self.truncations = {a: False for a in AGENTS}
        self.infos = {a: {} for a in AGENTS}
        self._rewards_dirty = False
        self._mask_key = -1
        self.agent_selection = AGENTS[self.game.current_player]

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        if type(action) is not int or not 0 <= action < NUM_ACTIONS:
            action = action_id(action)  # IllegalActionError for anything but an action id, in either mode
        game = self.game
        try:
            result = game.apply_action(action, observe=True)  # raises on an illegal action, changing nothing
        except IllegalActionError as error:
            message = str(error)
            instead = play_instead(self.illegal_action, game.legal_actions(), self.np_random, lambda: message)
            result = game.apply_action(instead, observe=True)
        self._cumulative_rewards[agent] = 0
        if self.infos[agent]:
            self.infos[agent] = {}
        if self._rewards_dirty:
            self._clear_rewards()
            self._rewards_dirty = False
        if result is not None:
            info = result.to_dict()
            for a, score in zip(AGENTS, result.settled):
                self.rewards[a] = score
                self._cumulative_rewards[a] += score
                self.infos[a] = {"hand_result": info}
            self._rewards_dirty = True
            if game.is_terminal:
                self.terminations = {a: True for a in AGENTS}
                self.agent_selection = AGENTS[(self._seat[agent] + 1) % NUM_PLAYERS]
                if self.render_mode == "human":
                    self.render()
                return
        self.agent_selection = AGENTS[game.current_player]
        if self.render_mode == "human":
            self.render()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        seat = self._seat[agent]
        game = self.game
        obs = game.information_state(seat) if self._information_state else game.observe(seat)
        if seat != game.current_player:
            return {"observation": obs, "action_mask": _NO_MASK.copy()}
        key = len(game.history)
        if key != self._mask_key:
            self._mask = mask_array(game.legal_mask())
            self._mask_key = key
        return {"observation": obs, "action_mask": self._mask.copy()}

    def state(self) -> np.ndarray:
        return self.game.state_vector()

    def render(self) -> str | np.ndarray | None:
        if self.render_mode is None:
            import gymnasium

            gymnasium.logger.warn(
                "render() called without a render_mode; use render_mode='ansi', 'human' or 'rgb_array'"
            )
            return None
        if self.render_mode == "rgb_array":
            from ..view.frames import state_frame  # Pillow, loaded only to draw

            return state_frame(self.game, viewer=0, reveal=True)
        text = render_state(self.game)
        if self.render_mode == "human":
            print(text)
            return None
        return text


__all__ = [
    "ILLEGAL_ACTION_MODES",
    "OBSERVATION_KINDS",
    "DealError",
    "IllegalActionError",
    "env",
    "raw_env",
]
