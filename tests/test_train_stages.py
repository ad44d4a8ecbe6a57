"""A chain of training runs in one config (``stages``): the stages run in order, each from
the previous one's checkpoint, named after the chain; every stage is checked before the
first one runs; the command line's flags win over every stage but for the chain's own
fields; ``--resume auto`` skips the finished stages and resumes the first unfinished one
exactly; a stage may make its network by expert iteration, and the next one starts from
and is anchored to it; ``configs/train/ppo-finetuned.yaml`` and ``ppo-expert.yaml`` are the
recipes of the shipped networks."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import tiny

from barbu_env.cli.main import main as barbu
from barbu_models.policy import load_checkpoint
from barbu_training import config, config_cli, ppo
from barbu_training.run import Trainer, TrainingInterrupted
from barbu_training.stages import stage_args
from barbu_training.train import plan_stages, train

ROOT = Path(__file__).resolve().parent.parent
#: A chain's top level: tiny runs of one iteration (two hands, about 90 decisions), no evaluations.
TOP = tiny(episode="hand", total_decisions=50, final_eval_games=0, exp_name="chain")


def _write(path: Path, top: dict, stages: list) -> Path:
    path.write_text(yaml.safe_dump(top | {"stages": stages}))
    return path


def _weights(path: Path) -> dict[str, torch.Tensor]:
    return load_checkpoint(path)[0].state_dict()


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_two_stage_config_runs_both_the_second_from_the_firsts_latest_checkpoint(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    started = []  # each stage's weights and counters when its run starts
    run = Trainer.run

    def recording(self):
        started.append(({k: v.clone() for k, v in self.model.state_dict().items()}, self.iteration, self.args))
        return run(self)

    monkeypatch.setattr(Trainer, "run", recording)
    path = _write(tmp_path / "chain.yaml", TOP, [{}, {"seed": 5, "final_eval_games": 4}])
    assert barbu(["train", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "=== stage 1 of 2: chain-1" in out and "=== stage 2 of 2: chain-2" in out
    assert "Final evaluation vs 3x random" in out.split("=== stage 2")[1]  # each stage says its own result

    (first, it1, a1), (second, it2, a2) = started
    assert (a1.exp_name, a2.exp_name) == ("chain-1", "chain-2") and (a1.seed, a2.seed) == (1, 5)
    assert a2.init == str(Path("runs") / "chain-1" / "checkpoints" / "latest.pt") and it2 == 0
    assert _same(second, _weights(tmp_path / "runs/chain-1/checkpoints/latest.pt"))
    assert not _same(first, second)
    assert yaml.safe_load((tmp_path / "runs/chain-2/config.yaml").read_text())["init"] == a2.init
    for k in (1, 2):
        assert (tmp_path / f"runs/chain-{k}/summary.json").is_file()


def test_a_stage_may_start_from_the_previous_best_checkpoint_or_name_its_own_start_and_name(tmp_path):
    args = config.Args(
        **TOP,
        stages=[
            {"eval_every": 1, "eval_games": 4},
            {"init_from": "best", "exp_name": "named"},
            {"init": "ppo", "hidden": 256, "card_embed": 32},
            {"hidden": 256, "card_embed": 32},  # the network it starts from
        ],
    )
    stages = stage_args(args)
    assert [s.exp_name for s in stages] == ["chain-1", "named", "chain-3", "chain-4"]
    assert [s.init for s in stages] == [
        "",
        "runs/chain-1/checkpoints/best.pt",
        "ppo",
        "runs/chain-3/checkpoints/latest.pt",
    ]
    assert all(not s.stages and not s.resume for s in stages)


def test_flags_win_over_every_stage_but_the_chains_name_start_and_resume(tmp_path):
    path = _write(tmp_path / "c.yaml", TOP, [{"seed": 3, "gamma": 0.9}, {"seed": 4, "exp_name": "own"}])
    flags = {"seed": 7, "exp_name": "z", "init": "ppo", "hidden": 256, "card_embed": 32, "resume": "auto"}
    args = config_cli.load_args(str(path), flags)
    first, second = stage_args(args)
    assert (first.seed, second.seed, first.gamma, second.gamma) == (7, 7, 0.9, 0.995)
    assert (first.exp_name, second.exp_name) == ("z-1", "own")  # a stage's own name stays its own
    assert (first.init, second.init) == ("ppo", "runs/z-1/checkpoints/latest.pt")
    assert (args.resume, first.resume, second.resume) == ("auto", "", "")


BAD_LAST_STAGE = [
    ({"gamma": 5.0}, "gamma"),
    ({"init_from": "best"}, "init_from best needs stage 2's best.pt"),
    (
        {"init_from": "latest", "init": "ppo"},
        "init_from is latest or best, on a stage after the first that names no init",
    ),
    ({"resume": "x.pt"}, "resume is not a stage's field"),
    ({"hidden": 64}, "another network than stage 2's"),
    ({"exp_name": "chain-1"}, "stage 1's folder"),
    ({"baselines": "nobody"}, r"baselines: 'nobody' is not an agent"),  # prepare's, before stage 1 runs
    ({"expert": {"games": 1}}, "expert: games 1 over workers 1 with holdout 0.1 leave a worker no game to fit on"),
]


@pytest.mark.parametrize("stage,message", BAD_LAST_STAGE, ids=[next(iter(s)) for s, _ in BAD_LAST_STAGE])
def test_a_bad_field_in_the_last_stage_is_refused_before_any_run_folder_is_made(
    tmp_path, monkeypatch, capsys, stage, message
):
    monkeypatch.chdir(tmp_path)
    path = _write(tmp_path / "bad.yaml", TOP, [{}, {}, stage])
    assert barbu(["train", "--config", str(path)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith("barbu train: error: "), err
    assert re.search(r"stage 3 of 3 \('chain-[13]'\)", err), err  # the stage and its run's name
    assert re.search(message, err), err
    assert not (tmp_path / "runs").exists()


def test_expert_iteration_is_a_stages_own_field_with_a_network_to_teach():
    with pytest.raises(ValueError, match="expert is a stage's field"):
        config.Args(**TOP, expert={"worlds": 2}, stages=[{}, {}])
    with pytest.raises(ValueError, match="expert needs an init"):
        config.Args(**TOP, expert={"worlds": 2})
    with pytest.raises(ValueError, match="kl_anchor init needs an init"):
        config.Args(**TOP, kl_anchor="init", kl_coef=0.1)
    with pytest.raises(config.ConfigError, match="stage 2 of 2.*init_from: stage 1 makes one network by expert"):
        stage_args(config.Args(**TOP, init="ppo", stages=[{"expert": {"worlds": 2}}, {"init_from": "latest"}]))


@pytest.mark.slow  # the chain's wiring of an expert stage is checked cheaply by the ppo-expert recipe's test
def test_an_expert_stage_teaches_the_previous_network_and_the_next_stage_starts_from_and_is_pulled_toward_it(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    started = []  # the PPO stages' weights and anchors when they start
    run = Trainer.run

    def recording(self):
        def copy(net):
            return None if net is None else {k: v.clone() for k, v in net.state_dict().items()}

        started.append((self.args, copy(self.model), copy(self.anchor)))
        return run(self)

    monkeypatch.setattr(Trainer, "run", recording)
    teach = {"worlds": 2, "games": 2, "games_per_batch": 2, "other_share": 0.0}  # one game fitted, one held out
    stages = [{}, {"expert": teach}, {"kl_anchor": "init", "kl_coef": 0.5}]
    path = _write(tmp_path / "e.yaml", TOP | {"exp_name": "e"}, stages)
    assert barbu(["train", "--config", str(path)]) == 0
    out = capsys.readouterr().out
    assert re.search(r"=== stage 2 of 3: e-2\nexpert iteration: \d+ labels", out), out

    summary = json.loads((tmp_path / "runs/e-2/summary.json").read_text())
    assert summary["expert"] and summary["labels"] > 24  # every declaration with a choice, at least
    assert summary["args"]["student"] == str(Path("runs/e-1/checkpoints/latest.pt"))
    assert summary["args"]["searcher"] == f"pimc-ppo:rollout={Path('runs/e-1/checkpoints/latest.pt')}"
    assert (summary["args"]["seed"], summary["args"]["worlds"], summary["args"]["workers"]) == (1, 2, 1)
    taught = _weights(tmp_path / "runs/e-2/expert.pt")
    assert not _same(taught, _weights(tmp_path / "runs/e-1/checkpoints/latest.pt"))  # the fit moved it

    (a1, _, anchor1), (a3, w3, anchor3) = started  # stage 2 is no PPO run
    assert anchor1 is None and a3.init == str(Path("runs/e-2/expert.pt"))
    assert _same(w3, taught) and _same(anchor3, taught)

    again = train(config_cli.load_args(str(path), {"resume": "auto"}))  # all finished: nothing runs
    assert [s["skipped"] for s in again["stages"]] == [True, True, True] and again["stages"][1]["expert"]


def test_the_first_stage_has_no_previous_stage_to_start_from(tmp_path):
    with pytest.raises(config.ConfigError, match="stage 1 of 2.*init_from is latest or best, on a stage after"):
        stage_args(config.Args(**TOP, stages=[{"init_from": "best"}, {}]))
    with pytest.raises(config.ConfigError, match="chain of runs"):
        Trainer(config.Args(**TOP, stages=[{}]))


def test_a_staged_run_interrupted_resumes_its_first_unfinished_stage_and_ends_as_the_uninterrupted_chain(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    stages = [{}, {"total_decisions": 150}]  # stage 2: two iterations
    whole = train(config_cli.load_args(str(_write(tmp_path / "w.yaml", TOP | {"exp_name": "w"}, stages))))
    assert [s["iterations"] for s in whole["stages"]] == [1, 2]

    update, calls = ppo.ppo_update, []

    def interrupted(*a):  # Ctrl-C in stage 2's second update: its first iteration is saved
        calls.append(update(*a))
        if len(calls) == 3:
            raise KeyboardInterrupt
        return calls[-1]

    monkeypatch.setattr(ppo, "ppo_update", interrupted)
    cut = _write(tmp_path / "c.yaml", TOP | {"exp_name": "c"}, stages)
    with pytest.raises(TrainingInterrupted, match=r"stage 2 of 2 \(\'c-2\'\): iteration 1 saved.*--resume auto") as e:
        train(config_cli.load_args(str(cut)))
    assert e.value.path == Path("runs/c-2/checkpoints/latest.pt")
    monkeypatch.setattr(ppo, "ppo_update", update)
    first_stage = (tmp_path / "runs/c-1/checkpoints/latest.pt").read_bytes()

    with pytest.raises(
        config.ConfigError, match=r"not a checkpoint of the first unfinished stage, stage 2 of 2 \(\'c-2\'\)"
    ):
        plan_stages(config_cli.load_args(str(cut), {"resume": "runs/c-1/checkpoints/latest.pt"}))
    plan, first = plan_stages(config_cli.load_args(str(cut), {"resume": "auto"}))
    assert first == 1 and plan[1].resume == str(Path("runs/c-2/checkpoints/latest.pt"))

    assert barbu(["train", "--config", str(cut), "--resume", "auto"]) == 0
    assert "=== stage 1 of 2: c-1 (finished before this session)" in capsys.readouterr().out
    assert (tmp_path / "runs/c-1/checkpoints/latest.pt").read_bytes() == first_stage  # not run again
    assert _same(
        _weights(tmp_path / "runs/c-2/checkpoints/latest.pt"), _weights(tmp_path / "runs/w-2/checkpoints/latest.pt")
    )
    done = json.loads((tmp_path / "runs/c-2/summary.json").read_text())
    assert (done["iterations"], done["decisions"]) == (2, whole["decisions"])

    again = train(config_cli.load_args(str(cut), {"resume": "auto"}))  # all finished: nothing runs
    assert [s["skipped"] for s in again["stages"]] == [True, True]


def test_the_recipe_config_is_default_yaml_then_five_rounds_of_finetune_yaml():
    stages = stage_args(config_cli.load_args(str(ROOT / "configs/train/ppo-finetuned.yaml")))
    default = config_cli.load_args(str(ROOT / "configs/train/default.yaml"))
    finetune = config_cli.load_args(str(ROOT / "configs/train/finetune.yaml"))
    assert stages[0] == dataclasses.replace(default, exp_name="ppo-finetuned-1")
    # the model cards' commands: round 1 from ppo (stage 1's best.pt), then each from the last latest.pt
    rounds = [
        dict(init="runs/ppo-finetuned-1/checkpoints/best.pt"),
        dict(init="runs/ppo-finetuned-2/checkpoints/latest.pt", eval_every=0),
        *(
            dict(
                init=f"runs/ppo-finetuned-{k}/checkpoints/latest.pt",
                eval_every=0,
                total_decisions=100_000_000,
                final_eval_games=0,
            )
            for k in (3, 4, 5)
        ),
    ]
    for k, (stage, changes) in enumerate(zip(stages[1:], rounds, strict=True), 2):
        assert stage == dataclasses.replace(finetune, exp_name=f"ppo-finetuned-{k}", **changes), k
    shipped = torch.load(ROOT / "barbu_env/agents/pretrained/ppo-finetuned.pt", weights_only=True)["args"]
    assert all(
        shipped[k] == getattr(stages[-1], k) for k in shipped if k not in ("exp_name", "run_dir", "init", "progress")
    )
    plan_stages(config_cli.load_args(str(ROOT / "configs/train/ppo-finetuned.yaml"), {"device": "cpu"}))


def test_the_expert_recipe_config_teaches_ppo_finetuned_then_runs_finetune_yaml_anchored_to_the_result():
    first, second = stage_args(config_cli.load_args(str(ROOT / "configs/train/ppo-expert.yaml")))
    from barbu_training.expert import ExpertArgs, stage_expert_args

    # the model card's step 1 (python -m barbu_training.expert --worlds 16 --games 160), with the searcher spelled out
    assert dataclasses.replace(stage_expert_args(first), searcher="pimc-ppo", out="runs/expert1") == ExpertArgs(
        worlds=16, games=160, out="runs/expert1"
    )
    # step 2: experiments/configs/expert-ppo.yaml from step 1's network, 20M decisions
    step2 = config_cli.load_args(
        str(ROOT / "experiments/configs/expert-ppo.yaml"),
        {"init": "runs/ppo-expert-1/expert.pt", "kl_anchor": "init", "total_decisions": 20_000_000},
    )
    assert second == dataclasses.replace(step2, exp_name="ppo-expert-2", seed=1)
