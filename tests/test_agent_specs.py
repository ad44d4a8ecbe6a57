"""Agent specs as a user writes them: parsed once (``AgentSpec``), refused in one line where
they are wrong, and a user's own agent named by its module wherever a shipped one goes."""

from __future__ import annotations

import shutil
import sys
import textwrap

import pytest

from barbu_env.agents import AgentSpec, make_agent, parse_agents
from barbu_env.agents.pretrained import checkpoint_path
from barbu_env.cli.main import main
from barbu_env.evaluation.tournament import agent_labels

DUCKER = '''
from barbu_env.agents.heuristic import HeuristicAgent


class Ducker(HeuristicAgent):
    """A user's own agent: the heuristic with a margin of its own."""

    def __init__(self, seed: int = 0, rules=None, margin: float = 0.0):
        if margin < 0:
            raise ValueError("margin must be at least 0")
        super().__init__(seed=seed, rules=rules, double_margin=margin)
        self.name = "ducker"
'''


@pytest.fixture
def own_agent(tmp_path, monkeypatch):
    """A module ``mine.py`` with an agent class, in the working folder."""
    (tmp_path / "mine.py").write_text(textwrap.dedent(DUCKER))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "mine", raising=False)
    return tmp_path / "mine.py"


def test_a_list_keeps_each_agents_parameters_with_it_and_reads_their_kinds():
    specs = parse_agents("pimc:worlds=8,rollout=random,heuristic,runs/a/best.pt:device=cuda:1,deterministic=false")
    assert [s.name for s in specs] == ["pimc", "heuristic", "runs/a/best.pt"]
    assert specs[0].kwargs == {"worlds": 8, "rollout": "random"}
    assert specs[2].kwargs == {"device": "cuda:1", "deterministic": False}
    assert AgentSpec.parse("pimc:cover=0.5,time_limit=none").kwargs == {"cover": 0.5, "time_limit": None}


def test_a_name_may_hold_colons_before_its_parameters():
    assert AgentSpec.parse("C:\\runs\\best.pt:device=cpu").name == "C:\\runs\\best.pt"
    assert AgentSpec.parse("mine:Ducker:margin=3").name == "mine:Ducker"
    assert AgentSpec.parse("mine:Ducker").kwargs == {}


def test_one_agent_written_two_ways_is_one_spec_and_one_identity():
    assert AgentSpec.parse("pimc:worlds=8,rollout=random") == AgentSpec.parse("pimc:rollout=random,worlds=8")
    assert AgentSpec.parse("pimc:worlds=8") != AgentSpec.parse("pimc:worlds=9")
    plain = AgentSpec.parse("pimc").identity
    assert AgentSpec.parse("pimc:worlds=32,device=cpu,trust=true").identity == plain  # defaults and where it runs
    assert AgentSpec.parse("heuristic:double_margin=40").identity != AgentSpec.parse("heuristic").identity


@pytest.mark.parametrize(
    ("spec", "says"),
    [
        ("pimc:worlds", "parameters are key=value"),
        ("pimc:worlds=8,worlds=9", "parameter worlds is given twice"),
        ("random:seed=1", "seed is not a parameter a spec sets"),
        ("random:rules=classic", "rules is not a parameter a spec sets"),
        ("pimc:wrlds=3", "agent 'pimc' has no parameter wrlds (it takes: "),
        ("runs/missing/best.pt", "no agent file 'runs/missing/best.pt': no such file"),
        ("smart-ducker", "unknown agent 'smart-ducker'"),
        ("no_such_module:Agent", "cannot import no_such_module"),
    ],
)
def test_a_bad_spec_is_refused_in_one_line_by_make_agent_and_the_command(spec, says, capsys):
    with pytest.raises(ValueError) as refused:
        make_agent(spec)
    assert says in str(refused.value) and "\n" not in str(refused.value)
    assert main(["eval", "--agents", f"{spec},random,random,random", "--games", "4", "--workers", "1"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err


def test_a_users_own_agent_named_by_its_module_plays_with_its_parameters(own_agent, capsys):
    agent = make_agent("mine:Ducker:margin=3", seed=1)
    assert type(agent).__name__ == "Ducker" and agent.double_margin == 3
    with pytest.raises(ValueError, match="parameter margin takes a number, not 'wide'"):
        make_agent("mine:Ducker:margin=wide")
    with pytest.raises(ValueError, match="^agent 'mine:Ducker:margin=-1': margin must be at least 0$"):
        make_agent("mine:Ducker:margin=-1")
    assert (
        main(["eval", "--agents", "mine:Ducker:margin=3,random,random,random", "--games", "4", "--workers", "1"]) == 0
    )
    assert "mine:Ducker:margin=3" in capsys.readouterr().out


def test_the_files_that_decide_how_an_agent_plays_are_its_code_and_its_weights(own_agent):
    assert AgentSpec.parse("mine:Ducker").sources() == [own_agent]
    assert checkpoint_path("ppo") in AgentSpec.parse("pimc:rollout=ppo").sources()
    assert AgentSpec.parse("runs/a/best.pt").sources()[0].name == "best.pt"


def test_the_table_labels_a_checkpoint_by_its_file_name_and_two_of_one_name_apart(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "runs").mkdir()
    for path in ("best.pt", "runs/best.pt"):
        shutil.copy(checkpoint_path("ppo"), tmp_path / path)
    entries, instances = agent_labels(parse_agents("runs/best.pt:trust=true,random,best.pt,random"))
    assert entries == ["runs/best.pt", "random", "best.pt", "random"]
    assert instances == ["runs/best.pt", "random#1", "best.pt", "random#2"]
    assert agent_labels(parse_agents("runs/best.pt:device=cpu,random,random,random"))[0][0] == "best.pt:device=cpu"
