"""``barbu train`` stopped for real, in a subprocess: Ctrl-C saves the last whole
iteration and exits with one line; ``kill -9`` loses at most one checkpoint period, and
``--resume`` carries on from the checkpoint."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from barbu_models.policy import load_checkpoint

ROOT = Path(__file__).resolve().parent.parent
TINY_CONFIG = """\
num_games: 2
episode: hand
num_workers: 1
torch_threads: 1
hidden: 32
card_embed: 4
minibatch_size: 512
update_epochs: 1
eval_every: 0
final_eval_games: 4
eval_opponents: random
baselines: random
progress: false
checkpoint_minutes: 0
"""
STARTUP_SECONDS = 120  # importing torch and compiling the kernels on a busy machine, then an iteration


def _start(tmp_path: Path, *flags: str) -> subprocess.Popen:
    config = tmp_path / "tiny.yaml"
    config.write_text(TINY_CONFIG)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "barbu_env.cli.main",
            "train",
            "--config",
            str(config),
            "--run-dir",
            str(tmp_path),
            *flags,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_default_sigint,
    )


def _default_sigint() -> None:
    """In the child, before the trainer starts: Ctrl-C's default action. A shell starts
    background commands (``.ci/run &``) with SIGINT ignored, and an ignored signal stays
    ignored across exec, so without this the trainer under test would never see Ctrl-C."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait_for_checkpoint(proc: subprocess.Popen, path: Path, iterations: int = 1) -> int:
    """Wait until ``path`` holds a checkpoint of at least ``iterations``; its iteration."""
    deadline = time.time() + STARTUP_SECONDS
    while time.time() < deadline:
        assert proc.poll() is None, proc.communicate()
        if path.exists():
            try:
                done = load_checkpoint(path)[1]["iteration"]
            except ValueError:  # being replaced as we read
                done = 0
            if done >= iterations:
                return done
        time.sleep(0.2)
    proc.kill()
    pytest.fail(f"no checkpoint after {STARTUP_SECONDS} s")


@pytest.mark.slow  # a trainer process to its first checkpoint
def test_ctrl_c_saves_the_last_whole_iteration_and_exits_with_one_line(tmp_path):
    proc = _start(tmp_path, "--exp-name", "cc", "--total-decisions", "1000000000")
    latest = tmp_path / "cc" / "checkpoints" / "latest.pt"
    seen = _wait_for_checkpoint(proc, latest)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=STARTUP_SECONDS)  # a hang guard: the iteration under way ends first
    assert proc.returncode == 130, err
    said = [line for line in err.splitlines() if not re.match(r"barbu train: +\d+% ", line)]  # not progress lines
    assert "Traceback" not in err and len(said) == 1, err
    saved = load_checkpoint(latest)[1]
    assert saved["iteration"] >= seen and f"iteration {saved['iteration']} saved in {latest}" in err
    assert "--resume" in err


@pytest.mark.slow  # 15 s: two trainer processes
def test_kill_9_loses_at_most_one_checkpoint_period_and_resume_carries_on(tmp_path):
    proc = _start(tmp_path, "--exp-name", "k9", "--total-decisions", "1000000000")
    latest = tmp_path / "k9" / "checkpoints" / "latest.pt"
    _wait_for_checkpoint(proc, latest, iterations=2)
    proc.kill()  # SIGKILL: no handler runs
    proc.communicate(timeout=60)
    saved = load_checkpoint(latest)[1]  # whole: checkpoints are written atomically
    assert saved["iteration"] >= 2  # with checkpoint_minutes 0, at most the iteration under way is lost
    target = saved["decisions"] + 1  # one more iteration
    resumed = _start(tmp_path, "--exp-name", "k9", "--total-decisions", str(target), "--resume", str(latest))
    out, err = resumed.communicate(timeout=STARTUP_SECONDS)
    assert resumed.returncode == 0, err
    after = load_checkpoint(latest)[1]
    assert after["iteration"] == saved["iteration"] + 1 and after["decisions"] >= target
    assert "best checkpoint" in out
