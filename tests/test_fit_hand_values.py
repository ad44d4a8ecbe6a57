"""``experiments/fit_hand_values.py`` replays the fit of the heuristic's hand-value tables:
a small run prints every table in the form ``heuristic.py`` stores it."""

import ast

import numpy as np
import pytest

from barbu_env.agents import _heuristic_kernels as HK
from barbu_env.agents import heuristic as H
from experiments import fit_hand_values


def test_a_small_refit_prints_every_table_as_stored(capsys):
    assert fit_hand_values.main(["--games", "8", "--spread-hands", "50"]) == 0
    printed = capsys.readouterr().out
    # the printed tables are Python assignments of literals, as heuristic.py holds them
    tables = {node.targets[0].id: ast.literal_eval(node.value) for node in ast.parse(printed).body}
    for name in ("WEIGHTS", "WEIGHTS_VS_DECLARER"):
        assert np.shape(tables[name]) == (HK.NUM_CONTRACTS, HK.NUM_FEATURES)
        assert np.shape(getattr(H, name)) == (HK.NUM_CONTRACTS, HK.NUM_FEATURES)
    assert all(w == 0.0 for w in np.array(tables["WEIGHTS_VS_DECLARER"])[:, HK.F_DECLARER])  # a constant 0 feature
    for name in ("AVERAGE", "SPREAD", "EXPECTED_MAX"):
        assert len(tables[name]) == HK.NUM_CONTRACTS
    assert tables["EXPECTED_MAX"] == pytest.approx(H.EXPECTED_MAX, abs=5e-4)


def test_ridge_recovers_a_linear_model_and_leaves_the_intercept_free():
    rng = np.random.default_rng(0)
    x = np.column_stack([np.ones(500), rng.normal(size=(500, 3))])
    y = x @ np.array([40.0, 1.0, -2.0, 0.5])
    assert fit_hand_values.ridge(x, y, 1e-6) == pytest.approx([40.0, 1.0, -2.0, 0.5], abs=1e-4)
    assert fit_hand_values.ridge(x, y, 50.0)[0] == pytest.approx(40.0, abs=0.5)  # only the slopes shrink
