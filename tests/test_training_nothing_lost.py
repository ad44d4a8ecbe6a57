"""Training loses nothing and reads a stranger's checkpoint safely.

- A run that fails at its start (its rollout workers, a full disk under its config and
  log) leaves an earlier run's folder byte for byte as it was, and says why in one line.
- A checkpoint's network config and weight shapes are checked against the bounds before
  any network is built: a crafted file of a few bytes asking for a huge network is
  refused at once, by ``barbu eval`` and ``barbu train --init`` alike.
- A checkpoint given to ``--resume`` is one of this config's network with an optimizer,
  checked before anything starts.
- Files training writes replace the old ones whole or not at all.

The full disk is a file-size limit (``RLIMIT_FSIZE``) lowered for a moment: no root needed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import resource
from pathlib import Path

import pytest
import torch
import yaml
from tiny_runs import tiny

from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.cli.main import main as barbu
from barbu_env.util.files import OutputError
from barbu_models.policy import BarbuActorCritic, PolicyConfig, load_checkpoint, save_checkpoint
from barbu_training import config, preflight
from barbu_training.run import FRESH_REPLACES, Trainer, plot_learning_curve, starting_in

ROOT = Path(__file__).resolve().parent.parent
#: A run of a few hundred decisions, should one start.
FINISHED = tiny(
    num_games=1,
    episode="hand",
    total_decisions=200,
    eval_every=1,
    eval_games=2,
    final_eval_games=2,
    snapshot_every=1,
    pool_size=2,
    exp_name="old",
)


def _tree(root: Path) -> dict[str, str | None]:
    """Every path under ``root`` with the hash of its bytes (None for a folder)."""
    return {
        str(p.relative_to(root)): None if p.is_dir() else hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
    }


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@contextlib.contextmanager
def full_disk(limit: int):
    """No file may grow past ``limit`` bytes in this process (as on a full disk: Python ignores
    ``SIGXFSZ``, so the write fails with "File too large"); the old limit comes back after."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))


@pytest.fixture
def old_run(tmp_path) -> Path:
    """An earlier run's folder, ``tmp_path/runs/old``: config, log, checkpoints, summary, curve."""
    run = tmp_path / "runs" / "old"
    (run / "tb").mkdir(parents=True)
    (run / "checkpoints").mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(FINISHED))
    (run / "tb" / "events.out.tfevents.1.old").write_bytes(b"\x00earlier curves")
    (run / "checkpoints" / "latest.pt").write_bytes(b"earlier weights")
    (run / "checkpoints" / "best.pt").write_bytes(b"earlier best")
    (run / "summary.json").write_text("{}")
    (run / "learning_curve.png").write_bytes(b"an earlier curve")
    return run


def _config(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "again.yaml"
    path.write_text(yaml.safe_dump(FINISHED | dict(run_dir=str(tmp_path / "runs")) | changes))
    return path


# ---------------------------------------------------------------------- 3. a failed start loses nothing


def test_a_run_that_cannot_write_its_start_on_a_full_disk_leaves_the_old_run_as_it_was(old_run, tmp_path, capsys):
    before, again = _tree(old_run), _config(tmp_path)
    with full_disk(300):  # a disk with 300 bytes left
        assert barbu(["train", "--config", str(again)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("barbu train: error: ") and "config.yaml" in line and "File too large" in line, line
    assert _tree(old_run) == before  # summary.json, tb/, config.yaml, checkpoints: every byte


def test_a_run_whose_rollout_workers_cannot_start_leaves_the_finished_run_as_it_was(old_run, tmp_path, capsys):
    pytest.importorskip("ray")
    before = _tree(old_run)
    # Ray refuses the address when it starts the workers, after every check has passed
    assert barbu(["train", "--config", str(_config(tmp_path, workers=1, ray_address="nowhere:port"))]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith("barbu train: error: the rollout workers did not start: "), line
    assert _tree(old_run) == before


def test_a_failed_start_puts_the_old_entries_back_and_a_started_one_replaces_them(tmp_path):
    run = tmp_path / "runs" / "old"
    (run / "tb").mkdir(parents=True)
    (run / "tb" / "events.1").write_bytes(b"old curves")
    (run / "config.yaml").write_text("old: config\n")
    (run / "summary.json").write_text("{}")
    (run / "checkpoints").mkdir()
    (run / "checkpoints" / "latest.pt").write_bytes(b"old weights")
    before = _tree(run)

    def start(fail: BaseException | None) -> None:
        with starting_in(run, FRESH_REPLACES):
            (run / "tb").mkdir()
            (run / "tb" / "events.2").write_bytes(b"new curves")
            (run / "config.yaml").write_text("new: config\n")
            (run / "checkpoints" / "new.pt").write_bytes(b"new")
            if fail is not None:
                raise fail

    with pytest.raises(OutputError, match=r"could not start the run in .*old: No space left on device \(the folder"):
        start(OSError(28, "No space left on device"))
    assert _tree(run) == before
    with pytest.raises(KeyboardInterrupt):
        start(KeyboardInterrupt())
    assert _tree(run) == before
    start(None)
    assert _tree(run) == {
        "checkpoints": None,
        "checkpoints/latest.pt": before["checkpoints/latest.pt"],  # checkpoints stay until the run writes its own
        "checkpoints/new.pt": hashlib.sha256(b"new").hexdigest(),
        "config.yaml": hashlib.sha256(b"new: config\n").hexdigest(),
        "tb": None,
        "tb/events.2": hashlib.sha256(b"new curves").hexdigest(),
    }
    # a folder that did not exist is not left behind by a start that failed
    fresh = tmp_path / "elsewhere" / "new"
    with pytest.raises(ValueError), starting_in(fresh, FRESH_REPLACES):
        (fresh / "config.yaml").write_text("x")
        raise ValueError("a failure")
    assert not (tmp_path / "elsewhere").exists()


# ---------------------------------------------------------------------- 9. checkpoints checked before building


def _crafted(path: Path, state_dict: dict | None = None, **config_changes) -> Path:
    """A checkpoint of a few bytes: a network config and ``state_dict`` (default: none)."""
    model_config = dataclasses.asdict(PolicyConfig()) | config_changes
    torch.save({"model_config": model_config, "state_dict": state_dict or {}}, path)
    return path


def _eval(path: Path) -> list[str]:
    return ["eval", "--agents", f"{path},random,random,random", "--games", "4", "--workers", "1", "--no-progress"]


def _train_init(path: Path, tmp_path: Path) -> list[str]:
    cfg = _config(tmp_path, hidden=8192, layers=3, init=str(path), exp_name="fine")
    return ["train", "--config", str(cfg)]


def test_a_crafted_checkpoint_asking_for_a_huge_network_is_refused_at_once(tmp_path, capsys):
    big = _crafted(tmp_path / "big.pt", hidden=8192, layers=3)  # 1.7 GB and a minute to build before
    assert big.stat().st_size < 2000
    for argv in (_eval(big), _train_init(big, tmp_path)):
        assert barbu(argv) == 1
        line = _one_line(capsys.readouterr().err)
        assert "big.pt: its weights are not this network's (first wrong: 'cards.weight')" in line, line
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    "changes, named",
    [
        (dict(hidden=8193), "hidden is 8,193, outside 1 to 8,192"),
        (dict(hidden=True), "hidden is True, not an integer"),
        (dict(hidden="256"), "hidden is '256', not an integer"),
        (dict(obs_dim="x"), "obs_dim is 'x', not an integer"),
        (dict(obs_dim=10**6), "today's observation and actions"),
        (dict(state_dim=5), "state_dim 0 or the privileged view's"),
        (dict(wings=2), "is not a mapping of network fields"),
    ],
)
def test_a_checkpoint_config_outside_the_bounds_is_refused_naming_the_rule(tmp_path, capsys, changes, named):
    path = _crafted(tmp_path / "odd.pt", **changes)
    with pytest.raises(ValueError, match=named):
        load_checkpoint(path)
    assert barbu(_eval(path)) == 1
    assert named in _one_line(capsys.readouterr().err)


def test_weights_of_the_wrong_shape_or_not_finite_are_refused_before_the_network_is_built(tmp_path):
    weights = BarbuActorCritic(PolicyConfig(hidden=16, card_embed=4)).state_dict()
    path = tmp_path / "w.pt"
    _crafted(path, weights, hidden=16, card_embed=4)
    assert load_checkpoint(path)[0].config.hidden == 16
    for changed, named in (
        ({"trunk.2.weight": torch.zeros(16, 17)}, "first wrong: 'trunk.2.weight'"),
        ({"spare": torch.zeros(3)}, "first wrong: 'spare'"),
        ({"critic.bias": torch.tensor([1])}, "first wrong: 'critic.bias'"),
        ({"critic.bias": torch.tensor([float("nan")])}, "its weights are not all finite"),
    ):
        with pytest.raises(ValueError, match=named):
            load_checkpoint(_crafted(path, weights | changed, hidden=16, card_embed=4))


# ---------------------------------------------------------------------- 14. resume checkpoints checked whole


def test_a_resume_checkpoint_of_another_network_is_refused_before_the_run_folder_is_made(tmp_path, capsys):
    other = config.Args(**FINISHED | dict(run_dir=str(tmp_path / "elsewhere"), hidden=64))
    crafted = Trainer(other).checkpoint(tmp_path / "crafted.pt")
    assert barbu(["train", "--config", str(_config(tmp_path, exp_name="resumed", resume=str(crafted)))]) == 1
    line = _one_line(capsys.readouterr().err)
    assert "crafted.pt holds hidden 64, layers 2, card_embed 4" in line and "not a training checkpoint of" in line, line
    assert not (tmp_path / "runs" / "resumed").exists()


def test_a_shipped_policy_given_to_resume_is_named_a_policy_to_start_from_with_init(tmp_path, capsys):
    shipped = config.Args(**FINISHED | dict(hidden=256, card_embed=32, run_dir=str(tmp_path / "runs")))
    with pytest.raises(config.ConfigError, match=r"resume: .*ppo\.pt holds no optimizer state \(a policy: use init\)"):
        preflight.prepare(dataclasses.replace(shipped, resume=str(checkpoint_path("ppo"))))
    assert not (tmp_path / "runs").exists()


# ---------------------------------------------------------------------- 1. training's own writes


def test_checkpoints_and_plots_on_a_full_disk_leave_the_old_files_whole(tmp_path):
    ckpt, plot = tmp_path / "latest.pt", tmp_path / "learning_curve.png"
    save_checkpoint(ckpt, BarbuActorCritic(PolicyConfig(hidden=8, card_embed=2)))
    plot.write_bytes(b"an old plot")
    old = {p: p.read_bytes() for p in (ckpt, plot)}
    history = [{"decisions": 100, "eval": {"random": {"mean": 1.0, "ci": [0.0, 2.0]}}}]
    for write, name in (
        (lambda: save_checkpoint(ckpt, BarbuActorCritic(PolicyConfig(hidden=64, card_embed=8))), "latest.pt"),
        (lambda: plot_learning_curve(history, plot), "learning_curve.png"),
    ):
        with full_disk(ckpt.stat().st_size + 100), pytest.raises(OutputError, match=f"could not write .*{name}"):
            write()
    assert {p: p.read_bytes() for p in old} == old
    assert sorted(p.name for p in tmp_path.iterdir()) == ["latest.pt", "learning_curve.png"]  # no temporary left
