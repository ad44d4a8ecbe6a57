"""``experiments/hands_head_learnability.py`` compares a supervised hands head with what
counting alone knows and with the belief network, on held-out positions."""

import json
import math

import pytest

from experiments import hands_head_learnability


@pytest.mark.slow  # trains a head; the experiment is not part of the package
def test_a_small_run_prints_every_log_loss_on_held_out_positions(capsys):
    got = hands_head_learnability.main(["--games", "2", "--epochs", "1", "--record", "0.05", "--seed", "3"])
    assert json.loads(capsys.readouterr().out) == got
    assert min(got["positions"]) > 0
    losses = ("uniform", "belief", "head", "head_frozen", "head_on_uniform")
    assert all(math.isfinite(got[k]) and got[k] > 0 for k in losses)
    # counting (voids, hand sizes, cards played) knows more than nothing, and the belief network more still
    assert got["belief"] < got["uniform"] < got["ln3"] == math.log(3)
    # a head added to the uniform marginals starts from them: one epoch leaves it near them
    assert abs(got["head_on_uniform"] - got["uniform"]) < 0.05
    assert all(0 <= got[f"{k}_accuracy"] <= 1 for k in ("head", "head_frozen", "head_on_uniform"))
