"""The docs pages that carry a module's docstring as Markdown (docs/docstring_to_md.py) are
up to date with it, so that the repository's reader sees what the built site shows."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("docutils")  # the docs extra (in dev)

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("docstring_to_md", ROOT / "docs" / "docstring_to_md.py")
docstring_to_md = importlib.util.module_from_spec(spec)
spec.loader.exec_module(docstring_to_md)


def test_the_environment_pages_show_their_docstrings_as_written():
    assert docstring_to_md.stale_pages() == [], "run: python docs/docstring_to_md.py"


def test_the_environment_page_has_the_observation_table_in_markdown():
    page = (ROOT / "docs" / "environment.md").read_text()
    assert "automodule:: barbu_env.envs.aec" not in page
    assert "| slice | shape | meaning |" in page and "| excluded | 4 x 52 |" in page
    assert "### Version history" in page


def test_a_docstring_table_with_a_header_becomes_a_markdown_table():
    text = "Title\n-----\n\n=====  =====\nids    meaning\n=====  =====\n0-51   play ``a|b``\n=====  =====\n"
    expected = "### Title\n\n| ids | meaning |\n|---|---|\n| 0-51 | play `a\\|b` |\n"
    assert docstring_to_md.to_markdown(text, 3) == expected
