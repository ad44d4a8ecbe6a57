"""Where the hidden cards are: per-card probabilities of each seat holding each unseen card,
and whole deals drawn in proportion to them, from one seat's observation.

Nothing public says more than ``barbu_env.game.worlds`` uses: the observer's hand, the
cards played, each seat's number of cards and the cards a seat is known not to hold (the
observation's ``excluded`` rows). Given those alone every consistent deal is equally likely
(``worlds.sample_worlds``). How the others have *played* their cards says more, through
their policies; a trained network (``barbu_models.belief``, shipped as
``barbu_env/agents/pretrained/belief.pt``, its model card ``belief.md`` beside it) reads the
observation and guesses, for each card, which of the three other seats holds it
(``docs/belief.md`` has its training and calibration).

The network's guesses are not consistent by themselves; the exact constraints are applied after it, here,
without torch (docs/belief.md, "The constraints, exactly"): a card's allowed seats are the cells of nonzero uniform
marginal (a position with no consistent deal raises ``ValueError``); the logits, clipped to ``CLIP`` nats (a model
whose output is not finite is refused), correct the logarithms of those marginals, and Sinkhorn's fitting reaches
``TOLERANCE`` within ``MAX_SINKHORN`` passes or is retried on a mix with the uniform marginals (``MIXES``).

An ``observation`` is the float vector [1132] or what an environment gives an agent
(``env.last()``'s dict: its ``"observation"`` is read); a ``seat`` is 0-3 or the agent's
name (``"player_2"``, ``env.agent_selection``).

``probabilities(observation, model=None, seat=0)``: float64 [52, 4] by **absolute** seat, the
observer at ``seat`` (an observation is relative to its observer and does not say where
the observer sits: ``seat`` does, as in ``Positions.from_observation``; 0 makes absolute
and relative seats the same). Row c: the observer's own card 1 at ``seat``; a card played
all zeros; an unseen card sums to 1 over the three other seats, 0 at the observer and where
it is not allowed; each other seat's column sums to its number of cards. ``model``: None
or ``"belief"`` (the shipped network, loaded once), ``"uniform"`` (no network: the exact uniform marginals
of ``worlds.sample_worlds``' distribution), a path to a checkpoint of
``python -m barbu_training.belief``, or a loaded model (anything with ``logits(obs)``: float
[n, 1132] -> [n, 52, 3] over relative seats 1, 2, 3, the correction above).

``sample_deals(observation, n, rng, model=None, seat=0)``: uint64 [n, 4], n whole deals of
the current hands by absolute seat (card sets), the observer's own hand included, each
consistent with the observation; ``sample_hidden(...)``: the same deals as uint64 [n, 3],
the hands of relative seats 1, 2, 3, exactly what ``worlds.sample_worlds`` returns (a
search such as ``barbu_env.agents.pimc`` can use either).

Sampling method (a dynamic program over the unseen cards and the rooms left, exact, no rejection):
docs/belief.md, "Deals". For a model the weights start at its probabilities ``p`` and take ``FIT_PASSES``
passes of ``w <- w * (p / marginal(w)) ** step``, a pass kept only if it shrinks ``sum |marginal - p|`` (else
the step is halved; a kept one doubles it, up to 1): the fit never ends worse than where it started.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..game._bits import kernel
from ..game.cards import NUM_CARDS
from ..game.constants import AGENTS, NUM_PLAYERS
from ..game.observation import NUM_CARD_ROWS, OBS_DIM, OFFSETS, card_sets
from ..util.extras import require

#: The other seats, relative seats 1, 2, 3.
NUM_OTHERS = NUM_PLAYERS - 1
#: The most cards a hand holds.
MAX_HAND = 13
#: Largest row or column error at which Sinkhorn's fit stops.
TOLERANCE = 1e-9
#: Sinkhorn passes at most before the model's probabilities are mixed with the uniform marginals.
MAX_SINKHORN = 10_000
#: The shares of the uniform marginals mixed in, in turn, until the fit converges.
MIXES = (0.0, 0.01, 0.1, 0.5, 1.0)
#: Passes of iterative proportional fitting of the sampler's weights to the model's marginals.
FIT_PASSES = 10
#: The shipped network (``docs/belief.md``) and its model card ``belief.md``.
SHIPPED_MODEL = Path(__file__).parent / "pretrained" / "belief.pt"
#: ``model="uniform"``: no network, the exact uniform marginals.
UNIFORM = "uniform"
#: ``model="belief"``: the shipped network, by name (as ``pimc:worlds_from=belief``).
SHIPPED = "belief"
#: The network's correction is clipped to this many nats either way: a cell's odds move at
#: most ``exp(2 * CLIP)`` from the uniform marginals' (the shipped network stays within 5), so
#: that the fit converges whatever a model outputs.
CLIP = 10.0

_HAND_ROW = OFFSETS["hand"][0] // NUM_CARDS
_PLAYED_ROW = OFFSETS["played"][0] // NUM_CARDS
_EXCL_ROW = OFFSETS["excluded"][0] // NUM_CARDS
_LEFT = OFFSETS["cards_left"][0]


# ---------------------------------------------------------------------- the weighted dynamic program


@kernel
def _backward(w, sizes, table):
    """``table[j, a, b]`` = B[j][a, b] of the module docstring for the weights ``w`` [m, 3]
    (each level scaled by its largest entry); ``table`` is [m + 1, 14, 14], zeroed."""
    m = w.shape[0]
    table[m, 0, 0] = 1.0
    for j in range(m - 1, -1, -1):
        r = m - j  # cards j .. m-1
        top = 0.0
        for a in range(min(MAX_HAND, r, sizes[0]) + 1):
            for b in range(min(MAX_HAND, r - a, sizes[1]) + 1):
                c = r - a - b
                if c > MAX_HAND or c > sizes[2]:
                    continue
                v = 0.0
                if a > 0:
                    v += w[j, 0] * table[j + 1, a - 1, b]
                if b > 0:
                    v += w[j, 1] * table[j + 1, a, b - 1]
                if c > 0:
                    v += w[j, 2] * table[j + 1, a, b]
                table[j, a, b] = v
                if v > top:
                    top = v
        if top > 0.0:
            for a in range(MAX_HAND + 1):
                for b in range(MAX_HAND + 1):
                    table[j, a, b] /= top


@kernel
def _marginals(w, sizes, table, forward, out):
    """``out[j, k]``: the probability that card j goes to seat k + 1 under the weights ``w``,
    given the filled backward ``table``; ``forward`` [m + 1, 14, 14] scratch (zeroed).
    Returns False if no deal has a positive weight."""
    m = w.shape[0]
    if table[0, sizes[0], sizes[1]] <= 0.0:
        return False
    forward[0, 0, 0] = 1.0
    for j in range(m):
        # card j's marginal from the deals of cards before it (forward) and after it (backward)
        s0 = 0.0
        s1 = 0.0
        s2 = 0.0
        for a in range(min(j, sizes[0]) + 1):
            for b in range(min(j - a, sizes[1]) + 1):
                f = forward[j, a, b]
                if f == 0.0:
                    continue
                ra = sizes[0] - a
                rb = sizes[1] - b
                rc = sizes[2] - (j - a - b)
                if rc < 0:
                    continue
                if ra > 0:
                    s0 += f * table[j + 1, ra - 1, rb]
                if rb > 0:
                    s1 += f * table[j + 1, ra, rb - 1]
                if rc > 0:
                    s2 += f * table[j + 1, ra, rb]
        s0 *= w[j, 0]
        s1 *= w[j, 1]
        s2 *= w[j, 2]
        total = s0 + s1 + s2
        if total <= 0.0:
            return False
        out[j, 0] = s0 / total
        out[j, 1] = s1 / total
        out[j, 2] = s2 / total
        # the forward table one card on, scaled by its largest entry
        top = 0.0
        for a in range(min(j + 1, sizes[0]) + 1):
            for b in range(min(j + 1 - a, sizes[1]) + 1):
                c = j + 1 - a - b
                if c > sizes[2]:
                    continue
                v = 0.0
                if a > 0:
                    v += w[j, 0] * forward[j, a - 1, b]
                if b > 0:
                    v += w[j, 1] * forward[j, a, b - 1]
                if c > 0:
                    v += w[j, 2] * forward[j, a, b]
                forward[j + 1, a, b] = v
                if v > top:
                    top = v
        if top > 0.0:
            for a in range(MAX_HAND + 1):
                for b in range(MAX_HAND + 1):
                    forward[j + 1, a, b] /= top
    return True


@kernel
def _sample(w, sizes, table, cards, uniforms, out):
    """Fill ``out`` [n, 3] (zeroed) with deals drawn in proportion to the weights ``w``, given
    the filled backward ``table``: card j (``cards[j]``, a card id) with the draw
    ``uniforms[i, j]`` in [0, 1) for deal i."""
    m = w.shape[0]
    one = np.uint64(1)
    for i in range(out.shape[0]):
        a = sizes[0]
        b = sizes[1]
        c = sizes[2]
        for j in range(m):
            p0 = w[j, 0] * table[j + 1, a - 1, b] if a > 0 else 0.0
            p1 = w[j, 1] * table[j + 1, a, b - 1] if b > 0 else 0.0
            p2 = w[j, 2] * table[j + 1, a, b] if c > 0 else 0.0
            u = uniforms[i, j] * (p0 + p1 + p2)
            bit = one << np.uint64(cards[j])
            if u < p0:
                out[i, 0] |= bit
                a -= 1
            elif u < p0 + p1 or p2 == 0.0:
                out[i, 1] |= bit
                b -= 1
            else:
                out[i, 2] |= bit
                c -= 1


@kernel
def _sinkhorn(p, sizes, tol, max_passes):
    """Scale the rows of ``p`` [m, 3] (in place) to sum to 1 and its columns to ``sizes``, in
    turn, until both hold to ``tol``; the passes taken, or -1 if ``max_passes`` did not do."""
    m = p.shape[0]
    for it in range(max_passes):
        for k in range(3):
            s = 0.0
            for j in range(m):
                s += p[j, k]
            if s > 0.0:
                f = sizes[k] / s
                for j in range(m):
                    p[j, k] *= f
        worst = 0.0
        for j in range(m):
            s = p[j, 0] + p[j, 1] + p[j, 2]
            if abs(s - 1.0) > worst:
                worst = abs(s - 1.0)
            if s > 0.0:
                p[j, 0] /= s
                p[j, 1] /= s
                p[j, 2] /= s
        for k in range(3):
            s = 0.0
            for j in range(m):
                s += p[j, k]
            if abs(s - sizes[k]) > worst:
                worst = abs(s - sizes[k])
        if worst <= tol:
            return it + 1
    return -1


# ---------------------------------------------------------------------- one observation


class _Hidden:
    """What an observation shows of the hidden cards: ``cards`` the unseen card ids
    (ascending), ``sizes`` int64 [3] the cards of relative seats 1, 2, 3, ``allowed`` bool
    [m, 3] (not excluded), ``hand`` the observer's cards (a set)."""

    def __init__(self, observation: np.ndarray | Mapping[str, np.ndarray]):
        obs = np.asarray(_vector(observation), dtype=np.float32).reshape(OBS_DIM)
        rows = card_sets(obs[: NUM_CARD_ROWS * NUM_CARDS].reshape(NUM_CARD_ROWS, NUM_CARDS)).tolist()
        self.hand = rows[_HAND_ROW]
        seen = self.hand
        for r in range(NUM_PLAYERS):
            seen |= rows[_PLAYED_ROW + r]
        self.cards = np.array([c for c in range(NUM_CARDS) if not seen >> c & 1], dtype=np.int64)
        left = np.round(obs[_LEFT : _LEFT + NUM_PLAYERS].astype(np.float64) * MAX_HAND).astype(np.int64)
        self.sizes = left[1:].copy()
        # the kernels' tables hold at most MAX_HAND cards a seat: a position that does not add up is refused
        if (self.sizes < 0).any() or (self.sizes > MAX_HAND).any() or self.sizes.sum() != len(self.cards):
            raise ValueError(
                f"inconsistent observation: the other seats hold {self.sizes.tolist()} cards, "
                f"but {len(self.cards)} cards are unseen"
            )
        self.allowed = np.array(
            [[not rows[_EXCL_ROW + r] >> int(c) & 1 for r in range(1, NUM_PLAYERS)] for c in self.cards], dtype=bool
        ).reshape(-1, NUM_OTHERS)
        self.obs = obs

    def tables(self, w: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
        """(backward table, exact marginals [m, 3]) of the weights ``w``; marginals None if
        no deal has a positive weight."""
        m = len(self.cards)
        table = np.zeros((m + 1, MAX_HAND + 1, MAX_HAND + 1))
        _backward(w, self.sizes, table)
        out = np.zeros((m, NUM_OTHERS))
        forward = np.zeros((m + 1, MAX_HAND + 1, MAX_HAND + 1))
        return table, (out if _marginals(w, self.sizes, table, forward, out) else None)

    def uniform(self) -> np.ndarray:
        """The exact uniform marginals [m, 3]; ValueError if no deal is consistent."""
        _, marginals = self.tables(self.allowed.astype(np.float64))
        if marginals is None:
            raise ValueError(
                f"inconsistent observation: the {len(self.cards)} unseen cards cannot be dealt "
                f"{self.sizes.tolist()} to the other seats without giving a seat a card it is known not to hold"
            )
        return marginals

    def fitted(self, model: Any, logits: np.ndarray | None = None) -> np.ndarray:
        """The model's probabilities [m, 3] under the exact constraints (module docstring);
        ``logits``: the model's output [52, 3] for this observation when already computed."""
        uniform = self.uniform()
        if _is_uniform(model):
            return uniform
        support = uniform > 0
        # the network's correction to the uniform marginals' logarithms (module docstring)
        if logits is None:
            logits = _logits(model, self.obs[None])[0]
        logits = np.clip(np.asarray(logits, dtype=np.float64)[self.cards], -CLIP, CLIP)  # [m, 3]
        logits = np.where(support, logits + np.log(np.where(support, uniform, 1.0)), -np.inf)
        p = np.exp(logits - logits.max(axis=1, keepdims=True))
        p /= p.sum(axis=1, keepdims=True)
        p = np.where(support, np.maximum(p, 1e-300), 0.0)  # a cell the network rules out stays possible
        for mix in MIXES:  # the uniform marginals meet the sums exactly: mixing them in converges
            q = p if mix == 0 else (1 - mix) * p + mix * uniform
            if _sinkhorn(q, self.sizes.astype(np.float64), TOLERANCE, MAX_SINKHORN) >= 0:
                return q
        raise AssertionError("the uniform marginals meet every constraint")  # never: MIXES ends at 1

    def weights(
        self, model: Any, passes: int = FIT_PASSES, logits: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(sampling weights [m, 3], backward table): ``w = 1`` on the allowed cells for the
        uniform model, else fitted to the model's probabilities (module docstring)."""
        if _is_uniform(model):
            w = self.allowed.astype(np.float64)
            table, marginals = self.tables(w)
            if marginals is None:
                self.uniform()  # raises
            return w, table
        p = self.fitted(model, logits)
        w = p.copy()
        table, marginals = self.tables(w)
        gap, step = np.abs(marginals - p).sum(), 1.0
        for _ in range(passes):
            # a step of w <- w * (p / marginal) ** step, kept only if the gap shrinks
            ratio = np.where(p > 0, p / np.where(marginals > 0, marginals, 1.0), 1.0)
            trial = w * ratio**step
            trial /= trial.max(axis=1, keepdims=True)
            trial_table, trial_marginals = self.tables(trial)
            trial_gap = np.inf if trial_marginals is None else np.abs(trial_marginals - p).sum()
            if trial_gap < gap:
                w, table, marginals, gap, step = trial, trial_table, trial_marginals, trial_gap, min(1.0, 2 * step)
            else:
                step /= 2
        return w, table


# ---------------------------------------------------------------------- the model

_CACHE: dict[str, Any] = {}


def model_path(name: str | Path | None) -> Path:
    """The file a belief network's name stands for: ``"belief"`` (or None) the shipped one,
    anything else that path."""
    return Path(SHIPPED_MODEL if name is None or name == SHIPPED else name)


def load_model(path: str | Path | None = None) -> Any:
    """The belief network in ``path`` (a checkpoint of ``python -m barbu_training.belief``;
    None: the shipped one), loaded once per path and kept; it needs torch (the ``train``
    extra: without it, a one-line ``MissingExtraError``). A file that is not a belief
    checkpoint is refused in one line (``barbu_models.belief.BeliefModel.load``: ``weights_only``)."""
    path = model_path(path).resolve()
    key = str(path)
    if key not in _CACHE:
        require("torch", "train", "the belief network")
        _CACHE[key] = _load(path)
    return _CACHE[key]


def _load(path: Path) -> Any:
    from barbu_models.belief import load_for_inference  # torch: only when a network is asked for

    return load_for_inference(path)


def _is_uniform(model: Any) -> bool:
    return isinstance(model, str) and model == UNIFORM


def _model(model: Any) -> Any:
    """``model`` as ``_Hidden`` takes it: a loaded network, or ``UNIFORM``."""
    if _is_uniform(model):
        return model
    if model is None or isinstance(model, (str, Path)):
        return load_model(model)
    return model


def _logits(model: Any, obs: np.ndarray) -> np.ndarray:
    """The model's output for observations [k, 1132]: float [k, 52, 3], finite."""
    out = np.asarray(model.logits(obs), dtype=np.float64).reshape(len(obs), NUM_CARDS, NUM_OTHERS)
    if not np.isfinite(out).all():
        raise ValueError(f"the belief model {model!r} gave logits that are not finite (NaN or infinity)")
    return out


def _vector(observation: Any) -> Any:
    """The observation vector of an environment's dict (``env.last()``'s), or ``observation`` itself."""
    return observation["observation"] if isinstance(observation, Mapping) else observation


def _absolute(rel: np.ndarray, seat: int | str) -> np.ndarray:
    """Columns of relative seats 0-3 reordered by absolute seat (``seat``: 0-3 or an agent name)."""
    if isinstance(seat, str):
        if seat not in AGENTS:
            raise ValueError(f"seat {seat!r} is neither 0-3 nor an agent name ({', '.join(AGENTS)})")
        seat = AGENTS.index(seat)
    return rel[:, [(p - seat) % NUM_PLAYERS for p in range(NUM_PLAYERS)]]


def probabilities(
    observation: np.ndarray | Mapping[str, np.ndarray], model: Any = None, seat: int | str = 0
) -> np.ndarray:
    """Float64 [52, 4]: the probability that each card is in each seat's hand now, by
    absolute seat, the observer at ``seat`` (module docstring). ValueError if no deal is
    consistent with ``observation``."""
    h = _Hidden(observation)
    rel = np.zeros((NUM_CARDS, NUM_PLAYERS))
    rel[[c for c in range(NUM_CARDS) if h.hand >> c & 1], 0] = 1.0
    rel[h.cards, 1:] = h.fitted(_model(model))
    return _absolute(rel, seat)


def sample_hidden(
    observation: np.ndarray, n: int, rng: np.random.Generator, model: Any = None, passes: int = FIT_PASSES
) -> np.ndarray:
    """``n`` independent draws of the other three hands, in proportion to the model (module
    docstring): uint64 [n, 3], the hands of relative seats 1, 2, 3 (``worlds.sample_worlds``'
    format). ``passes``: of fitting the weights to the model's probabilities. Deterministic
    for the state of ``rng``. ValueError if no deal is consistent."""
    return _draw(_Hidden(observation), n, rng, model, passes)


def _draw(h: _Hidden, n: int, rng: np.random.Generator, model: Any, passes: int) -> np.ndarray:
    return Sampler._of(h, _model(model), passes).draw(n, rng)


class Sampler:
    """Deals of one observation's hidden cards, drawn as ``sample_hidden`` draws them, the
    weights fitted once: ``Sampler(observation, model=None, passes=FIT_PASSES)``, then
    ``draw(n, rng)`` (uint64 [n, 3], relative seats 1, 2, 3) any number of times (a search
    that samples its worlds in rounds). ``samplers`` makes many, the network asked once."""

    def __init__(self, observation: np.ndarray, model: Any = None, passes: int = FIT_PASSES):
        self._set(_Hidden(observation), _model(model), passes, None)

    @classmethod
    def _of(cls, hidden: _Hidden, model: Any, passes: int, logits: np.ndarray | None = None) -> Sampler:
        sampler = cls.__new__(cls)
        sampler._set(hidden, model, passes, logits)
        return sampler

    def _set(self, hidden: _Hidden, model: Any, passes: int, logits: np.ndarray | None) -> None:
        self._h = hidden
        self._w, self._table = hidden.weights(model, passes, logits)

    def draw(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` deals (uint64 [n, 3]); deterministic for the state of ``rng``."""
        uniforms = rng.random((n, len(self._h.cards)))
        out = np.zeros((n, NUM_OTHERS), dtype=np.uint64)
        _sample(self._w, self._h.sizes, self._table, self._h.cards, uniforms, out)
        return out


def samplers(observations: np.ndarray, model: Any = None, passes: int = FIT_PASSES) -> list[Sampler]:
    """One ``Sampler`` per observation (float [k, 1132]), the network asked once for all of
    them. ValueError if an observation has no consistent deal."""
    if not isinstance(observations, np.ndarray):  # a list of env.last() dicts: their vectors
        observations = [_vector(o) for o in observations]
    observations = np.asarray(observations, dtype=np.float32).reshape(-1, OBS_DIM)
    if not len(observations):
        return []
    model = _model(model)
    hidden = [_Hidden(obs) for obs in observations]
    logits = [None] * len(hidden) if _is_uniform(model) else _logits(model, observations)
    return [Sampler._of(h, model, passes, row) for h, row in zip(hidden, logits)]


def sample_deals(
    observation: np.ndarray | Mapping[str, np.ndarray],
    n: int,
    rng: np.random.Generator,
    model: Any = None,
    seat: int | str = 0,
) -> np.ndarray:
    """``n`` whole deals of the current hands consistent with ``observation``, drawn as
    ``sample_hidden`` draws: uint64 [n, 4] card sets by absolute seat, the observer (at
    ``seat``) holding its own hand in every deal."""
    h = _Hidden(observation)
    hidden = _draw(h, n, rng, model, FIT_PASSES)
    rel = np.concatenate([np.full((len(hidden), 1), h.hand, dtype=np.uint64), hidden], axis=1)
    return _absolute(rel, seat)


def sampler_marginals(observation: np.ndarray, model: Any = None, passes: int = FIT_PASSES) -> np.ndarray:
    """The exact per-card marginals [52, 3] (relative seats 1, 2, 3; zero rows for the cards
    not unseen) of the deals ``sample_hidden`` draws with ``passes`` passes of fitting: the
    model's ``probabilities`` up to the fit's remaining gap (``docs/belief.md`` measures it)."""
    h = _Hidden(observation)
    w, _ = h.weights(_model(model), passes)
    out = np.zeros((NUM_CARDS, NUM_OTHERS))
    out[h.cards] = h.tables(w)[1]
    return out


def exact_marginals(observation: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The exact per-card marginals [52, 3] (relative seats 1, 2, 3; zero rows for the cards
    not unseen) of the distribution over consistent deals proportional to ``prod_c
    weights[c, owner(c)]`` (``weights`` [52, 3] by relative seat 1, 2, 3, nonnegative;
    excluded cells count as 0). ValueError if no deal has a positive weight."""
    h = _Hidden(observation)
    w = np.where(h.allowed, np.asarray(weights, dtype=np.float64)[h.cards], 0.0)
    # Scaling a seat's column or a card's row changes no deal's share: both are scaled to a
    # largest entry of 1 first, so that the tables neither overflow nor underflow.
    for axis in (0, 1):
        top = w.max(axis=axis, keepdims=True)
        w = w / np.where(top > 0, top, 1.0)
    _, marginals = h.tables(w)
    if marginals is None:
        raise ValueError("no consistent deal has a positive weight")
    out = np.zeros((NUM_CARDS, NUM_OTHERS))
    out[h.cards] = marginals
    return out


__all__ = [
    "CLIP",
    "FIT_PASSES",
    "SHIPPED",
    "SHIPPED_MODEL",
    "model_path",
    "Sampler",
    "TOLERANCE",
    "UNIFORM",
    "exact_marginals",
    "load_model",
    "probabilities",
    "sample_deals",
    "sample_hidden",
    "sampler_marginals",
    "samplers",
]
