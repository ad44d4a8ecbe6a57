"""A person at the terminal: ``HumanAgent`` driven through its input function, the game
loop of ``barbu play``, and the reasons given for refused input."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from barbu_env.agents import make_agent
from barbu_env.cli.main import main
from barbu_env.evaluation.records import GameRecord, replay_record
from barbu_env.game.actions import AGENTS, DOUBLE_OFFSET, mask_array
from barbu_env.game.cards import card_text, cards_of, suit_of
from barbu_env.game.engine import BarbuState, Contract, Phase
from barbu_env.play.terminal import ChoiceError, HumanAgent, HumanQuit, parse_choice, play_at_terminal
from barbu_env.view.table import state_view

LABELS = ["human", "heuristic", "heuristic", "heuristic"]


class Typist:
    """Types into a HumanAgent as a person would: first the given ``lines``, then for each
    prompt '?' and the first choice listed; ``out`` is everything the agent wrote."""

    def __init__(self, lines=(), then_choose: bool = True):
        self.queue = list(lines)
        self.then_choose = then_choose
        self.out: list[str] = []
        self.typed: list[str] = []

    def write(self, text: str) -> None:
        self.out.append(text)

    def read(self, prompt: str) -> str:
        if self.queue:
            line = self.queue.pop(0)
        elif not self.then_choose:
            raise EOFError
        elif self.out and self.out[-1].startswith("Your choices: "):
            line = self.out[-1].removeprefix("Your choices: ").split(",")[0].split(" = ")[0].strip()
        else:
            line = "?"
        self.typed.append(line)
        return line


def _seated(typist: Typist, seed: int = 0) -> list:
    human = HumanAgent(read=typist.read, write=typist.write, labels=LABELS)
    return [human] + [make_agent("heuristic", seed=seed + k) for k in range(3)]


def test_a_whole_hand_is_played_from_typed_input():
    typist = Typist()
    told: list[str] = []
    state = BarbuState.new_game(rng=np.random.default_rng(4), first_declarer=0)
    play_at_terminal(_seated(typist), LABELS, hands=1, write=told.append, state=state)
    assert len(state.results) == 1 and state.hand_number == 1
    # The person declared (seat 0 declares hand 1), took a doubling turn and played 13 cards or fewer.
    # The first choice listed each time: contract 1 (No Tricks), then a doubling turn, then a card per trick.
    human_actions = [a for a, seat in zip(state.history, _seats_of(state)) if seat == 0]
    assert human_actions[0] == 52 + Contract.NO_TRICKS and DOUBLE_OFFSET <= human_actions[1] < DOUBLE_OFFSET + 8
    assert len(human_actions) == 2 + 13 and all(a < 52 for a in human_actions[2:])
    assert any(line.startswith("Hand 1 over") for line in told)
    screens = [text for text in typist.out if text.lstrip().startswith("=")]
    assert screens and "Your hand:" in screens[0] and "Your turn: choose a contract" in screens[0]


def _seats_of(state: BarbuState) -> list[int]:
    """The seat that made each action of ``state.history`` (replayed on the same deals)."""
    replay = BarbuState.new_game(
        state.rules, first_declarer=state.first_declarer, deals=[state.results[0].to_dict()["dealt"]]
    )
    seats = []
    for action in state.history:
        seats.append(replay.current_player)
        replay.apply_action(action)
    return seats


def _must_follow_position() -> BarbuState:
    """A trick position where the seat to act holds the led suit and another suit."""
    state = BarbuState.new_game(rng=np.random.default_rng(2), first_declarer=0)
    state.apply_action(52 + Contract.NO_TRICKS)
    while state.phase is Phase.DOUBLE:
        state.apply_action(DOUBLE_OFFSET)
    while True:
        if state.trick_size:
            led = suit_of(state.trick[state.leader])
            hand = state.hands[state.current_player]
            if [c for c in cards_of(hand) if suit_of(c) == led] and [c for c in cards_of(hand) if suit_of(c) != led]:
                return state
        state.apply_action(state.legal_actions()[0])


def test_invalid_inputs_are_refused_with_the_reason_and_asked_again():
    state = _must_follow_position()
    seat = state.current_player
    hand, legal = state.hands[seat], state.legal_actions()
    off_suit = next(c for c in cards_of(hand) if c not in legal)
    not_held = next(c for c in range(52) if not (hand >> c) & 1)
    typist = Typist(["", "ZZ", card_text(not_held), card_text(off_suit), "?", "pass", card_text(legal[-1])], False)
    agent = HumanAgent(read=typist.read, write=typist.write)
    obs = {"observation": state.observe(seat), "action_mask": mask_array(state.legal_mask())}
    assert agent.act(obs, AGENTS[seat]) == legal[-1]
    refusals = [line for line in typist.out if line.startswith("Not allowed: ")]
    assert len(typist.typed) == 7 and len(refusals) == 5
    assert "type a choice" in refusals[0]
    assert "cannot read 'ZZ' as a card" in refusals[1]
    assert "you do not hold" in refusals[2]
    assert "you must follow suit" in refusals[3]
    assert "you may pass only in Domino" in refusals[4]
    assert any(line.startswith("Your choices: ") for line in typist.out)


def test_quitting_or_the_end_of_the_input_stops_the_game():
    state = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0)
    with pytest.raises(HumanQuit):
        play_at_terminal(_seated(Typist(["quit"])), LABELS, state=state)
    with pytest.raises(HumanQuit):
        play_at_terminal(_seated(Typist([], then_choose=False)), LABELS, state=state)
    assert state.history == []


def test_contracts_and_doubles_are_read_by_name_or_number():
    state = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=1)
    view = state_view(state, 1)
    assert [parse_choice(view, t) for t in ("1", "7", "No Queens", "barbu", "no_last_two", "TRUMPS")] == [
        52,
        58,
        54,
        55,
        56,
        57,
    ]
    state.apply_action(52 + Contract.NO_HEARTS)
    _play_out_hand(state)
    assert state.current_player == 1  # seat 1 declares hand 2 too (seven in a row): No Hearts is spent
    with pytest.raises(ChoiceError, match="already declared No Hearts"):
        parse_choice(state_view(state, 1), "2")
    # A doubling turn: seat 2 in hand 2, doubling by seat names relative to it or absolute.
    state.apply_action(52 + Contract.NO_TRICKS)
    view = state_view(state, state.current_player)
    me = state.current_player
    assert parse_choice(view, "left+right") == DOUBLE_OFFSET + 0b101
    assert parse_choice(view, f"P{(me + 2) % 4}") == DOUBLE_OFFSET + 0b010
    assert parse_choice(view, "nobody") == DOUBLE_OFFSET
    with pytest.raises(ChoiceError, match="cannot double yourself"):
        parse_choice(view, f"P{me}")
    with pytest.raises(ChoiceError, match="is a card"):
        parse_choice(view, "QH")


def _play_out_hand(state: BarbuState) -> None:
    hand = state.hand_number
    while state.hand_number == hand:
        state.apply_action(state.legal_actions()[-1] if state.phase is Phase.DOUBLE else state.legal_actions()[0])


def test_barbu_play_quits_and_saves_a_record_that_replays(tmp_path, monkeypatch, capsys):
    record = tmp_path / "game.json"
    monkeypatch.setattr("sys.stdin", io.StringIO("quit\n"))
    assert main(["play", "--seed", "3", "--record", str(record)]) == 0
    out = capsys.readouterr().out
    assert "Your turn" in out and "Game stopped." in out
    saved = GameRecord.load(record)
    assert saved.agents == LABELS and saved.metadata["source"] == "barbu play"
    hands, scores = replay_record(saved)
    assert scores == saved.final_scores


def test_barbu_play_seats_only_agents_and_plays_the_hands_asked(tmp_path, capsys):
    record = tmp_path / "game.json"
    assert main(["play", "--agents", "heuristic,random,heuristic,random", "--seed", "1", "--hands", "2",
                 "--record", str(record)]) == 0  # fmt: skip
    data = json.loads(record.read_text())
    assert len(data["hands"]) == 2 and data["agents"] == ["heuristic", "random", "heuristic", "random"]
    replay_record(GameRecord.from_dict(data))
    assert capsys.readouterr().out.count("Hand 2 over") == 1


def test_barbu_play_refuses_a_table_of_three(capsys):
    assert main(["play", "--agents", "human,random,random"]) == 1
    assert "needs 4 seats" in capsys.readouterr().err
