"""``barbu league``: every pairing played once and cached, an antisymmetric margin matrix,
and ratings that recover the strengths the results were made from."""

from __future__ import annotations

import json
import subprocess
import sys
import zlib
from types import SimpleNamespace

import numpy as np
import pytest

from barbu_env.agents.belief import SHIPPED_MODEL
from barbu_env.agents.pretrained import pretrained_path
from barbu_env.cli.main import main
from barbu_env.evaluation.league import FORMATS, fit_ratings, format_league, run_league
from barbu_env.evaluation.tournament import SEATINGS, Estimate, evaluate
from barbu_env.game.rules import load_rules


class CountingEvaluate:
    """``tournament.evaluate``, counting its calls and keeping the tables it was given."""

    def __init__(self, inner=evaluate):
        self.inner = inner
        self.tables: list[tuple[str, ...]] = []
        self.results: list = []

    def __call__(self, agents, **kwargs):
        self.tables.append(tuple(agents))
        result = self.inner(agents, **kwargs)
        self.results.append(result)
        return result


def additive_evaluate(strength: dict[str, float], noise: float = 0.0):
    """A stand-in for ``evaluate`` whose scores follow the additive model: in every game an
    agent scores its strength minus the table's mean strength, plus normal noise (zero-sum
    per game); agents are named by spec, so checkpoint files need no loader."""

    def fake(agents, games, seed, rules=None, workers=None, progress=False):
        specs = list(agents)
        base = np.array([strength[s] for s in specs], dtype=np.float64)
        base -= base.mean()
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
    assert np.all(ratings.se < 30.0)
    assert np.all(np.abs(ratings.rating - (true - true.mean())) < 3 * ratings.se)


def test_ratings_recover_known_strengths_through_the_league():
    strength = {"strong": 100.0, "middle": 0.0, "weak": -50.0}
    league = run_league(list(strength), games=80, seed=1, evaluate_fn=additive_evaluate(strength, noise=150.0))
    fitted = dict(zip(league.specs, league.ratings.rating))
    assert [league.specs[k] for k in league.order()] == ["strong", "middle", "weak"]
    for name, value in strength.items():
        assert fitted[name] == pytest.approx(value - 50.0 / 3, abs=20.0)


def test_non_additive_results_widen_the_rating_intervals():
    e = lambda m: Estimate(m, 10.0, None, 20)  # noqa: E731
    consistent = fit_ratings(3, [(0, 1, e(100.0)), (1, 2, e(50.0)), (0, 2, e(150.0))])
    cycle = fit_ratings(3, [(0, 1, e(100.0)), (1, 2, e(100.0)), (2, 0, e(100.0))])  # each beats the next
    assert consistent.chi2 == pytest.approx(0.0, abs=1e-9)
    assert np.allclose(cycle.rating, 0.0) and cycle.chi2 > 100
    assert np.all(cycle.se > 5 * consistent.se)


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
    assert "Ratings" in printed and "3 formats played, 0 read from the cache" in printed
    data = json.loads(out.read_text())
    assert [r["label"] for r in data["ratings"]] == ["heuristic", "random"]  # best first
    assert (
        data["ratings"][0]["rating"] == pytest.approx(-data["ratings"][1]["rating"])
        and data["ratings"][0]["rating"] > 0
    )
    assert set(data["matrix"]["heuristic"]["random"]) == {"combined", *FORMATS}
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(list(cache.glob("*.json"))) == len(FORMATS)
    assert main(argv[:-7] + ["--cache", str(cache), "--no-progress"]) == 0
    assert "0 formats played, 3 read from the cache" in capsys.readouterr().out


def test_the_command_rejects_a_league_of_one(capsys):
    assert main(["league", "--agents", "random", "--games", "4", "--no-cache", "--no-progress"]) == 1
    assert "at least two agents" in capsys.readouterr().err


def test_a_negative_seed_is_refused_before_any_format_is_played():
    counting = CountingEvaluate(additive_evaluate({"a": 1.0, "b": -1.0}))
    with pytest.raises(ValueError, match="seed must be non-negative"):
        run_league(["a", "b"], games=4, seed=-1, evaluate_fn=counting)
    assert counting.tables == []


def test_the_table_names_every_agent_and_format():
    league = run_league(["a", "b", "c"], games=8, evaluate_fn=additive_evaluate({"a": 1, "b": 0, "c": -1}, 5.0))
    text = format_league(league)
    for word in ("a vs b", "a vs c", "b vs c", "1v3", "3v1", "2v2", "combined"):
        assert word in text


def test_the_league_module_loads_neither_torch_nor_pettingzoo():
    code = (
        "import sys, barbu_env.evaluation.league\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'pettingzoo')))"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout == "[]\n"


def test_a_shipped_policy_is_keyed_by_its_weights_so_a_new_one_is_played_again(tmp_path, monkeypatch):
    from barbu_env.evaluation import league

    weights = tmp_path / "ppo.pt"
    weights.write_bytes(b"one")
    monkeypatch.setattr(league, "pretrained_path", lambda name: weights)
    rules = load_rules("standard")
    before = league.cache_key(["ppo", "heuristic", "heuristic", "heuristic"], 4, 0, rules)
    weights.write_bytes(b"two")
    after = league.cache_key(["ppo", "heuristic", "heuristic", "heuristic"], 4, 0, rules)
    assert before != after and before["agents"][1:] == after["agents"][1:]


def test_a_league_names_the_agents_listed_twice():
    from barbu_env.evaluation.league import check_league_specs

    with pytest.raises(ValueError, match=r"^agents are listed more than once: \['random', 'pimc'\]$"):
        check_league_specs(["random", "pimc", "heuristic", "random", "pimc"] + [f"x{i}" for i in range(40)])


@pytest.mark.parametrize(
    "first, second",
    [
        ("pimc", "pimc:worlds=32"),  # a default written out
        ("pimc:worlds=8", "pimc:worlds=08"),
        ("pimc:worlds=8,rollout=random", "pimc:rollout=random,worlds=8"),
        ("heuristic:double_margin=1", "heuristic:double_margin=1.0"),
        ("FILE", "./sub/../FILE"),
        ("FILE", "LINK"),
        ("FILE", "HARD"),
        ("FILE", "FILE:deterministic=true,device=cpu"),  # the loaders' default; where it computes
        ("ppo", "SHIPPED"),  # a shipped policy's name and its checkpoint
        ("ppo", "ppo:trust=false"),
        ("pimc-ppo:rollout=ppo", "pimc-ppo:rollout=SHIPPED"),  # an agent named in a parameter
        ("pimc-ppo", "pimc-ppo:rollout=FINETUNED"),  # the default agent, by its file
        ("pimc:rollout=FILE", "pimc:rollout=LINK"),
        ("pimc:worlds_from=belief", "pimc:worlds_from=BELIEF"),  # the shipped belief network, by its file
        ("heuristic-cautious", "heuristic:double_margin=6.0,redouble_margin=6"),  # a name for other defaults
        ("pimc-ppo", "pimc-ppo:prior=ppo-finetuned"),  # the prior is the rollout policy unless given
        ("pimc-ppo", "pimc:rollout=ppo-finetuned,prior=ppo-finetuned"),
        ("pimc-ppo:rollout=ppo", "pimc-ppo:prior=ppo,rollout=ppo"),
        ("pimc-ppo", "pimc-ppo:prior=none"),  # none: the rollout policy
    ],
)
def test_a_league_refuses_one_agent_spelt_two_ways_before_any_is_made(first, second, tmp_path, monkeypatch):
    from barbu_env.evaluation.league import check_league_specs

    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    (tmp_path / "FILE").write_bytes(b"not a checkpoint: nothing is loaded")
    (tmp_path / "LINK").symlink_to(tmp_path / "FILE")
    (tmp_path / "HARD").hardlink_to(tmp_path / "FILE")
    shipped = {
        "SHIPPED": pretrained_path("ppo"),
        "FINETUNED": pretrained_path("ppo-finetuned"),
        "BELIEF": SHIPPED_MODEL,
    }
    for word, path in shipped.items():
        second = second.replace(word, str(path))
    with pytest.raises(ValueError, match=r"are one agent spelt two ways .*: list it once$"):
        check_league_specs([first, "random", second])
    different = ["pimc:worlds=8", "pimc:worlds=9", "pimc:certain=1", "pimc", "ppo", "ppo:deterministic=false"]
    different += ["pimc:rollout=ppo", "pimc:rollout=ppo-finetuned", "pimc:worlds_from=belief", "pimc-ppo"]
    different += ["heuristic", "heuristic-cautious", "heuristic-cautious:double_margin=0", "pimc-ppo:prior=ppo"]
    assert check_league_specs(["pimc-ppo:prior=none", "pimc:rollout=ppo-finetuned"])  # pimc has no prior by default
    assert check_league_specs([*different, "FILE", "FILE:deterministic=false"])


def test_a_league_refuses_agents_nested_deeper_than_it_reads_in_one_line():
    from barbu_env.agents.registry import MAX_NESTING
    from barbu_env.evaluation.league import check_league_specs

    deep = "pimc:rollout=" * 10_000 + "random"  # each level read as an agent
    with pytest.raises(ValueError, match=f"nest at most {MAX_NESTING} deep$") as refused:
        check_league_specs([deep, "random"])
    assert len(str(refused.value)) < 200
    assert check_league_specs(["pimc:rollout=" * MAX_NESTING + "random", "random"])


def test_a_checkpoint_named_in_a_parameter_is_played_again_once_it_changes(tmp_path):
    model = tmp_path / "guide.pt"
    spec = f"pimc:worlds=1,rollout={model}"
    assert _formats_played_as_a_checkpoint_changes(spec, model, tmp_path / "cache") == [3, 0, 3]


@pytest.mark.parametrize("kind", ["folder", "file"])
def test_a_league_refuses_a_file_no_loader_takes_before_hashing_it_for_the_cache(kind, tmp_path, monkeypatch):
    from barbu_env.evaluation import league

    target = tmp_path / ("not-a-checkpoint" if kind == "folder" else "disk.iso")
    if kind == "folder":
        target.mkdir()
        (target / "data.bin").write_bytes(b"x")
    else:
        target.write_bytes(b"x" * 1000)
    hashed = []
    monkeypatch.setattr(league, "_read_hash", lambda path: hashed.append(path) or "0")
    with pytest.raises(ValueError, match="no loader handles the file"):
        run_league([str(target), "random"], games=4, cache_dir=tmp_path / "cache", evaluate_fn=CountingEvaluate(None))
    assert hashed == []


def test_a_league_hashes_each_file_once_and_no_folder_named_like_a_registered_agent(tmp_path, monkeypatch):
    from barbu_env.evaluation import league

    monkeypatch.chdir(tmp_path)
    (tmp_path / "heuristic").mkdir()  # make_agent("heuristic") is the registered agent, not this folder
    (tmp_path / "heuristic" / "big.bin").write_bytes(b"x")
    checkpoint = tmp_path / "model.pt"
    checkpoint.write_bytes(pretrained_path("ppo").read_bytes())
    hashed = []
    monkeypatch.setattr(league, "_read_hash", lambda path: hashed.append(path.name) or "0")
    play = additive_evaluate({"heuristic": 1.0, str(checkpoint): 0.0, "random": -1.0})
    run_league(
        ["heuristic", str(checkpoint), "random"],
        games=4,
        cache_dir=tmp_path / "cache",
        evaluate_fn=CountingEvaluate(play),
    )
    assert sorted(hashed) == ["model.pt"]
