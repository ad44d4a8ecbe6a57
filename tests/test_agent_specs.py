"""A checkpoint's path may hold commas, colons and ``=`` (a Ray Tune trial's folder, a
Windows drive, a sweep's ``lr=3e-4,seed=1``) and still be named in an agent list and take
parameters; a spec no file could have (too long a name) is refused in words, not with an
``OSError``."""

from __future__ import annotations

import shutil

import pytest

from barbu_env.agents import make_agent, parse_agent_spec, split_agent_specs
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.agents.registry import spec_without
from barbu_env.cli.main import main


@pytest.fixture
def odd_paths(tmp_path):
    """The shipped ``ppo`` copied under folders named with a comma, a colon and ``=``."""
    made = []
    for folder in ("PPO_Barbu_0_lr=3e-4,seed=1", "a,b", "x:y,z"):
        (tmp_path / folder).mkdir()
        target = tmp_path / folder / "best.pt"
        shutil.copy(checkpoint_path("ppo"), target)
        made.append(str(target))
    return made


def test_paths_with_commas_and_colons_are_one_agent_each_and_take_parameters(odd_paths):
    tune, comma, colon = odd_paths
    listing = f"{tune},{comma}:deterministic=false,random,{colon}:device=cpu,deterministic=false"
    assert split_agent_specs(listing) == [
        tune,
        f"{comma}:deterministic=false",
        "random",
        f"{colon}:device=cpu,deterministic=false",
    ]
    assert parse_agent_spec(f"{colon}:device=cpu,deterministic=false") == (
        colon,
        {"device": "cpu", "deterministic": False},
    )
    assert parse_agent_spec(colon) == (colon, {})
    assert spec_without(f"{colon}:trust=true,device=cpu", "trust") == f"{colon}:device=cpu"
    agent = make_agent(f"{colon}:deterministic=false")
    assert agent.deterministic is False and agent.name == "best"


def test_barbu_eval_plays_checkpoints_whose_paths_hold_commas_and_colons(odd_paths, capsys):
    tune, comma, colon = odd_paths
    agents = f"{tune},{comma}:deterministic=false,{colon},random"
    assert main(["eval", "--agents", agents, "--games", "4", "--workers", "1", "--no-progress"]) == 0
    assert "random" in capsys.readouterr().out


def test_a_spec_too_long_to_be_a_file_is_an_unknown_agent_not_an_oserror():
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("a" * 5000 + ":worlds=3")
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("b" * 5000)
