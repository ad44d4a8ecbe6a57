"""Rule switches and presets (docs/rules.md#variant-switches-and-presets): validation,
presets by name, YAML files, mappings; and docs/rules.md kept true (its switch table, its
worked example, its links)."""

from __future__ import annotations

import dataclasses
import doctest
import re
from pathlib import Path

import numpy as np
import pytest

from barbu_env.game.engine import BarbuState
from barbu_env.game.rules import Rules, RulesError, load_rules, preset_names, read_rules_file

SWITCHES = {f.name for f in dataclasses.fields(Rules)}
ROOT = Path(__file__).resolve().parent.parent
RULES_DOC = ROOT / "docs" / "rules.md"
#: What the switch table of docs/rules.md shows for a preset that keeps a switch's default.
KEEPS_DEFAULT = "·"


def test_defaults_are_the_standard_game():
    r = Rules()
    assert r.rotation == "seven_in_a_row"
    assert (r.trumps_must_overtrump, r.trumps_must_ruff, r.barbu_king_first_chance) == (True, True, False)
    assert (r.end_no_hearts_early, r.end_no_queens_early, r.end_barbu_early) == (False, True, True)
    assert (r.doubling_targets, r.redouble_pass, r.min_declarer_doubles) == ("anyone", False, 2)
    assert (r.no_tricks_points, r.no_hearts_points, r.no_hearts_ace_points) == (-2, -2, -6)
    assert (r.no_queens_points, r.barbu_points, r.no_last_two_points) == (-6, -20, (-10, -20))
    assert (r.trumps_points, r.domino_scores) == (5, (45, 20, 5, -5))


@pytest.mark.parametrize("make", [Rules.from_mapping, load_rules])
def test_unknown_switch_is_an_error_naming_it(make):
    with pytest.raises(RulesError, match="trumps_must_overruff"):
        make({"trumps_must_overruff": True})


@pytest.mark.parametrize(
    "switches, named",
    [
        ({"trumps_must_ruff": "yes"}, "trumps_must_ruff"),
        ({"doubling_targets": "everyone"}, "doubling_targets"),
        ({"no_last_two_points": [-10]}, "no_last_two_points"),
    ],
)
def test_bad_value_is_an_error_naming_the_switch(switches, named):
    with pytest.raises(RulesError, match=named):
        Rules.from_mapping(switches)
    with pytest.raises(RulesError, match=named):
        Rules(**switches)


def test_point_lists_become_tuples_and_equal_rules_hash_alike():
    r = Rules.from_mapping({"domino_scores": [50, 25, 0, -10], "no_last_two_points": [-15, -15]})
    assert r.domino_scores == (50, 25, 0, -10) and r.no_last_two_points == (-15, -15)
    assert hash(r) == hash(Rules.from_mapping(r.to_dict()))


#: Every switch each preset changes from the defaults, with its value: written here, not read from the files.
PRESET_CHANGES = {
    "standard": {},
    "classic": {
        "trumps_must_ruff": False,
        "barbu_king_first_chance": True,
        "end_no_hearts_early": True,
        "end_no_queens_early": False,
        "end_barbu_early": False,
    },
    "declarer_only": {
        "doubling_targets": "declarer_only",
        "min_declarer_doubles": 1,
        "no_last_two_points": [-15, -15],
        "domino_scores": [50, 25, 0, -10],
    },
    "rotating": {"rotation": "every_hand", "trumps_must_overtrump": False, "redouble_pass": True},
}


def test_named_presets_select_the_variants_they_describe():
    assert load_rules("standard") == Rules() == load_rules(None)
    assert preset_names() == sorted(PRESET_CHANGES)
    for name, changes in PRESET_CHANGES.items():
        assert load_rules(name).changes() == changes, name


def test_unknown_preset_is_an_error_listing_the_presets():
    with pytest.raises(RulesError, match="no_such_preset") as info:
        load_rules("no_such_preset")
    assert "standard" in str(info.value)


def test_a_mapping_selects_rules():
    assert load_rules({"rotation": "every_hand"}) == Rules(rotation="every_hand")
    assert load_rules({}) == Rules()
    s = BarbuState.new_game(rules={"rotation": "every_hand", "redouble_pass": True}, rng=np.random.default_rng(0))
    assert s.rules.rotation == "every_hand" and s.rules.redouble_pass is True


def test_a_yaml_file_path_loads_and_its_errors_name_the_file(tmp_path):
    good = tmp_path / "mine.yaml"
    good.write_text("description: mine\nrotation: every_hand\nmin_declarer_doubles: 0\n")
    assert load_rules(str(good)) == Rules(rotation="every_hand", min_declarer_doubles=0)
    bad = tmp_path / "bad.yaml"
    bad.write_text("rotaton: every_hand\n")
    with pytest.raises(RulesError, match="bad.yaml") as info:
        read_rules_file(bad)
    assert "rotaton" in str(info.value)
    not_a_mapping = tmp_path / "list.yaml"
    not_a_mapping.write_text("- rotation\n")
    with pytest.raises(RulesError, match="mapping"):
        read_rules_file(not_a_mapping)
    with pytest.raises(RulesError, match="missing.yaml not found"):
        load_rules(str(tmp_path / "missing.yaml"))


# ---------------------------------------------------------------------------- docs/rules.md


def _doc_value(value) -> str:
    """A switch value as the switch table of docs/rules.md writes it (YAML spelling)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


def _switch_table() -> tuple[list[str], list[list[str]]]:
    """Header cells and rows (cells without backticks) of the table whose first column is ``switch``."""
    lines = RULES_DOC.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("| switch |"))
    rows = []
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append([cell.strip().strip("`") for cell in line.strip("|").split("|")])
    header = [cell.strip().strip("`") for cell in lines[start].strip("|").split("|")]
    return header, rows


def test_the_switch_table_of_the_rules_doc_lists_every_switch_with_its_default_and_the_presets():
    header, rows = _switch_table()
    assert [row[0] for row in rows] == [f.name for f in dataclasses.fields(Rules)]
    assert header[1] == "default (`standard`)" and load_rules("standard") == Rules()
    presets = header[2:-1]
    assert set(presets) | {"standard"} == set(preset_names())
    default = Rules().to_dict()
    for row in rows:
        name = row[0]
        assert row[1] == _doc_value(default[name]), name
        for preset, cell in zip(presets, row[2:-1], strict=True):
            value = load_rules(preset).to_dict()[name]
            assert cell == (KEEPS_DEFAULT if value == default[name] else _doc_value(value)), (preset, name)


def test_the_examples_of_the_rules_doc_run_and_give_the_engines_numbers():
    failed, attempted = doctest.testfile(str(RULES_DOC), module_relative=False, verbose=False, report=False)
    assert attempted >= 5 and failed == 0


def _anchor(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_links_of_the_rules_doc_and_the_links_to_it_resolve():
    text = RULES_DOC.read_text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.*)$", text, flags=re.M)}
    for target in re.findall(r"\]\(([^)]+)\)", text):
        path, _, anchor = target.partition("#")
        if path:
            assert (RULES_DOC.parent / path).exists(), target
        else:
            assert anchor in anchors, target
    folders = ("barbu_env", "training", "models", "benchmarks", "examples", "tests")
    code = (p for d in folders for p in (ROOT / d).rglob("*.py"))
    sources = [ROOT / "README.md", *code]
    for source in sources:
        for anchor in re.findall(r"docs/rules\.md#([\w-]+)", source.read_text()):
            assert anchor in anchors, f"{source.relative_to(ROOT)}: docs/rules.md#{anchor}"
