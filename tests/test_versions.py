"""Versions: ``barbu_v1`` / ``"Barbu-v1"`` are the current environment, the v0 names are
refused with what changed, ``barbu_env.__version__`` is the distribution's, and the
release files (CHANGELOG.md, CITATION.cff) agree with pyproject.toml."""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import gymnasium
import pytest
import yaml
from pettingzoo.utils.deprecated_module import DeprecatedEnv

import barbu_env
import barbu_env.envs.gym_env
from barbu_env import barbu_v1
from barbu_env.game.observation import OBS_DIM

ROOT = Path(__file__).resolve().parents[1]

#: What every refusal of v0 names: the current version and each change since v0.
CHANGES = ["924", "1132", "excluded", "episode"]


def assert_names_the_change(message: str, current: str) -> None:
    assert current in message
    for word in CHANGES:
        assert word in message, (word, message)


@pytest.mark.parametrize("make", ["env", "raw_env", "parallel_env"])
def test_barbu_v0_is_refused_with_what_changed(make):
    from barbu_env import barbu_v0

    with pytest.raises(DeprecatedEnv) as refused:
        getattr(barbu_v0, make)(rules="standard")
    assert_names_the_change(str(refused.value), "barbu_v1")
    assert isinstance(refused.value, ImportError)  # as PettingZoo's own deprecated modules raise


@pytest.mark.filterwarnings("ignore:.*out of date:DeprecationWarning")  # Gymnasium's own notice, then the refusal
def test_gymnasium_refuses_barbu_v0_with_what_changed():
    with pytest.raises(gymnasium.error.DeprecatedEnv) as refused:
        gymnasium.make("Barbu-v0", opponents="random")
    assert_names_the_change(str(refused.value), "Barbu-v1")


def test_barbu_v1_is_the_current_environment():
    assert barbu_v1.env is barbu_env.env
    assert barbu_v1.raw_env is barbu_env.raw_env
    env = barbu_v1.env(episode="hand")
    assert env.metadata["name"] == "barbu_v1"
    env.reset(seed=0)
    assert env.observe(env.agent_selection)["observation"].shape == (OBS_DIM,) == (1132,)


def test_version_is_the_installed_distributions():
    assert barbu_env.__version__ == importlib.metadata.version("barbu")


def project_version() -> str:
    match = re.search(r'^version = "([^"]+)"$', (ROOT / "pyproject.toml").read_text(), re.MULTILINE)
    assert match
    return match.group(1)


def test_changelog_leads_with_the_projects_version():
    releases = re.findall(r"^## \[([^\]]+)\]", (ROOT / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert releases[0] == project_version()
    assert "0.1.0" in releases


def test_citation_file_names_the_projects_version_and_licence():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert str(citation["version"]) == project_version()
    assert citation["license"] == "MIT"
