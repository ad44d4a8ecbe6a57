"""The documentation's code examples run: every ```` ```python ```` block of docs/*.md (and of the
model cards the docs include) is executed, each in a fresh namespace, in a scratch directory;
a block written as an interactive session (``>>>``) runs as a doctest, its outputs compared.

A block that cannot run here (a GPU, a long run) says so on the line just before it, a MyST
comment that the built pages do not show: ``% not-run: <why>``. Blocks that import an
optional RL-library extra (ray, torchrl) are skipped without it, and fail under
``BARBU_REQUIRE_INTEGRATIONS=1`` as the other integration tests do (tests/integration_extras.py).
The site itself is built by .ci/run: ``sphinx-build -W --keep-going -b html docs docs/_build/html``.
"""

from __future__ import annotations

import doctest
import re
from pathlib import Path

import pytest
from integration_extras import require

ROOT = Path(__file__).resolve().parent.parent
PAGES = [*sorted((ROOT / "docs").glob("*.md")), *sorted(ROOT.glob("barbu_env/agents/pretrained/*.md"))]
#: The marker of a block that is shown but not run, on the line just before its fence.
NOT_RUN = re.compile(r"^% not-run: *(.*)$")
#: Top-level packages of the optional extras whose blocks are skipped when the extra is missing.
EXTRA_PACKAGES = {"ray": "ray.rllib", "torchrl": "torchrl", "tianshou": "tianshou", "supersuit": "supersuit"}
#: At most this many blocks may be left unrun: the examples are meant to be run.
MAX_NOT_RUN = 3


def python_blocks(page: Path) -> list[tuple[int, str, str | None]]:
    """The page's ```python blocks as (line number, code, reason not to run it or None)."""
    lines = page.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start = i + 1
            end = next(j for j in range(start, len(lines)) if lines[j].strip() == "```")
            marker = NOT_RUN.match(lines[i - 1].strip()) if i else None
            blocks.append((start, "\n".join(lines[start:end]) + "\n", marker.group(1).strip() if marker else None))
            i = end
        i += 1
    return blocks


BLOCKS = [(page, line, code, why) for page in PAGES for line, code, why in python_blocks(page)]


def test_the_docs_have_examples_and_few_are_left_unrun():
    pages = {page.name for page, *_ in BLOCKS}
    assert {"environment.md", "gym.md", "vector.md", "agents.md", "integrations.md"} <= pages
    unrun = [(page.name, line, why) for page, line, _, why in BLOCKS if why is not None]
    assert all(why for *_, why in unrun), f"a not-run block must say why: {unrun}"
    assert len(unrun) <= MAX_NOT_RUN, unrun


@pytest.mark.parametrize(
    ("page", "line", "code", "why"),
    [pytest.param(*block, id=f"{block[0].name}:{block[1]}") for block in BLOCKS],
)
def test_every_docs_python_example_runs(page, line, code, why, tmp_path, monkeypatch):
    if why is not None:
        pytest.skip(f"marked not-run: {why}")
    for package, module in EXTRA_PACKAGES.items():
        if re.search(rf"^\s*(import|from) {package}\b", code, flags=re.M):
            require(module)
    monkeypatch.chdir(tmp_path)  # examples that save files write them here
    name = f"{page.relative_to(ROOT)}:{line}"
    if code.lstrip().startswith(">>>"):  # an interactive session: its outputs are checked too
        test = doctest.DocTestParser().get_doctest(code, {"__name__": "__docs__"}, name, str(page), line)
        runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        runner.run(test, out=lambda text: None)
        assert runner.failures == 0, f"{name}: {runner.failures} of {runner.tries} examples differ"
    else:
        exec(compile(code, name, "exec"), {"__name__": "__docs__"})
