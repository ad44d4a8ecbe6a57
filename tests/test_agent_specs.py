"""A checkpoint's path may hold commas, colons and ``=`` (a Ray Tune trial's folder, a
Windows drive, a sweep's ``lr=3e-4,seed=1``) and still be named in an agent list and take
parameters; a spec no file could have (too long a name) is refused in words, not with an
``OSError``."""

from __future__ import annotations

import shutil
from pathlib import Path

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


def test_a_path_that_looks_like_a_parameter_or_is_a_parameters_value_is_kept_whole(odd_paths, monkeypatch):
    tune, comma, colon = odd_paths
    monkeypatch.chdir(Path(tune).parent.parent)  # relative paths: the Tune folder starts with "PPO_Barbu_0_lr="
    tune, comma, colon = (str(Path(p).relative_to(Path.cwd())) for p in odd_paths)
    assert split_agent_specs(f"random,{tune},random,{tune}:device=cpu") == [
        "random",
        tune,
        "random",
        f"{tune}:device=cpu",
    ]
    assert split_agent_specs(f"random, {tune}, random") == ["random", tune, "random"]  # after ", " too
    listing = f"pimc:worlds=2,rollout={comma},random,pimc:rollout={tune},worlds=2,pimc:worlds=2,rollout={colon},random"
    specs = split_agent_specs(listing)
    assert specs == [
        f"pimc:worlds=2,rollout={comma}",
        "random",
        f"pimc:rollout={tune},worlds=2",
        f"pimc:worlds=2,rollout={colon}",
        "random",
    ]
    assert [parse_agent_spec(s)[1].get("rollout") for s in specs] == [comma, None, tune, colon, None]
    assert spec_without(f"pimc:rollout={comma},trust=true,worlds=2", "trust") == f"pimc:rollout={comma},worlds=2"
    assert make_agent(f"pimc:worlds=2,rollout={comma}").rollout == comma


@pytest.mark.parametrize("command", ["eval", "league"])
def test_a_spec_too_long_to_be_a_file_is_refused_in_one_short_line(command, capsys):
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("a" * 5000 + ":worlds=3")
    with pytest.raises(ValueError, match="unknown agent"):
        make_agent("b" * 5000)
    others = ",random,random,random" if command == "eval" else ",random,heuristic"
    code = main([command, "--agents", "c" * 5000 + others, "--games", "4", "--workers", "1"])
    err = capsys.readouterr().err
    assert code != 0 and "unknown agent" in err and len(err) < 600 and "Traceback" not in err, err[:300]


def test_the_table_labels_a_checkpoint_by_its_file_name_whatever_its_folder_holds(odd_paths):
    from barbu_env.evaluation.tournament import agent_labels

    tune, comma, colon = odd_paths
    entries, _ = agent_labels([f"{colon}:device=cpu", "random"])
    assert entries == ["best.pt:device=cpu", "random"]
    entries, _ = agent_labels([f"{comma}:deterministic=false", comma])
    assert entries == ["best.pt:deterministic=false", "best.pt"]  # one file: named by its name
    specs = [f"{colon}:device=cpu", f"{comma}:deterministic=false", tune, "random"]
    assert agent_labels(specs)[0] == specs  # two files named best.pt: each shown with its path


def test_a_path_with_a_space_after_its_comma_and_seats_named_apart(tmp_path, monkeypatch):
    from barbu_env.play.terminal import seat_labels

    monkeypatch.chdir(tmp_path)
    for folder in ("p, q", "ra", "rb"):
        (tmp_path / folder).mkdir()
        shutil.copy(checkpoint_path("ppo"), tmp_path / folder / "best.pt")
    assert split_agent_specs("p, q/best.pt,random,pimc:rollout=p, q/best.pt") == [
        "p, q/best.pt",
        "random",
        "pimc:rollout=p, q/best.pt",
    ]
    assert seat_labels(["human", "ra/best.pt", "rb/best.pt", "heuristic"]) == [
        "human",
        "ra/best.pt",
        "rb/best.pt",
        "heuristic",
    ]


@pytest.mark.parametrize("command", ["eval", "play"])
def test_a_list_of_thousands_of_agents_is_refused_in_one_short_line(command, capsys):
    many = ",".join(f"r{i}" for i in range(1500))
    assert main([command, "--agents", many]) != 0
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and len(err) < 600, err[:300]
    assert main([command, "--agents", "random," * 2000]) != 0
    assert "at most 8,192 characters" in capsys.readouterr().err


def test_a_league_of_too_many_agents_is_refused_for_their_number_before_any_is_made(capsys):
    """65 agents are refused for their number, not for the first that cannot be made (here
    the last is no agent at all: making the agents would have stopped there)."""
    specs = [f"pimc:worlds={w}" for w in range(1, 65)] + ["no-such-agent"]
    assert main(["league", "--agents", ",".join(specs), "--games", "4", "--no-progress"]) != 0
    err = capsys.readouterr().err
    assert "a league has at most 64 agents (2,016 pairings), not 65" in err, err[:300]


@pytest.mark.parametrize("spec", ["runs/missing/best.pt", "missing.pt", "runs/missing/best.pt:device=cpu"])
def test_a_missing_checkpoint_is_refused_in_the_same_words_by_make_agent_and_the_commands(spec, capsys):
    with pytest.raises(ValueError, match=r"^no agent file '[^']*missing[^']*': no such file") as made:
        make_agent(spec)
    assert main(["eval", "--agents", f"{spec},random,random,random", "--games", "4"]) != 0
    assert capsys.readouterr().err.strip() == f"barbu eval: error: {made.value}"


def test_a_checkpoint_in_the_working_folder_and_one_of_the_same_name_in_a_subfolder_are_named_apart(
    tmp_path, monkeypatch
):
    from barbu_env.evaluation.tournament import agent_labels

    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for path in ("best.pt", "runs/best.pt"):
        shutil.copy(checkpoint_path("ppo"), tmp_path / path)
    for specs in (["runs/best.pt", "best.pt"], ["best.pt", "runs/best.pt:device=cpu"]):
        entries, instances = agent_labels(specs + ["random", "random"])
        assert entries == specs + ["random", "random"]  # each shown with its folder


@pytest.mark.parametrize("name", ["heuristic", "random", "pimc"])
def test_a_misspelt_keyword_is_refused_naming_what_the_agent_takes(name):
    with pytest.raises(ValueError, match=rf"^agent '{name}' has no parameter wrlds \(it takes: "):
        make_agent(name, wrlds=3)
    with pytest.raises(ValueError, match="has no parameter x{100}") as refused:
        make_agent(name, **{"x" * 100_000: 1})
    assert len(str(refused.value)) < 400
    with pytest.raises(ValueError, match=r"has no parameter x\\ny \(") as refused:  # written out, in one line
        make_agent(f"{name}:x\ny=1")
    assert "\n" not in str(refused.value)
    with pytest.raises(ValueError, match=r"parameter x\\ny is given twice$") as refused:
        make_agent(f"{name}:x\ny=1,x\ny=2")
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("key", ["seed", "rules"])
def test_a_spec_cannot_set_the_seed_or_the_rules_its_caller_gives(key, capsys):
    with pytest.raises(ValueError, match=f"{key} is not a parameter a spec sets"):
        make_agent(f"random:{key}=1")
    assert main(["eval", "--agents", f"random:{key}=1,random,random,random", "--games", "4", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and f"{key} is not a parameter" in err
