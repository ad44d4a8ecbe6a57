"""README.md stays true: its Python example runs, and its commands name real configs."""

from __future__ import annotations

import re
from pathlib import Path

import barbu_env

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def test_the_readme_example_plays_a_whole_game(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README.md has a Python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    env = namespace["env"]
    assert isinstance(env.unwrapped, barbu_env.raw_env)
    assert env.unwrapped.game.is_terminal and sum(env.unwrapped.game.scores) == 0
    assert "[" in capsys.readouterr().out


def test_the_readme_commands_name_files_that_exist():
    root = Path(__file__).resolve().parent.parent
    for path in re.findall(r"(configs/\w+/\w+\.yaml)", README):
        assert (root / path).exists(), path
    assert "pip install -c constraints.txt" in README and (root / "constraints.txt").exists()
    ci = (root / ".ci" / "run").read_text()
    test_command = re.findall(r"```bash\n(.*?pytest)\n```", README)
    assert test_command and test_command[0] in ci
