"""``heuristic``: a rule-based Barbu player that sees only its observation.

Every decision reads the observation (own hand and public facts, seats relative to the
observer: 0 self, 1 left, 2 opposite, 3 right) and the action mask, nothing else; a
forced decision is answered from the mask alone.

=================  =====================================================================
decision           rule
=================  =====================================================================
declare            the unused contract for which this hand is best compared with an
                   average hand: a linear model of hand features per contract gives
                   the expected raw score (fitted offline on heuristic-vs-random play,
                   the heuristic declaring random contracts), less the contract's
                   average and less the option of keeping it for a better later hand
trump suit         the longest suit, honours breaking ties (1.5 per card, A 4 K 3 Q 2 J 1)
Domino rank        the rank leaving the fewest cards of other players between it and the
                   observer's cards, starting-rank cards counting in favour
doubling           name a player when the model's expected raw score for the observer
                   beats that player's (the declarer: a model of own minus declarer's
                   score; anyone else: the average of the other three); a declarer
                   redoubles the same way. The mask's obligation is always met: the
                   declarer is added whenever every legal choice names them
negative trick     each legal card is scored as: chance it wins the trick x what the
contracts          trick would cost (trick points, penalty cards in it, cards the later
                   players may follow with or drop when void), less the future risk it
                   removes from the hand (chance it wins a later trick, own penalty
                   card included), less a little for handing a penalty card to someone
                   else. So it ducks under the winner with its highest card, dumps
                   queens / K♥ / A♥ and high hearts / unguarded high cards when void,
                   leads low cards others must beat, from short suits. No Last Two:
                   sheds its most dangerous cards until the last tricks, then avoids
Trumps             draws trumps with the master trump, cashes side masters while the
                   suit is still held by others, else leads low from its shortest side
                   suit; wins with the lowest card when last, else with a master or its
                   strongest card; ruffs and overruffs as low as will win; discards the
                   lowest card of its shortest side suit
Domino             plays the card that opens the way to its own cards (furthest run
                   first); with none, the card that frees fewest cards of the others
=================  =====================================================================

``heuristic-cautious`` is the same player with higher doubling margins
(``CAUTIOUS_DOUBLE_MARGIN``): it doubles and redoubles only when its hand models expect
a clear gain, where ``heuristic`` doubles whenever they expect any. Both take the
margins as parameters:
``heuristic:double_margin=4,redouble_margin=4``.

Cards played so far (public) tell which higher and lower cards are still out; the
numbers of cards each player holds size the chances. Deterministic: no randomness is
used (the seed is only kept), and nothing is kept between decisions. ``rules`` gives the
point values (default: standard; the rules themselves are in ``docs/rules.md``).

The rules are numba kernels (``_heuristic_kernels``, compiled on first use and cached on
disk), one section per decision; this module holds the tunables and the models' weights
they are given, and the agent. ``act`` asks the kernels for one observation,
``act_batch`` for a batch in one call; instances with equal rules decide alike, so the
batched play driver asks all of them at once (an equal ``batch_key``).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import numpy as np

from ..game.actions import NUM_ACTIONS
from ..game.engine import contract_total
from ..game.observation import OBS_DIM
from ..game.rules import Rules, load_rules
from .base import Agent
from .registry import register

# ---------------------------------------------------------------------------- tunables
# (module constants so that they can be tuned; the agent never changes them)

#: chance that a player void in the led suit drops a penalty card on the trick
DUMP_WILL = 0.7
#: weight of the future risk a card carries (relative to an immediate cost)
FUTURE_WEIGHT = 1.0
#: value (per penalty point) of handing a penalty card to another player
GIVE = 0.3
#: chance that a queen of the suit (No Queens) / K♥ (Barbu) falls under a higher card
QUEEN_FALL = 0.4
KING_FALL = 0.4
#: chance that a follower holding the suit's penalty card (queen, K♥, A♥) plays it
FOLLOW_FALL = 0.5
#: share of a penalty card another player may drop on a later trick of ours, by contract
#: (No Tricks, No Hearts, No Queens, Barbu)
FUTURE_DUMP = (0.0, 2.0, 0.3, 1.0)
#: protection each lower card of the same suit gives a high card, by negative contract
PROTECT = (0.85, 0.85, 0.7, 0.8, 0.85)
#: leading: preference for short suits (per card held in the suit)
LEAD_LENGTH = 0.3
#: No Last Two: tricks before this one (0-based) are played to shed high cards
NL2_SHED_UNTIL = 10
#: Domino: bonus per starting-rank card held when choosing the rank
DOMINO_RANK_BONUS = 1.0
#: Domino play: weights of the distance to the furthest own card a play leads to and of
#: the number of own cards it leads to
DOM_FAR = 4.0
DOM_COUNT = 2.0
#: Declaring: weight of the option of keeping a contract for a better later hand
OPTION_VALUE = 0.5
#: doubling margins: name a player when the expected difference exceeds this
DOUBLE_MARGIN = 0.0
REDOUBLE_MARGIN = 0.0
#: ``heuristic-cautious``'s margins: it doubles / redoubles only when the hand models expect
#: it to gain more than this (points of the hand); docs/agents.md has how 6 was chosen.
CAUTIOUS_DOUBLE_MARGIN = 6.0
CAUTIOUS_REDOUBLE_MARGIN = 6.0

# ---------------------------------------------------------------------------- hand models

# fmt: off
#: Linear weights of the expected-raw-score model per contract, one per hand feature
#: (``_heuristic_kernels.FEATURE_NAMES``): ridge regression on heuristic-vs-random play,
#: the heuristic declaring random contracts (``python -m experiments.fit_hand_values`` replays the fit).
WEIGHTS = (
    (  # no_tricks
        2.516, 0.011, -0.129, 0.085, -0.296, 0.116, -0.137, -0.038, 1.704, 1.060, 0.364, 0.115, -0.675, -0.679, 0.006,
        0.008, 0.054, -0.009, -0.277, -0.022, -0.028, 0.051, -0.278, -0.508, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_hearts
        2.199, -0.144, 0.209, 0.131, 0.598, 0.329, 0.043, -0.043, -0.371, -0.195, -0.172, 0.269, -0.499, -1.150,
        0.510, 0.104, -0.175, 0.116, -0.541, -0.317, 0.280, -0.005, 0.083, 0.425, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_queens
        1.014, -0.196, 0.161, 0.264, -1.052, 0.157, 0.062, -0.017, 0.730, 0.502, 0.225, -0.089, -0.314, -0.220,
        -0.079, 0.005, 0.278, -0.027, -0.798, 0.064, 0.007, 0.285, -0.986, -0.661, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_king_of_hearts
        1.363, 0.039, 0.136, 0.101, 0.120, 0.167, 0.086, -0.018, 0.050, -0.288, -0.086, 0.243, -0.165, -0.715, 0.463,
        -0.023, 1.134, -0.182, -2.644, -0.193, -0.092, 0.048, 0.180, 0.151, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_last_two
        3.206, -0.005, 0.387, 0.223, 0.489, 0.148, 0.032, -0.037, 0.311, 0.188, 0.113, -0.212, -0.080, -0.850, -0.016,
        -0.164, 0.556, -0.199, -0.621, 0.121, 0.125, -0.087, 0.004, 0.120, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # trumps
        -16.689, -0.409, 2.630, 1.831, 1.878, 0.836, 0.472, 0.102, 6.707, 4.873, 0.769, -0.627, -0.193, 1.963, 0.028,
        0.118, 0.920, -0.346, -0.680, 0.133, 0.006, -0.077, -0.297, -0.046, 4.638, 1.582, 1.033, 0.075, 0.189, 1.048,
        0.798, -3.219, 0.130, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # domino
        12.527, -2.730, -9.303, -7.336, -6.417, -3.715, -1.915, 0.039, -1.376, 1.006, 0.497, 0.216, 1.008, 9.077,
        -0.592, -0.451, -1.295, 0.622, -0.090, 0.894, 0.962, 0.134, 1.040, -0.658, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, -0.318, 0.896, -0.581, 0.384, 3.343
    ),
)
#: The same for (own raw score - declarer's raw score) when not declaring.
WEIGHTS_VS_DECLARER = (
    (  # no_tricks
        11.535, 0.000, -0.164, -0.011, -0.532, 0.110, -0.170, -0.012, 2.218, 1.273, 0.431, 0.244, -0.861, -0.827,
        0.058, -0.280, 0.369, -0.146, -0.264, 0.047, -0.003, 0.070, -0.390, -0.651, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_hearts
        15.528, 0.000, 0.153, 0.153, 1.188, 0.536, 0.194, -0.147, -1.174, -0.554, -0.556, 0.429, -0.541, -2.008,
        0.724, -0.144, -0.171, 0.040, -1.073, -0.175, 0.278, -0.028, 0.058, 0.757, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_queens
        7.857, 0.000, 0.207, 0.065, -1.405, 0.071, -0.103, 0.048, 0.456, 0.140, 0.024, -0.050, -0.399, 0.086, -0.079,
        -0.142, 0.414, 0.005, -1.137, 0.100, -0.092, 0.406, -1.213, -0.930, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_king_of_hearts
        10.554, 0.000, 0.577, 0.476, 0.773, 0.420, 0.308, -0.047, 0.679, -0.388, 0.018, 0.059, -0.136, -1.559, 0.963,
        -0.003, 1.765, -0.156, -3.830, -0.757, -0.303, -0.106, -0.063, 0.044, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # no_last_two
        16.544, 0.000, 0.240, -0.452, 2.413, 0.355, -0.311, -0.118, 2.947, 1.287, 0.667, -0.618, -0.071, -1.552,
        -0.104, -0.017, 1.028, -0.064, -1.231, -0.064, -0.021, -0.553, -0.882, 1.155, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # trumps
        -45.313, 0.000, 3.142, 2.173, 1.694, 0.827, 0.438, 0.337, 9.156, 6.433, 1.151, -1.309, -0.174, 3.067, 0.026,
        -0.051, 0.737, -0.242, -0.367, 0.172, 0.095, -0.001, 0.096, -0.039, 6.005, 1.582, 1.107, 0.005, 0.468, 1.560,
        1.066, -4.001, 0.348, 0.000, 0.000, 0.000, 0.000, 0.000
    ),
    (  # domino
        -8.087, 0.000, -12.826, -10.560, -9.101, -4.907, -2.046, -0.117, -2.796, 0.371, 0.625, 0.173, 0.805, 12.685,
        -0.688, -0.343, -0.113, 0.153, -2.512, 1.499, 1.239, 0.350, 1.318, -0.343, 0.000, 0.000, 0.000, 0.000, 0.000,
        0.000, 0.000, 0.000, 0.000, -0.427, 1.585, -0.577, 0.000, 0.000
    ),
)
# fmt: on
#: Average raw score of the heuristic as declarer per contract (for the declare choice).
AVERAGE = (-2.83, -2.19, -1.69, -0.99, -0.82, 27.52, 30.76)
#: Spread (standard deviation over random hands) of the declaring value (expected raw score less
#: ``AVERAGE``) per contract.
SPREAD = (1.92, 1.59, 1.26, 1.01, 0.56, 7.48, 7.77)
#: Expected maximum of n standard normal draws, n = 0 ... 6.
EXPECTED_MAX = (0.0, 0.0, 0.564, 0.846, 1.029, 1.163, 1.267)


# ---------------------------------------------------------------------------- the agent


@register("heuristic")
class HeuristicAgent(Agent):
    """A rule-based player for every decision of Barbu (see the module docstring).

    ``double_margin`` / ``redouble_margin``: the expected raw-score edge (in points of the
    hand, by the hand models) above which it doubles / redoubles a player; the defaults
    are the module's ``DOUBLE_MARGIN`` and ``REDOUBLE_MARGIN``.

    Deterministic, so instances with equal ``rules`` and margins (``batch_key``) decide
    alike: a group of them is asked through one ``act_batch`` call."""

    name = "heuristic"

    def __init__(
        self,
        seed: int = 0,
        rules: Rules | str | dict | None = None,
        double_margin: float = DOUBLE_MARGIN,
        redouble_margin: float = REDOUBLE_MARGIN,
    ):
        self.double_margin, self.redouble_margin = float(double_margin), float(redouble_margin)
        self.seed = seed
        self.rules = load_rules(rules)
        self.batch_key = (self.rules, self.double_margin, self.redouble_margin)
        self._params: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None  # kernel_params, on first use
        self._feat = np.empty(0)  # the kernels' scratch array (so an agent decides in one thread at a time)

    def _kernel_args(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self._params is None:
            self._params = kernel_params(self.rules, self.double_margin, self.redouble_margin)
            self._feat = np.empty(len(self._params[2][0, 0]))
        return self._params

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        obs = observation["observation"]
        mask = observation["action_mask"]
        # The environment's arrays go to the kernel as they are; anything else is converted.
        if not (
            obs.dtype in _OBS_DTYPES
            and mask.dtype in _MASK_DTYPES
            and obs.shape == _OBS_SHAPE
            and mask.shape == _MASK_SHAPE
            and obs.flags.c_contiguous
            and mask.flags.c_contiguous
        ):
            obs, mask = _row_arrays(obs, mask)
        ip, fp, weights = self._params if self._params is not None else self._kernel_args()
        return _kernels().heuristic_action(obs, mask, ip, fp, weights, self._feat)

    def act_batch(
        self, observations: np.ndarray, masks: np.ndarray, instances: Sequence[HeuristicAgent] | None = None
    ) -> np.ndarray:
        """``act`` for every row of ``observations`` float [N, OBS_DIM] with legal actions
        ``masks`` [N, 85] (bool or numbers, nonzero: legal), as int64 [N]; ``instances``
        (equal ``batch_key``: they decide alike) changes nothing."""
        HK = _kernels()
        obs = np.asarray(observations)
        if obs.dtype != np.float64:
            obs = obs.astype(np.float32, copy=False)
        obs = np.ascontiguousarray(obs)
        m = np.asarray(masks)
        m = np.ascontiguousarray(m.view(np.uint8) if m.dtype in (np.bool_, np.int8) else m.astype(np.uint8))
        if obs.ndim != 2 or obs.shape[1] != OBS_DIM or m.shape != (obs.shape[0], NUM_ACTIONS):
            raise ValueError(
                f"act_batch takes observations [N, {OBS_DIM}] and masks [N, {NUM_ACTIONS}], "
                f"not {obs.shape} and {m.shape}"
            )
        actions = np.empty(obs.shape[0], dtype=np.int64)
        ip, fp, weights = self._kernel_args()
        HK.heuristic_actions(obs, m, ip, fp, weights, self._feat, actions)
        return actions


_OBS_SHAPE, _MASK_SHAPE = (OBS_DIM,), (NUM_ACTIONS,)
_OBS_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_MASK_DTYPES = (np.dtype(np.int8), np.dtype(np.uint8))


def _row_arrays(obs, mask) -> tuple[np.ndarray, np.ndarray]:
    """One observation (float32, unless float64) and its mask (uint8, nonzero: legal) as
    contiguous arrays of the right length."""
    obs, mask = np.asarray(obs), np.asarray(mask)
    obs = np.ascontiguousarray(obs if obs.dtype in _OBS_DTYPES else obs.astype(np.float32))
    mask = np.ascontiguousarray(mask.view(np.uint8) if mask.dtype == np.bool_ else mask.astype(np.uint8))
    if obs.shape != _OBS_SHAPE or mask.shape != _MASK_SHAPE:
        raise ValueError(
            f"act takes an observation [{OBS_DIM}] and a mask [{NUM_ACTIONS}], not {obs.shape} and {mask.shape}"
        )
    return obs, mask


@functools.cache
def _kernels():
    """The kernel module, imported (its disk cache checked on import) on first use:
    importing this module costs no numba."""
    from . import _heuristic_kernels

    return _heuristic_kernels


def kernel_params(
    rules: Rules, double_margin: float = DOUBLE_MARGIN, redouble_margin: float = REDOUBLE_MARGIN
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """What the kernels are given: the point values of ``rules`` as positive penalties
    (int64, indices ``P_*``), the tunables (the doubling margins as given) and declaring
    constants (float64, ``T_*``) and the two models' weights (float64 [2, 7, NUM_FEATURES])."""
    HK = _kernels()
    ip = np.zeros(HK.NUM_INT_PARAMS, dtype=np.int64)
    ip[HK.P_TRICK] = -rules.no_tricks_points
    ip[HK.P_HEART] = -rules.no_hearts_points
    ip[HK.P_ACE_HEART] = -rules.no_hearts_ace_points
    ip[HK.P_QUEEN] = -rules.no_queens_points
    ip[HK.P_KING] = -rules.barbu_points
    ip[HK.P_LAST_TWO : HK.P_LAST_TWO + 2] = [-p for p in rules.no_last_two_points]
    ip[HK.P_TOTAL : HK.P_TOTAL + HK.NUM_CONTRACTS] = [contract_total(rules, c) for c in range(HK.NUM_CONTRACTS)]
    ip[HK.P_SHED_UNTIL] = NL2_SHED_UNTIL
    fp = np.zeros(HK.NUM_FLOAT_PARAMS, dtype=np.float64)
    fp[HK.T_DUMP_WILL] = DUMP_WILL
    fp[HK.T_FUTURE_WEIGHT] = FUTURE_WEIGHT
    fp[HK.T_GIVE] = GIVE
    fp[HK.T_QUEEN_FALL] = QUEEN_FALL
    fp[HK.T_KING_FALL] = KING_FALL
    fp[HK.T_FOLLOW_FALL] = FOLLOW_FALL
    fp[HK.T_FUTURE_DUMP : HK.T_FUTURE_DUMP + 4] = FUTURE_DUMP
    fp[HK.T_PROTECT : HK.T_PROTECT + 5] = PROTECT
    fp[HK.T_LEAD_LENGTH] = LEAD_LENGTH
    fp[HK.T_RANK_BONUS] = DOMINO_RANK_BONUS
    fp[HK.T_DOM_FAR] = DOM_FAR
    fp[HK.T_DOM_COUNT] = DOM_COUNT
    fp[HK.T_OPTION_VALUE] = OPTION_VALUE
    fp[HK.T_DOUBLE_MARGIN] = double_margin
    fp[HK.T_REDOUBLE_MARGIN] = redouble_margin
    fp[HK.T_AVERAGE : HK.T_AVERAGE + 7] = AVERAGE
    fp[HK.T_SPREAD : HK.T_SPREAD + 7] = SPREAD
    fp[HK.T_EXPECTED_MAX : HK.T_EXPECTED_MAX + 7] = EXPECTED_MAX
    return ip, fp, np.array((WEIGHTS, WEIGHTS_VS_DECLARER), dtype=np.float64)


@register("heuristic-cautious")
def make_cautious_heuristic(
    seed: int = 0,
    rules: Rules | str | dict | None = None,
    double_margin: float = CAUTIOUS_DOUBLE_MARGIN,
    redouble_margin: float = CAUTIOUS_REDOUBLE_MARGIN,
) -> HeuristicAgent:
    agent = HeuristicAgent(seed=seed, rules=rules, double_margin=double_margin, redouble_margin=redouble_margin)
    agent.name = "heuristic-cautious"
    return agent
