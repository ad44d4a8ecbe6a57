"""README.md and the documentation pages stay true: the README's first screen is the core
install, a game in ten lines and one ``barbu eval`` that runs (before the main job's ``.[dev]``
install), its test command is the one CI calls, its links resolve, and every command line the
README and docs/*.md show (the model cards included) parses with the real parser and names
files that exist. (The docs' Python examples run in tests/test_docs.py.)"""

from __future__ import annotations

import argparse
import importlib
import re
import shlex
from pathlib import Path

import pytest
from integration_extras import require

import barbu_env
from barbu_env.cli.main import COMMANDS

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
#: The pages whose commands are checked here: the README, the docs pages, the model cards they
#: include and the list of experiments.
CARDS = sorted(ROOT.glob("barbu_env/agents/pretrained/*.md"))
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *CARDS, ROOT / "experiments" / "README.md"]


def test_the_readme_example_plays_a_whole_game(capsys):
    blocks = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert blocks, "README.md has a Python example"
    namespace: dict = {}
    exec(compile(blocks[0], "README.md", "exec"), namespace)
    env = namespace["env"]
    assert isinstance(env.unwrapped, barbu_env.raw_env)
    assert env.unwrapped.game.is_terminal and sum(env.unwrapped.game.scores) == 0
    assert "[" in capsys.readouterr().out


def test_the_first_screen_installs_the_core_plays_and_evaluates_before_the_main_job():
    core = README.index("&& pip install .\n")
    game = README.index("```python")
    evaluation = re.search(r"```bash\n(barbu eval [^\n]*)\n```", README)
    main_job = README.index('-e ".[dev]"')
    assert evaluation and core < game < evaluation.start() < main_job
    assert len(README[: evaluation.end()].splitlines()) <= 50  # the first screen, about


def test_the_first_screens_evaluation_runs(capsys):
    """The quick start's ``barbu eval``, at 4 games in this process."""
    from barbu_env.cli.main import main

    command = re.search(r"```bash\n(barbu eval [^\n]*)\n```", README).group(1)
    words = re.sub(r"--games \d+", "--games 4", command).split()[1:]
    assert main([*words, "--workers", "1", "--no-progress"]) == 0
    assert "heuristic vs random" in capsys.readouterr().out


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_of_the_readme_resolves():
    for target in re.findall(r"\]\(([^)]+)\)", README):
        if target.startswith("https://"):
            continue
        path, _, anchor = target.partition("#")
        assert (ROOT / path).is_file(), target
        if anchor:
            headings = re.findall(r"^#+ (.*)$", (ROOT / path).read_text(), flags=re.M)
            assert anchor in {_anchor(h) for h in headings}, target


def test_the_readme_and_barbu_help_say_that_bench_runs_in_a_clone(capsys):
    """``benchmarks/`` is not installed: an installed copy refuses ``barbu bench`` outside a
    clone (tests/test_cli.py), and the README and ``barbu --help`` say so up front."""
    from barbu_env.cli.main import main

    assert re.search(r"`barbu bench` runs in a clone", README)
    with pytest.raises(SystemExit):
        main(["--help"])
    bench = re.search(r"\n +bench +(.*?)\n +train", capsys.readouterr().out, flags=re.S).group(1)
    assert "in a clone" in " ".join(bench.split())


def test_the_commands_name_files_that_exist():
    root = ROOT
    for page in PAGES:
        for path in re.findall(r"((?:experiments/)?configs/(?:[\w-]+/)?[\w-]+\.yaml)", page.read_text()):
            assert (root / path).exists(), f"{page.name}: {path}"
    assert "pip install -c constraints.txt" in README and (root / "constraints.txt").exists()
    ci = (root / ".ci" / "run").read_text()
    test_command = re.findall(r"```bash\n(.*?pytest)\n```", README)
    assert test_command and test_command[0] in ci


# ---------------------------------------------------------------------- every command line, parsed for real

#: Modules whose import needs an optional extra (their commands are parsed in .ci/run's integration step).
EXTRA_MODULES = {"examples.rllib_ppo": "ray.rllib", "examples.torchrl_ppo": "torchrl"}


def readme_commands() -> list[str]:
    """Every ``barbu ...`` and ``python -m ...`` command line the README and the docs pages
    show, in bash blocks (one per ``&&`` segment, comments dropped) or inline, with ``{a,b}``
    alternatives expanded and ``[optional ...]`` parts dropped."""
    found = []
    for page in PAGES:
        text = page.read_text()
        for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
            for line in block.splitlines():
                found += [seg.strip() for seg in re.split(r"&&", re.split(r"\s#", line)[0])]
        prose = re.sub(r"```.*?```", "", text, flags=re.S)
        found += [" ".join(code.split()) for code in re.findall(r"`([^`]+)`", prose)]
    commands = []
    for text in found:
        if not re.match(
            r"(barbu \w+|python -m (barbu_env|barbu_training|benchmarks|examples|experiments)\.[\w.]+)( |$)", text
        ):
            continue
        text = re.sub(r"\s*\[[^\]]*\]", "", text)  # optional parts
        alternatives = re.search(r"\{([^}]*)\}", text)
        options = alternatives.group(1).split(",") if alternatives else [None]
        commands += [text if o is None else text.replace(alternatives.group(0), o) for o in options]
    return sorted(set(commands))


class _Parsed(Exception):
    """Raised by the patched ``parse_args``: the command line parsed, nothing run."""


def _parse(command: str, monkeypatch) -> argparse.Namespace:
    """Parse ``command`` with the parser of the program it runs, stopping before it runs."""
    parse_args = argparse.ArgumentParser.parse_args

    def parse_only(self, args=None, namespace=None):
        raise _Parsed(parse_args(self, args, namespace))

    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", parse_only)
    words = shlex.split(command)
    if words[0] == "barbu":
        from barbu_env.cli.main import main
    else:
        main = importlib.import_module(words[2]).main
        words = words[2:]
    with pytest.raises(_Parsed) as parsed:
        main(words[1:])
    return parsed.value.args[0]


class _Parser(Exception):
    """Raised by the patched ``parse_args`` with the parser it was called on."""


def _declared_flags(name: str, monkeypatch) -> set[str]:
    """The options ``barbu NAME`` declares: its subparser's, or for a command that passes its
    options through (``train``, ``bench``) those of the program it runs."""

    def capture(self, args=None, namespace=None):
        raise _Parser(self)

    from barbu_env.cli.main import main

    with monkeypatch.context() as patch:
        patch.setattr(argparse.ArgumentParser, "parse_args", capture)
        with pytest.raises(_Parser) as caught:
            main([name])
    parser = caught.value.args[0]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction) and name in action.choices:
            parser = action.choices[name]
    return {option for action in parser._actions for option in action.option_strings}


def test_the_readme_and_docs_show_the_commands_this_test_parses():
    commands = readme_commands()
    assert {c.split()[1] for c in commands if c.startswith("barbu ")} == {
        "eval",
        "league",
        "replay",
        "train",
        "exploit",
        "bench",
        "play",
        "serve",
    }
    assert "barbu train --config configs/train/long.yaml" in commands  # {quick,default,long} expanded
    assert "python -m examples.rllib_ppo --iterations 20 --num-env-runners 2 --out runs/rllib" in commands


@pytest.mark.parametrize("command", [c for c in readme_commands() if not any(m in c for m in EXTRA_MODULES)])
def test_every_readme_command_parses_with_the_real_parser(command, monkeypatch):
    words = command.split()
    if words[0] == "barbu" and ("..." in words or all(w.startswith("--") for w in words[2:])):
        # a mention in prose (`barbu eval`, `barbu league --cache`, `barbu eval --rules ...`), not a
        # whole command line: the command exists and declares every flag shown
        assert words[1] in COMMANDS
        assert {w for w in words if w.startswith("--")} <= _declared_flags(words[1], monkeypatch), command
        return
    ns = _parse(command, monkeypatch)
    for flag in re.findall(r" --([\w-]+)", command):  # every flag shown is one the program declares
        assert hasattr(ns, flag.replace("-", "_")), flag


@pytest.mark.parametrize("command", [c for c in readme_commands() if any(m in c for m in EXTRA_MODULES)])
def test_every_readme_command_of_an_extra_parses_with_the_real_parser(command, monkeypatch):
    require(EXTRA_MODULES[shlex.split(command)[2]])
    ns = _parse(command, monkeypatch)
    for flag in re.findall(r" --([\w-]+)", command):
        assert hasattr(ns, flag.replace("-", "_")), flag
