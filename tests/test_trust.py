"""Agent files in a pickle-based format (SB3 ``.zip`` models, RLlib checkpoints) load only
with the opt-in (``make_agent(path, trust=True)``, the spec parameter ``trust=true``,
``--trust-pickled``); without it ``UntrustedFileError`` says why and how, before anything
in the file is unpickled. Torch ``.pt`` checkpoints and registered agents take ``trust``
and ignore it; the browser table loads no file a request names."""

from __future__ import annotations

import base64
import json
import pickle
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from tiny_runs import tiny_maskable_ppo

import barbu_env
from barbu_env.agents import UntrustedFileError, make_agent
from barbu_env.cli.main import main as barbu
from barbu_env.envs.gym_env import BarbuGymEnv
from barbu_env.evaluation.tournament import evaluate


@pytest.fixture(scope="module")
def sb3_model(tmp_path_factory) -> Path:
    """A real, untrained sb3-contrib MaskablePPO model saved as a ``.zip``."""
    model = tiny_maskable_ppo()
    path = tmp_path_factory.mktemp("sb3") / "model.zip"
    model.save(path)
    return path


class _Payload:
    """Unpickles as a call that writes ``marker``: what a hostile file would do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({str(self.marker)!r}, 'w').close()",)


def malicious_sb3_model(model: Path, out: Path, marker: Path) -> Path:
    """``model`` with its pickled observation space replaced by a payload creating ``marker``."""
    with zipfile.ZipFile(model) as z:
        members = {name: z.read(name) for name in z.namelist()}
    data = json.loads(members["data"])
    data["observation_space"][":serialized:"] = base64.b64encode(pickle.dumps(_Payload(marker))).decode()
    members["data"] = json.dumps(data).encode()
    with zipfile.ZipFile(out, "w") as z:
        for name, content in members.items():
            z.writestr(name, content)
    return out


def plays_legal_actions(agent, steps: int = 120) -> bool:
    env = barbu_env.env()
    env.reset(seed=0)
    for _ in range(steps):
        obs = env.observe(env.agent_selection)
        action = agent.act(obs, env.agent_selection)
        if not obs["action_mask"][action]:
            return False
        env.step(action)
    return True


# ---------------------------------------------------------------------- make_agent


def test_an_sb3_model_is_refused_without_trust_saying_why_and_how(sb3_model):
    with pytest.raises(UntrustedFileError) as refused:
        make_agent(str(sb3_model))
    message = str(refused.value)
    assert isinstance(refused.value, ValueError) and "\n" not in message
    assert "pickle-based" in message and "runs code" in message
    assert "trust=True" in message and f"{sb3_model}:trust=true" in message and "--trust-pickled" in message


def test_an_sb3_model_loads_and_plays_with_trust_or_the_spec_parameter(sb3_model):
    from sb3_contrib import MaskablePPO

    by_keyword = make_agent(str(sb3_model), seed=1, trust=True)
    by_spec = make_agent(f"{sb3_model}:trust=true", seed=1)
    assert plays_legal_actions(by_keyword) and plays_legal_actions(by_spec)
    env = barbu_env.env()
    env.reset(seed=3)
    obs = env.observe(env.agent_selection)
    expected, _ = MaskablePPO.load(sb3_model, device="cpu").predict(
        obs["observation"], action_masks=obs["action_mask"].astype(bool), deterministic=True
    )
    assert by_keyword.act(obs) == by_spec.act(obs) == int(expected)
    with pytest.raises(UntrustedFileError):  # the spec says no: it wins over the keyword
        make_agent(f"{sb3_model}:trust=false", trust=True)
    with pytest.raises(ValueError, match="trust is true or false"):
        make_agent(f"{sb3_model}:trust=yes")


def test_a_malicious_sb3_model_runs_nothing_when_refused(sb3_model, tmp_path):
    marker = tmp_path / "pwned"
    evil = malicious_sb3_model(sb3_model, tmp_path / "evil.zip", marker)
    for spec in (str(evil), f"{evil}:trust=false", f"{evil}:deterministic=false"):
        with pytest.raises(UntrustedFileError):
            make_agent(spec)
    assert not marker.exists()
    # The payload is live: trusting the file runs it (whatever SB3 makes of the result).
    try:
        make_agent(str(evil), trust=True)
    except Exception:  # noqa: BLE001 - the load may fail after the payload ran; only the marker matters
        pass
    assert marker.exists()


def write_rllib_checkpoint(folder: Path, marker: Path) -> Path:
    """An RLlib-shaped algorithm checkpoint whose module's pickles would create ``marker``."""
    module = folder / "learner_group" / "learner" / "rl_module" / "shared"
    module.mkdir(parents=True)
    (module / "class_and_ctor_args.pkl").write_bytes(pickle.dumps(_Payload(marker)))
    (module / "module_state.pkl").write_bytes(pickle.dumps(_Payload(marker)))
    return folder


def test_an_rllib_checkpoint_is_refused_without_trust_before_ray_is_imported(tmp_path):
    marker = tmp_path / "pwned"
    checkpoint = write_rllib_checkpoint(tmp_path / "checkpoint", marker)
    ray_loaded = "ray" in sys.modules
    for path in (checkpoint, checkpoint / "learner_group" / "learner" / "rl_module" / "shared"):
        with pytest.raises(UntrustedFileError, match="RLlib checkpoint, a pickle-based format"):
            make_agent(str(path))
    assert not marker.exists()
    assert ("ray" in sys.modules) == ray_loaded


def test_trust_is_accepted_and_ignored_by_torch_checkpoints_and_registered_agents(tmp_path):
    from barbu_models.policy import BarbuActorCritic, PolicyConfig, save_checkpoint

    checkpoint = tmp_path / "tiny.pt"
    save_checkpoint(checkpoint, BarbuActorCritic(PolicyConfig(hidden=32, card_embed=4)))
    agents = [
        make_agent(str(checkpoint)),  # weights_only: no opt-in needed
        make_agent(str(checkpoint), trust=True),
        make_agent(f"{checkpoint}:trust=true,deterministic=false"),
        make_agent("heuristic", trust=True),
        make_agent("random:trust=true"),
    ]
    assert all(plays_legal_actions(a, steps=30) for a in agents)


def test_the_league_cache_key_ignores_the_opt_in(sb3_model, tmp_path):
    from barbu_env.agents import parse_agents
    from barbu_env.evaluation.league.cache import Cache
    from barbu_env.game.rules import load_rules

    def key(spec: str) -> dict:
        return Cache(tmp_path).key(parse_agents(f"{spec},random,random,random"), 8, 0, load_rules("standard"))

    assert key(f"{sb3_model}:trust=true") == key(str(sb3_model)) != key(f"{sb3_model}:deterministic=false")


def test_the_gym_envs_opponents_and_tournaments_take_the_spec_parameter(sb3_model):
    with pytest.raises(UntrustedFileError):
        BarbuGymEnv(opponents=[str(sb3_model), "random", "random"])
    env = BarbuGymEnv(opponents=[f"{sb3_model}:trust=true", "random", "random"])
    obs, info = env.reset(seed=0)
    obs, reward, terminated, truncated, info = env.step(int(np.flatnonzero(info["action_mask"])[0]))
    assert obs.shape == env.observation_space.shape
    # Two worker processes: the opt-in travels to them inside the spec string.
    result = evaluate([f"{sb3_model}:trust=true", "random", "random", "random"], games=8, workers=2, progress=False)
    assert result.games == 8 and result.run["workers"] == 2


# ---------------------------------------------------------------------- the command line


@pytest.mark.parametrize(
    "command",
    [
        ["eval", "--agents", "{model},random,random,random", "--games", "4", "--workers", "1", "--no-progress"],
        ["play", "--agents", "{model},random,random,random", "--hands", "1"],
    ],
    ids=lambda c: c[0],
)
def test_commands_refuse_a_pickled_model_without_trust_pickled_in_one_line(command, sb3_model, capsys):
    code = barbu([part.format(model=sb3_model) for part in command])
    out, err = capsys.readouterr()
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"barbu {command[0]}: error: ")
    assert "pickle-based" in err and "--trust-pickled" in err


def test_barbu_eval_evaluates_a_pickled_model_with_trust_pickled(sb3_model, capsys):
    argv = ["eval", "--agents", f"{sb3_model},heuristic,random,random", "--games", "4", "--workers", "1"]
    code = barbu([*argv, "--no-progress", "--trust-pickled"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "Duplicate tournament: 4 games" in out and "model.zip" in out
    assert "heuristic:trust" not in out  # only agent files get the opt-in


# ---------------------------------------------------------------------- the browser table


def test_the_browser_table_loads_no_file_a_request_names(sb3_model, tmp_path):
    pytest.importorskip("fastapi")
    from fastapi import HTTPException

    from barbu_env.play.web.server import NewGame, create_app

    marker = tmp_path / "pwned"
    evil = malicious_sb3_model(sb3_model, tmp_path / "evil.zip", marker)
    app = create_app(["human", "heuristic", "heuristic", "random"], seed=0)
    (new_game,) = [r.endpoint for r in app.routes if getattr(r, "path", "") == "/api/games" and "POST" in r.methods]
    for spec in (str(evil), f"{evil}:trust=true", str(sb3_model), f"{sb3_model}:trust=true"):
        with pytest.raises(HTTPException) as refused:
            new_game(NewGame(opponents=[spec, "random", "random"]))
        assert refused.value.status_code == 422 and "unknown opponent" in refused.value.detail
    assert not marker.exists()
    assert new_game(NewGame(opponents=["random", "heuristic", "random"], hands=1))["labels"][0] == "you"
    # A table given a pickled file by its operator needs the opt-in too.
    with pytest.raises(UntrustedFileError):
        create_app(["human", str(sb3_model), "random", "random"])
