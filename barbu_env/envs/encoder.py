"""``ObservationEncoder``: one game's observations behind the interface of the Python
encoder that came before the kernels, for the callers written against it.

``observe(state, seat)`` is ``state.observe(seat)`` (written by the kernels,
``barbu_env.game.observation`` is the layout); ``privileged`` appends the other three hands
of the state last observed (``observation.PRIVILEGED_DIM`` values); ``state_vector(state)``
is ``state.state_vector()``.
"""

from __future__ import annotations

import numpy as np

from ..game.engine import BarbuState


class ObservationEncoder:
    """Observations of one game, for callers of the interface the Python encoder had:
    ``observe(state, seat)`` is ``state.observe(seat)``, written by the kernels;
    ``privileged`` appends the other hands of the state last observed."""

    def __init__(self) -> None:
        self._state: BarbuState | None = None

    def reset(self) -> None:
        """Forget the state last observed."""
        self._state = None

    def observe(self, state: BarbuState, seat: int) -> np.ndarray:
        """The observation of ``seat`` as a new float32 array."""
        self._state = state
        return state.observe(seat)

    def privileged(self, obs: np.ndarray, seat: int) -> np.ndarray:
        """``seat``'s observation ``obs`` (just built by ``observe``) followed by the other
        three players' hands, relative seats 1, 2, 3: ``PRIVILEGED_DIM`` values."""
        rows = self._state.hand_rows()[[(seat + k) & 3 for k in (1, 2, 3)]]
        return np.concatenate([obs, rows.reshape(-1)])

    def state_vector(self, state: BarbuState) -> np.ndarray:
        """The global state: all hands (absolute seats), then seat 0's observation less its hand."""
        self._state = state
        return state.state_vector()


__all__ = ["ObservationEncoder"]
