"""Training configs are checked whole before anything on disk is touched: a bad value is
refused with one line naming the field and the value, the run folder of an earlier run stays
byte for byte as it was, and a run whose loss or weights stop being finite stops with a clear
error, its last good checkpoint kept."""

from __future__ import annotations

import dataclasses
import os
import re
import warnings
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import tiny

from barbu_env.cli.main import main as barbu
from barbu_models.policy import load_checkpoint
from barbu_training import config, config_cli, ppo, preflight
from barbu_training.run import TrainingDiverged
from barbu_training.train import train

ROOT = Path(__file__).resolve().parent.parent
#: A run cheap enough to finish in a second if a bad config were let through: one game of
#: one hand per rollout, a few hundred decisions, a final evaluation of 4 games.
CHEAP = tiny(num_games=1, episode="hand", total_decisions=200, exp_name="old", run_dir="runs")

#: A bad config and the field its refusal names: a misspelt field, a type, a bound, a rule
#: between fields, and what the preflight checks on the machine.
CASES = [
    ({"lerning_rate": 0.1}, "lerning_rate"),
    ({"total_decisions": "many"}, "total_decisions"),
    ({"stages": [{}, {"gamma": 5.0}]}, "gamma"),
    ({"hands_coef": 0.5}, "central_critic"),
    ({"resume": "missing.pt"}, "resume"),
]


def test_the_docs_table_is_the_one_the_schema_prints():
    assert config_cli.markdown_table() in (ROOT / "docs" / "training.md").read_text()
    assert "| `gamma` | a number at least 0, at most 1 | `0.995` |" in config_cli.markdown_table()


def _tree(root: Path) -> dict[str, bytes | None]:
    """Every path under ``root`` with its bytes (None for a folder)."""
    return {str(p.relative_to(root)): None if p.is_dir() else p.read_bytes() for p in sorted(root.rglob("*"))}


@pytest.fixture
def old_run(tmp_path, monkeypatch) -> Path:
    """A run folder of an earlier run (config, TensorBoard log, checkpoints), the working
    directory ``tmp_path`` (relative run_dir, resume and init paths land there)."""
    monkeypatch.chdir(tmp_path)
    run = tmp_path / "runs" / "old"
    (run / "tb").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(CHEAP))
    (run / "tb" / "events.out.tfevents.1.old").write_bytes(b"\x00earlier curves")
    (run / "checkpoints" / "latest.pt").write_bytes(b"earlier weights")
    (run / "checkpoints" / "best.pt").write_bytes(b"earlier best")
    (run / "summary.json").write_text("{}")
    return tmp_path


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("fields,named", CASES, ids=[repr(c[0])[:60] for c in CASES])
def test_a_bad_config_is_refused_in_one_line_and_leaves_the_run_folder_untouched(old_run, capsys, fields, named):
    bad = old_run / "bad.yaml"
    bad.write_text(yaml.safe_dump(CHEAP | fields))
    before = _tree(old_run)
    assert barbu(["train", "--config", str(bad)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("barbu train: error: ") and re.search(rf"\b{named}\b", line), line
    assert _tree(old_run) == before


def test_the_message_names_the_field_and_the_value(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("gamma: 5.0\n")
    with pytest.raises(config.ConfigError) as e:
        config_cli.load_args(str(path))
    assert str(e.value) == f"{path}: gamma: Input should be less than or equal to 1 (given 5.0)"
    path.write_text("")  # an empty file would start a default run
    with pytest.raises(config.ConfigError, match="a training config is a mapping of fields, not None"):
        config_cli.load_args(str(path))


def test_numbers_written_the_yaml_1_2_way_load(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("learning_rate: 3e-4\nent_coef: 0\n")  # PyYAML reads 3e-4 (no dot) as text
    args = config_cli.load_args(str(path))
    assert (args.learning_rate, args.ent_coef) == (0.0003, 0.0) and isinstance(args.ent_coef, float)


def test_the_shipped_configs_pass_every_check():
    for path in sorted((ROOT / "configs" / "train").glob("*.yaml")):
        args = config_cli.load_args(str(path))
        preflight.prepare(dataclasses.replace(args, device="cpu"))


def test_a_run_that_needs_more_memory_than_the_machine_has_is_refused():
    args = config.Args(num_games=512)  # about 3.1 GiB of rollout buffers
    need, on_device = preflight.memory_needed(args)
    assert 3.1 * 2**30 < need < 3.5 * 2**30 and on_device < 2**30
    with pytest.raises(config.ConfigError, match=r"num_games 512.* need about 3\.\d GiB.* machine's 2\.0 GiB"):
        preflight.prepare(args, memory=2 * 2**30)
    preflight.prepare(args, memory=4 * 2**30)


def test_overlapped_local_workers_and_update_threads_beyond_the_cores_are_warned_about():
    cores = len(os.sched_getaffinity(0))
    crowded = config.Args(num_games=8, workers=2, overlap=True, torch_threads=cores)
    with pytest.warns(preflight.OversubscribedWarning, match=rf"2 rollout workers and torch_threads {cores} asks for"):
        preflight.prepare(crowded)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        preflight.prepare(dataclasses.replace(crowded, ray_address="auto"))  # the workers run elsewhere
        preflight.prepare(dataclasses.replace(crowded, overlap=False))  # the workers and the update take turns
        preflight.warn_oversubscribed(dataclasses.replace(crowded, torch_threads=1), cores=3)
    one = "1 rollout worker and .* 3 cores on this machine's 2: .*torch_threads 1 leaves"
    with pytest.warns(preflight.OversubscribedWarning, match=one):
        preflight.warn_oversubscribed(dataclasses.replace(crowded, workers=1, torch_threads=2), cores=2)


def test_rollout_workers_on_this_machine_count_their_own_buffers_and_a_cluster_s_do_not():
    alone = preflight.memory_needed(config.Args(num_games=512))[0]
    local = config.Args(num_games=512, workers=2)
    need = preflight.memory_needed(local)[0]
    assert need > alone + 3.1 * 2**30  # the workers' shares of the rollout, held as the learner's is
    assert preflight.memory_needed(dataclasses.replace(local, ray_address="auto"))[0] == alone
    with pytest.raises(config.ConfigError, match=r"with 2 rollout workers on this machine need about [67]\.\d GiB"):
        preflight.prepare(local, memory=5 * 2**30)
    preflight.prepare(dataclasses.replace(local, workers=0), memory=5 * 2**30)


# ---------------------------------------------------------------------- non-finite training


def _poisoned_update(*a):
    stats = UPDATE(*a)
    with torch.no_grad():
        next(a[0].parameters())[0, 0] = float("nan")  # as a step through an inf gradient leaves it
    return stats


UPDATE = ppo.ppo_update


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize(
    "fields,poison,what",
    [
        pytest.param(dict(reward_scale=1e30), False, "value_loss", marks=pytest.mark.slow),
        ({}, True, "weights"),
    ],
)
def test_a_fresh_run_that_diverges_stops_before_writing_non_finite_weights(tmp_path, monkeypatch, fields, poison, what):
    if poison:
        monkeypatch.setattr(ppo, "ppo_update", _poisoned_update)
    args = config.Args(**CHEAP | dict(run_dir=str(tmp_path), total_decisions=10**5) | fields)
    with pytest.raises(TrainingDiverged, match=f"iteration 1 \\(the .*{what}.* not finite\\)") as e:
        train(args)
    model, payload = load_checkpoint(e.value.path)
    assert payload["iteration"] == 0 and all(torch.isfinite(w).all() for w in model.state_dict().values())
    assert not (tmp_path / "old" / "checkpoints" / "best.pt").exists()
