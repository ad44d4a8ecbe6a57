"""What a stranger reads first holds: the landing page starts with the core install from a
clone and a few lines of code before the 1.8 GB `.[dev]` install, every speed ratio the
README and the landing page quote is one the benchmarks page measures (with its command),
and both give a BibTeX entry whose version is the package's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text()
INDEX = (ROOT / "docs" / "index.md").read_text()
BENCHMARKS = (ROOT / "docs" / "benchmarks.md").read_text()
VERSION = re.search(r'^version = "(.*)"$', (ROOT / "pyproject.toml").read_text(), flags=re.M).group(1)


def test_the_landing_page_installs_the_core_and_plays_before_the_dev_install():
    core = INDEX.index("pip install .\n")
    first_example = INDEX.index("```python")
    dev = INDEX.index('-e ".[dev]"')
    assert core < first_example < dev


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_every_speed_ratio_quoted_up_front_is_measured_on_the_benchmarks_page(page):
    text = (ROOT / page).read_text()
    ratios = re.findall(r"(\d+(?:\.\d+)?)×", text)
    assert ratios, f"{page} quotes no ratio"
    for ratio in ratios:
        assert re.search(rf"\b{re.escape(ratio)}×", BENCHMARKS), f"{page} says {ratio}×; docs/benchmarks.md does not"
    assert "python -m benchmarks.bench" in BENCHMARKS
    assert "faster than OpenSpiel's C++ card games do through Python" not in text  # what one env did not do


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_a_bibtex_entry_names_the_package_version(page):
    entry = re.search(r"```bibtex\n(@software\{barbu,.*?)\n```", (ROOT / page).read_text(), flags=re.S)
    assert entry, f"{page} has no BibTeX entry"
    assert f"version = {{{VERSION}}}" in entry.group(1)
    assert entry.group(1).count("{") == entry.group(1).count("}")
    cff = (ROOT / "CITATION.cff").read_text()
    assert f"version: {VERSION}" in cff


def test_no_page_or_hint_tells_a_user_to_install_barbu_from_a_package_index():
    """barbu is on no package index: ``pip install barbu`` or ``'barbu[x]'`` installs nothing
    (or someone else's package); every install line is the clone's form."""
    files = [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "docs").glob("tutorials/*.ipynb")),
    ]
    files += [*sorted((ROOT / "barbu_env").rglob("*.py")), *sorted((ROOT / "training").glob("*.py"))]
    files += [*sorted((ROOT / "benchmarks").glob("*.py")), *sorted((ROOT / "examples").glob("*.py"))]
    wrong = re.compile(r"pip install ['\"]?barbu(\[|\b(?!-\d))")
    found = [f"{path.relative_to(ROOT)}: {m.group(0)}" for path in files for m in wrong.finditer(path.read_text())]
    assert found == []
