"""``barbu league``: every pairing played once and cached (played again when an agent's code
or weights change, or its entry does not load), an antisymmetric margin matrix, and
ratings that recover the strengths the results were made from."""

from __future__ import annotations

import json
import sys
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from barbu_env.agents.pretrained import pretrained_path
from barbu_env.cli.main import main
from barbu_env.evaluation.league import FORMATS, check_league_specs, fit_ratings, format_league, run_league
from barbu_env.evaluation.tournament import SEATINGS, Estimate, evaluate

AGENT = """
from barbu_env.agents.heuristic import HeuristicAgent


class Ducker(HeuristicAgent):
    def __init__(self, seed=0, rules=None):
        super().__init__(seed=seed, rules=rules, double_margin={margin})
"""


class CountingEvaluate:
    """``tournament.evaluate``, counting its calls and keeping the tables it was given."""

    def __init__(self, inner=evaluate):
        self.inner = inner
        self.tables: list[tuple[str, ...]] = []
        self.results: list = []

    def __call__(self, agents, **kwargs):
        self.tables.append(tuple(str(a) for a in agents))
        result = self.inner(agents, **kwargs)
        self.results.append(result)
        return result


def margin_evaluate(margin, noise: float = 0.0):
    """A stand-in for ``evaluate`` in which agent a outscores agent b by ``margin(a, b)`` per
    game at any table (each a scores its share of it: 3/4 alone against three bs, 1/4 each
    of three against one b), plus normal noise (zero-sum per game); agents are named by
    spec, so checkpoint files need no loader."""

    def fake(agents, games, seed, rules=None, workers=None, progress=False):
        specs = [str(a) for a in agents]
        a, b = specs[0], next(s for s in specs if s != specs[0])
        m, n_a = margin(a, b), specs.count(a)
        base = np.array([m * (SEATINGS - n_a) / SEATINGS if s == a else -m * n_a / SEATINGS for s in specs])
        rng = np.random.default_rng([seed, zlib.crc32(",".join(specs).encode())])
        rows = []
        for g in range(-(-games // SEATINGS) * SEATINGS):
            rotation = g % SEATINGS
            e = rng.normal(0.0, noise, SEATINGS)
            by_agent = base + e - e.mean()
            seats = [by_agent[(s - rotation) % SEATINGS] for s in range(SEATINGS)]
            rows.append({"game": g, "deal_set": g // SEATINGS, "seating": rotation, "scores": seats})
        return SimpleNamespace(specs=specs, game_table=rows)

    return fake


def additive_evaluate(strength: dict[str, float], noise: float = 0.0):
    """``margin_evaluate`` of the additive model: a outscores b by strength[a] - strength[b]."""
    return margin_evaluate(lambda a, b: strength[a] - strength[b], noise)


def table_evaluate(margins: dict[tuple[str, str], float], noise: float = 100.0):
    """``margin_evaluate`` from a head-to-head table (each pair listed once)."""
    return margin_evaluate(lambda a, b: margins[a, b] if (a, b) in margins else -margins[b, a], noise)


# ---------------------------------------------------------------------- caching


def test_a_second_run_plays_only_the_new_pairings(tmp_path):
    cache = tmp_path / "cache"
    first = CountingEvaluate()
    a = run_league(["random", "heuristic"], games=4, seed=5, cache_dir=cache, workers=1, evaluate_fn=first)
    assert len(first.tables) == len(FORMATS) and (a.played, a.cached) == (3, 0)
    assert set(first.tables) == {
        ("heuristic", "random", "random", "random"),
        ("random", "heuristic", "heuristic", "heuristic"),
        ("heuristic", "random", "heuristic", "random"),
    }

    second = CountingEvaluate()
    specs = ["random", "heuristic", "heuristic-cautious"]
    b = run_league(specs, games=4, seed=5, cache_dir=cache, workers=1, evaluate_fn=second)
    assert len(second.tables) == 2 * len(FORMATS) and (b.played, b.cached) == (6, 3)
    assert all("heuristic-cautious" in table for table in second.tables)
    assert b.margin(0, 1).mean == a.margin(0, 1).mean  # the cached pairing, read back

    third = CountingEvaluate()
    c = run_league(list(reversed(specs)), games=4, seed=5, cache_dir=cache, workers=1, evaluate_fn=third)
    assert third.tables == [] and c.cached == 9  # the order of the agents does not matter

    other_seed = CountingEvaluate()
    run_league(["random", "heuristic"], games=4, seed=6, cache_dir=cache, workers=1, evaluate_fn=other_seed)
    assert len(other_seed.tables) == 3


def _formats_played_as_a_checkpoint_changes(spec: str, model, cache) -> list[int]:
    """The formats a league of ``spec`` and ``random`` plays, run three times: the file
    ``model`` holds one checkpoint, the same again, then another (real checkpoints: a
    file is loaded before its bytes are hashed)."""
    v1, v2 = pretrained_path("ppo").read_bytes(), pretrained_path("ppo-finetuned").read_bytes()
    play = additive_evaluate({spec: 10.0, "random": -10.0})
    runs = []
    for content in (v1, v1, v2):
        model.write_bytes(content)
        counting = CountingEvaluate(play)
        run_league([spec, "random"], games=4, cache_dir=cache, evaluate_fn=counting)
        runs.append(len(counting.tables))
    return runs


def test_a_changed_checkpoint_file_is_played_again(tmp_path):
    model = tmp_path / "model.pt"
    assert _formats_played_as_a_checkpoint_changes(str(model), model, tmp_path / "cache") == [3, 0, 3]


def test_without_a_cache_folder_everything_is_played():
    play = additive_evaluate({"a": 1.0, "b": 0.0, "c": -1.0})
    for _ in range(2):
        counting = CountingEvaluate(play)
        run_league(["a", "b", "c"], games=4, evaluate_fn=counting)
        assert len(counting.tables) == 9


# ---------------------------------------------------------------------- margins


def test_margins_are_the_tournaments_head_to_head_differences():
    counting = CountingEvaluate()
    league = run_league(["random", "heuristic"], games=8, seed=2, workers=1, evaluate_fn=counting)
    for table, result in zip(counting.tables, counting.results):
        fmt = next(f for f, t in FORMATS.items() if [("heuristic", "random")[x] for x in t] == list(table))
        h2h = result.head_to_head[0]  # entries in order of first appearance: table[0]'s spec first
        sign = 1.0 if table[0] == "heuristic" else -1.0
        ours = league.pairings[0].formats[fmt].estimate
        assert league.specs[league.pairings[0].a] == "heuristic"
        assert ours.mean == pytest.approx(sign * h2h.difference.mean)
        assert ours.se == pytest.approx(h2h.difference.se)


def test_the_matrix_is_antisymmetric_in_every_format():
    play = additive_evaluate({"a": 100.0, "b": 0.0, "c": -50.0}, noise=80.0)
    league = run_league(["a", "b", "c"], games=16, evaluate_fn=play)
    m = league.matrix()
    off = ~np.eye(3, dtype=bool)
    assert np.allclose((m + m.T)[off], 0.0) and np.all(m[off] != 0)
    for i in range(3):
        for j in range(3):
            if i == j:
                continue
            assert league.margin(i, j, "1v3").mean == -league.margin(j, i, "3v1").mean
            assert league.margin(i, j, "2v2").mean == -league.margin(j, i, "2v2").mean
            lo, hi = league.margin(i, j).ci95
            assert (lo, hi) == tuple(-x for x in reversed(league.margin(j, i).ci95))


# ---------------------------------------------------------------------- ratings


def test_ratings_recover_known_strengths_from_noisy_margins():
    true = np.array([100.0, 0.0, -50.0])
    rng = np.random.default_rng(0)
    margins = []
    for a in range(3):
        for b in range(a + 1, 3):
            per_set = true[a] - true[b] + rng.normal(0.0, 150.0, 40)
            margins.append((a, b, Estimate.of(per_set)))
    ratings = fit_ratings(3, margins)
    assert ratings.rating.sum() == pytest.approx(0.0, abs=1e-9)
    assert np.all(np.abs(ratings.rating - (true - true.mean())) < 60.0) and ratings.fits


def test_ratings_recover_known_strengths_through_the_league():
    strength = {"strong": 100.0, "middle": 0.0, "weak": -50.0}
    league = run_league(list(strength), games=80, seed=1, evaluate_fn=additive_evaluate(strength, noise=150.0))
    fitted = dict(zip(league.specs, league.ratings.rating))
    assert [league.specs[k] for k in league.order()] == ["strong", "middle", "weak"]
    for name, value in strength.items():
        assert fitted[name] == pytest.approx(value - 50.0 / 3, abs=20.0)


def test_non_additive_results_fail_the_fit():
    e = lambda m: Estimate(m, 10.0, None, 20)  # noqa: E731
    consistent = fit_ratings(3, [(0, 1, e(100.0)), (1, 2, e(50.0)), (0, 2, e(150.0))])
    cycle = fit_ratings(3, [(0, 1, e(100.0)), (1, 2, e(100.0)), (2, 0, e(100.0))])  # each beats the next
    assert consistent.chi2 == pytest.approx(0.0, abs=1e-9) and consistent.fits
    assert np.allclose(cycle.rating, 0.0) and cycle.chi2 > 100 and not cycle.fits


#: The issue's league: ppo beats both heuristics, but the plain heuristic crushes the two
#: weak agents by more than anyone, so least squares rates it first.
CRUSHER = {
    ("ppo", "heuristic"): 544.0,
    ("ppo", "cautious"): 299.0,
    ("cautious", "heuristic"): 200.0,
    ("ppo", "random"): 1191.0,
    ("ppo", "mine"): 900.0,
    ("cautious", "random"): 1400.0,
    ("cautious", "mine"): 1300.0,
    ("heuristic", "random"): 2400.0,
    ("heuristic", "mine"): 2400.0,
    ("random", "mine"): 100.0,
}
AGENTS = ("random", "heuristic", "cautious", "ppo", "mine")


def _shown(league):
    return {r["label"]: r["rating"]["mean"] for r in league.to_dict()["ratings"] if r["rating"] is not None}


def test_standings_and_shown_ratings_never_contradict_a_significant_head_to_head():
    league = run_league(list(AGENTS), games=32, evaluate_fn=table_evaluate(CRUSHER))
    rating, points = dict(zip(league.labels, league.rating())), dict(zip(league.labels, league.ratings.rating))
    assert rating["heuristic"] > rating["ppo"] and points["heuristic"] > points["ppo"]  # both contradict ppo's +544
    assert [league.labels[k] for k in league.order()] == ["ppo", "cautious", "heuristic", "random", "mine"]
    shown = _shown(league)
    assert league.contradicted() == [] and not {"ppo", "cautious", "heuristic"} & set(shown)
    for i, j in zip(*np.nonzero(league.beats())):
        a, b = league.labels[i], league.labels[j]
        assert a not in shown or b not in shown or shown[a] > shown[b]


def test_a_significant_cycle_is_named_not_ranked():
    cycle = {("a", "b"): 300.0, ("b", "c"): 300.0, ("c", "a"): 300.0}
    below = {(x, "d"): 500.0 for x in "abc"}
    league = run_league(list("abcd"), games=32, evaluate_fn=table_evaluate(cycle | below))
    data = league.to_dict()
    assert [s["agents"] for s in data["standings"]] == [["a", "b", "c"], ["d"]]
    assert data["standings"][0]["cycle"] == ["a", "b", "c"] and set(_shown(league)) == {"d"}
    assert "cycle, not ranked among themselves: a beats b" in format_league(league)


def test_a_poor_fit_is_shown_with_a_warning_and_a_good_one_without():
    poor = run_league(list(AGENTS), games=32, evaluate_fn=table_evaluate(CRUSHER))
    good = run_league(list("abc"), games=32, evaluate_fn=additive_evaluate({"a": 300, "b": 0, "c": -200}, 100.0))
    assert not poor.ratings.fits and good.ratings.fits
    assert "warning: the margins are not additive" in format_league(poor)
    assert "degrees of freedom, p = " in format_league(good) and "warning" not in format_league(good)


def test_ratings_need_connected_pairings():
    e = Estimate(10.0, 1.0, None, 4)
    with pytest.raises(ValueError, match="connect"):
        fit_ratings(4, [(0, 1, e), (2, 3, e)])


# ---------------------------------------------------------------------- the command


def test_the_command_writes_the_table_json_and_heatmap(tmp_path, capsys):
    out, plot, cache = tmp_path / "league.json", tmp_path / "league.png", tmp_path / "cache"
    argv = ["league", "--agents", "random,heuristic", "--games", "4", "--seed", "3", "--workers", "1"]
    argv += ["--cache", str(cache), "--out", str(out), "--plot", str(plot), "--no-progress"]
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "Standings" in printed and "3 formats played, 0 read from the cache" in printed
    data = json.loads(out.read_text())
    assert [r["label"] for r in data["ratings"]] == ["heuristic", "random"]  # best first
    assert (
        data["ratings"][0]["rating"]["mean"] == pytest.approx(-data["ratings"][1]["rating"]["mean"])
        and data["ratings"][0]["rating"]["mean"] > 0
    )
    assert set(data["matrix"]["heuristic"]["random"]) == {"combined", *FORMATS}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list(cache.glob("*.json"))) == len(FORMATS)
    assert main(argv[:-7] + ["--cache", str(cache), "--no-progress"]) == 0
    assert "0 formats played, 3 read from the cache" in capsys.readouterr().out


def test_the_command_rejects_a_league_of_one(capsys):
    assert main(["league", "--agents", "random", "--games", "4", "--no-cache", "--no-progress"]) == 1
    assert "at least two agents" in capsys.readouterr().err


def test_the_table_names_every_agent_and_format():
    league = run_league(["a", "b", "c"], games=8, evaluate_fn=additive_evaluate({"a": 1, "b": 0, "c": -1}, 5.0))
    text = format_league(league)
    for word in ("a vs b", "a vs c", "b vs c", "1v3", "3v1", "2v2", "combined"):
        assert word in text


def test_a_checkpoint_named_in_a_parameter_is_played_again_once_it_changes(tmp_path):
    model = tmp_path / "guide.pt"
    spec = f"pimc:worlds=1,rollout={model}"
    assert _formats_played_as_a_checkpoint_changes(spec, model, tmp_path / "cache") == [3, 0, 3]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("pimc", "pimc:worlds=32"),  # a default written out
        ("pimc:worlds=8,rollout=random", "pimc:rollout=random,worlds=8"),
        ("heuristic:double_margin=1", "heuristic:double_margin=1.0"),
        ("ppo", "ppo:device=cpu,trust=false"),  # where it computes, whether it may load
    ],
)
def test_a_league_refuses_one_agent_listed_twice_however_it_is_spelt(first, second):
    with pytest.raises(ValueError, match=r"are one agent: list it once$"):
        check_league_specs([first, "random", second])
    assert check_league_specs(["pimc:worlds=8", "pimc:worlds=9", "pimc", "heuristic", "heuristic-cautious"])


@pytest.mark.parametrize(
    "edited", [pytest.param(e, marks=pytest.mark.slow) for e in ("mine_edited.py", "mine_helper.py")]
)
def test_an_agent_whose_code_or_its_helpers_code_changes_is_played_again(edited, tmp_path, monkeypatch):
    (tmp_path / "mine_edited.py").write_text("import mine_helper\n" + AGENT.format(margin="mine_helper.MARGIN"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in ("mine_edited", "mine_helper"):
        monkeypatch.delitem(sys.modules, module, raising=False)
    spec, cache = "mine_edited:Ducker", tmp_path / "cache"
    play = additive_evaluate({spec: 10.0, "random": -10.0})
    runs = []
    for margin in (0.0, 0.0, 25.0):
        (tmp_path / "mine_helper.py").write_text(f"MARGIN = {margin if edited == 'mine_helper.py' else 0.0}\n")
        if edited == "mine_edited.py":
            (tmp_path / edited).write_text(
                f"import mine_helper  # {margin}\n" + AGENT.format(margin="mine_helper.MARGIN")
            )
        counting = CountingEvaluate(play)
        run_league([spec, "random"], games=4, cache_dir=cache, evaluate_fn=counting)
        runs.append(len(counting.tables))
    assert runs == [3, 0, 3]


def test_a_damaged_cache_entry_is_played_again_and_an_untouched_one_read_back(tmp_path):
    cache = tmp_path / "cache"
    play = additive_evaluate({"a": 5.0, "b": -5.0}, noise=20.0)
    first = run_league(["a", "b"], games=8, cache_dir=cache, evaluate_fn=play)
    entries = sorted(cache.glob("*.json"))
    entries[0].write_text(entries[0].read_text()[:100])  # cut short
    entries[1].write_bytes(b"\xff\x00")  # not JSON
    counting = CountingEvaluate(play)
    again = run_league(["a", "b"], games=8, cache_dir=cache, evaluate_fn=counting)
    assert (again.played, again.cached) == (2, 1) and len(counting.tables) == 2
    np.testing.assert_array_equal(again.matrix(), first.matrix())
    assert run_league(["a", "b"], games=8, cache_dir=cache, evaluate_fn=CountingEvaluate(None)).cached == 3


def test_a_cache_that_cannot_be_written_leaves_the_league_whole(tmp_path):
    cache = tmp_path / "cache"
    cache.write_text("a file where the folder should be")
    league = run_league(["a", "b"], games=4, cache_dir=cache, evaluate_fn=additive_evaluate({"a": 1, "b": -1}))
    assert league.played == 3 and "3 pairing results not cached" in league.cache_not_saved
