"""Game records: one whole game as a JSON file, replayed exactly, printed hand by hand.

A record holds what is needed to play the game again and what the game came to:

================  ===========================================================================
field             meaning
================  ===========================================================================
format, version   ``"barbu-game-record"``, 1
rules             ``Rules.to_dict()``: every switch, so a record never depends on a preset file
first_declarer    seat 0-3 declaring hand 1
agents            a label per seat (who played seat 0, 1, 2, 3)
deals             a deal per hand played: four strings of 13 cards (seats 0-3), e.g.
                  ``"2C 5C TD ... AS"`` (card text, docs/rules.md#cards-actions-and-observations)
actions           every action id applied (docs/rules.md lists them), in order, forced ones included
hands             ``HandResult.to_dict()`` of every finished hand: contract, trump or starting
                  rank, doubling levels, raw and settled scores, tricks, Domino order
final_scores      game totals per seat (the sum of the settled scores)
finished          ``true`` for a game played as far as it was meant to go (to its end, or to
                  the hands asked for); ``false`` for a game stopped before (Ctrl-C, ``quit``):
                  its actions stop where the game stopped, maybe in the middle of a hand, and
                  its scores are those of the hands it finished. Optional (``true``)
metadata          free-form: where the game came from (tournament seed, deal set, seating...)
================  ===========================================================================

``replay_record`` plays the actions again through the PettingZoo environment
(``barbu_env.env``) on the recorded deals and checks that every hand result and the final
scores come out exactly as recorded; anything else (an edited score, an illegal or
missing action, a wrong deal) raises ``RecordError``; an unfinished record replays as far
as its actions go. ``render_record`` prints the game hand by hand: the deal, contract and
doubles (through the ansi renderer, ``barbu_env.game.render``), each trick or the Domino plays,
and the scores.

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=1)
>>> while not s.is_terminal:
...     _ = s.apply_action(s.legal_actions()[0])
>>> record = GameRecord.from_state(s, agents=["first-legal"] * 4)
>>> hands, scores = replay_record(GameRecord.from_dict(record.to_dict()))
>>> len(hands), scores == record.final_scores
(28, True)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..game.actions import PASS_ACTION
from ..game.cards import card_text, hand_text
from ..game.constants import NUM_PLAYERS, Phase
from ..game.engine import BarbuState, IllegalActionError
from ..game.render import hand_by_suit, render_state
from ..game.rules import Rules
from ..util.files import printable, quote, read_text, write_text

FORMAT = "barbu-game-record"
VERSION = 1
#: The most bytes ``GameRecord.load`` reads (a record may come from anyone); the browser's
#: replay viewer takes uploads of up to this size too.
READ_LIMIT = 2_000_000


class RecordError(ValueError):
    """A record that is malformed, or whose actions do not reproduce its results."""


#: The fields a replay walks through, and what each must be (a record may come from anyone:
#: checked before use; ``agents`` and ``metadata`` may be null). Each deal, the first declarer
#: and every action are the engine's to refuse as the record is replayed.
_FIELD_TYPES: dict[str, tuple[type, str]] = {
    "rules": (dict, "a mapping of rule switches"),
    "deals": (list, "a list of deals"),
    "actions": (list, "a list of integer actions"),
    "hands": (list, "a list of hand results (mappings)"),
    "final_scores": (list, f"a list of {NUM_PLAYERS} integers"),
    "agents": (list, f"a list of {NUM_PLAYERS} agent names"),
    "metadata": (dict, "a mapping"),
}


@dataclass
class GameRecord:
    """A whole game (see the module docstring for the fields)."""

    rules: dict[str, Any]
    first_declarer: int
    deals: list[list[str]]
    actions: list[int]
    hands: list[dict[str, Any]]
    final_scores: list[int]
    agents: list[str] = field(default_factory=lambda: [f"P{p}" for p in range(NUM_PLAYERS)])
    metadata: dict[str, Any] = field(default_factory=dict)
    finished: bool = True

    # ------------------------------------------------------------------ building

    @classmethod
    def from_state(
        cls,
        state: BarbuState,
        agents: Sequence[str] | None = None,
        metadata: dict[str, Any] | None = None,
        finished: bool | None = None,
    ) -> GameRecord:
        """The record of a game played on ``state`` so far. ``finished``: whether the game
        went as far as it was meant to (default: whether ``state`` is the end of the game)."""
        hands = [r.to_dict() for r in state.results]
        deals = [h["dealt"] for h in hands]
        if not state.is_terminal:  # the hand under way (already dealt)
            deals.append([hand_text(h) for h in state.dealt])
        return cls(
            rules=state.rules.to_dict(),
            first_declarer=state.first_declarer,
            deals=deals,
            actions=[int(a) for a in state.history],
            hands=hands,
            final_scores=list(state.scores),
            agents=list(agents) if agents is not None else [f"P{p}" for p in range(NUM_PLAYERS)],
            metadata=dict(metadata or {}),
            finished=state.is_terminal if finished is None else bool(finished),
        )

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "rules": self.rules,
            "first_declarer": self.first_declarer,
            "agents": self.agents,
            "metadata": self.metadata,
            "final_scores": self.final_scores,
            "finished": self.finished,
            "deals": self.deals,
            "actions": self.actions,
            "hands": self.hands,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GameRecord:
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise RecordError(f'not a Barbu game record (expected "format": "{FORMAT}")')
        if data.get("version") != VERSION:
            raise RecordError(
                f"game record version {quote(data.get('version'))} is not supported (this reads {VERSION})"
            )
        missing = [k for k in ("rules", "first_declarer", "deals", "actions", "hands", "final_scores") if k not in data]
        if missing:
            raise RecordError(f"game record lacks {missing}")
        for key, (kind, wanted) in _FIELD_TYPES.items():
            value = data.get(key, [] if key == "agents" else {})
            if value is None and key in ("agents", "metadata"):
                continue
            if not isinstance(value, kind) or (key == "agents" and value and len(value) != NUM_PLAYERS):
                raise RecordError(f"game record field {key!r} must be {wanted}, not {quote(value, 60)}")
        return cls(
            rules=data["rules"],
            first_declarer=data["first_declarer"],
            deals=data["deals"],
            actions=data["actions"],
            hands=data["hands"],
            final_scores=data["final_scores"],
            agents=data.get("agents") or [f"P{p}" for p in range(NUM_PLAYERS)],
            metadata=data.get("metadata") or {},
            finished=bool(data.get("finished", True)),
        )

    def to_json(self) -> str:
        """JSON text, one top-level field per line and one deal or hand per line."""
        d = self.to_dict()
        lines = []
        for key, value in d.items():
            if key in ("deals", "hands") and value:
                items = ",\n".join("    " + json.dumps(v, separators=(", ", ": ")) for v in value)
                text = f"[\n{items}\n  ]"
            else:
                text = json.dumps(value, separators=(", ", ": "))
            lines.append(f"  {json.dumps(key)}: {text}")
        return "{\n" + ",\n".join(lines) + "\n}\n"

    def save(self, path: str | Path) -> Path:
        """Write the record to ``path`` whole or not at all (``barbu_env.util.files.write_text``:
        a failed write leaves any old file as it was and raises ``OutputError`` naming it)."""
        return write_text(path, self.to_json())

    @classmethod
    def load(cls, path: str | Path) -> GameRecord:
        """The record in the file ``path``: a regular file of at most ``READ_LIMIT`` bytes
        (a pipe, a device or a larger file is refused unread: ``barbu_env.util.files.InputError``),
        JSON, a record (``from_dict``); else a ``ValueError`` naming the file."""
        text = read_text(path, READ_LIMIT, "game record")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as e:
            raise RecordError(f"{path}: not JSON ({e})") from None
        except RecursionError:  # arrays or objects nested thousands deep
            raise RecordError(f"{path}: JSON nested too deeply to be a game record") from None
        return cls.from_dict(data)

    # ------------------------------------------------------------------ helpers

    def rules_obj(self) -> Rules:
        """The record's rules as a ``Rules``."""
        return Rules.from_mapping(self.rules)


# ---------------------------------------------------------------------- replay


def replay_record(record: GameRecord) -> tuple[list[dict[str, Any]], list[int]]:
    """Play the record's actions through ``barbu_env.env`` on its deals; returns the hand
    results (``HandResult.to_dict()``) and the final scores. Raises ``RecordError`` when an
    action is illegal or the results differ from the record in any way."""
    from ..envs.aec import env as make_env  # the PettingZoo environment, loaded only to replay

    try:
        rules = record.rules_obj()
    except ValueError as e:
        raise RecordError(f"record rules: {e}") from None
    env = make_env(rules=rules)
    try:
        env.reset(options={"deals": record.deals, "first_declarer": record.first_declarer})
    except ValueError as e:
        raise RecordError(f"record deals or first declarer: {e}") from None
    game = env.unwrapped.game
    hands: list[dict[str, Any]] = []
    for i, action in enumerate(record.actions):
        if game.is_terminal:
            raise RecordError(f"action #{i} ({quote(action)}) comes after the end of the game")
        if game.hand_number >= len(record.deals):
            raise RecordError(f"action #{i} is in hand {game.hand_number + 1}, which the record does not deal")
        agent, hand = env.agent_selection, game.hand_number + 1
        try:
            env.step(action)
        except IllegalActionError as e:
            raise RecordError(f"action #{i} (hand {hand}, {agent}) is not legal: {e}") from None
        info = env.unwrapped.infos[agent].get("hand_result")
        if info is not None and (not hands or hands[-1]["hand"] != info["hand"]):
            hands.append(info)
    scores = [sum(h["settled"][p] for h in hands) for p in range(NUM_PLAYERS)]
    _check_same(record, hands, scores, list(game.scores))
    return hands, scores


def _check_same(record: GameRecord, hands: list[dict], scores: list[int], game_scores: list[int]) -> None:
    if len(hands) != len(record.hands):
        raise RecordError(f"the actions finish {len(hands)} hands, the record lists {len(record.hands)}")
    for replayed, recorded in zip(hands, record.hands):
        if replayed != recorded:
            recorded = recorded if isinstance(recorded, dict) else {}
            keys = sorted(k for k in replayed.keys() | recorded.keys() if replayed.get(k) != recorded.get(k))
            detail = "; ".join(f"{k}: recorded {recorded.get(k)!r}, replayed {replayed.get(k)!r}" for k in keys)
            raise RecordError(f"hand {replayed['hand'] + 1} differs from the record ({detail})")
    if list(record.final_scores) != scores or scores != game_scores:
        raise RecordError(f"final scores: recorded {list(record.final_scores)}, replayed {game_scores}")


# ---------------------------------------------------------------------- text


def render_record(record: GameRecord, hands: Sequence[int] | None = None) -> str:
    """The game hand by hand: deal, contract and doubles, every trick (leader first,
    winner and the points it carried) or the Domino plays and finishing order, then raw
    and settled scores and the running totals. ``hands`` (1-based) picks some hands only.

    The game is played again on the engine to show it; run ``replay_record`` first to
    check the record."""
    rules = record.rules_obj()
    state = BarbuState.new_game(
        rules, rng=np.random.default_rng(0), first_declarer=record.first_declarer, deals=record.deals
    )
    labels = [f"P{p} {printable(a)}" for p, a in enumerate(record.agents)]
    width = max(len(s) for s in labels)
    wanted = set(hands) if hands is not None else None
    changes = rules.changes()
    out = [
        f"Barbu game record: rules {'standard' if not changes else 'standard with ' + json.dumps(changes)}",
        "Seats: " + ", ".join(labels) + f"; first declarer P{record.first_declarer}",
    ]
    if record.metadata:
        out.append("Metadata: " + ", ".join(f"{printable(k)} {printable(v)}" for k, v in record.metadata.items()))

    blocks: dict[int, list[str]] = {}
    lines: list[str] = []
    plays: list[str] = []  # Domino plays, or the current trick's cards
    before = None  # (tricks_won, points) before the current trick
    for i, action in enumerate(record.actions):
        if state.is_terminal:
            break
        number = state.hand_number
        if state.phase is Phase.DECLARE and not lines:
            lines = [f"  {labels[p]:<{width}}  {hand_by_suit(state.hands[p])}" for p in range(NUM_PLAYERS)]
        seat = state.current_player
        phase = state.phase
        if phase is Phase.TRICKS and state.trick_size == 0:
            before = (state.tricks_won[:], state.points[:])
            plays = []
        if phase is Phase.TRICKS:
            plays.append(f"P{seat} {card_text(action)}")
        elif phase is Phase.DOMINO:
            plays.append(f"P{seat} {'pass' if action == PASS_ACTION else card_text(action)}")
        result = state.apply_action(action)
        if phase is Phase.DOUBLE and state.phase in (Phase.TRICKS, Phase.DOMINO):
            lines[0:0] = _contract_lines(state)  # the ansi renderer's view as play begins
        if phase is Phase.TRICKS and (result is not None or state.trick_size == 0):
            won, points = (result.tricks, result.raw) if result is not None else (state.tricks_won, state.points)
            winner = next(p for p in range(NUM_PLAYERS) if won[p] != before[0][p])
            gained = points[winner] - before[1][winner]
            taken = f" {gained:+d}" if gained else ""
            lines.append(f"  Trick {sum(before[0]) + 1:>2}  " + "  ".join(plays) + f"  -> P{winner}{taken}")
        if result is not None:
            if result.contract == "domino":
                lines.extend(_wrap("  Domino: ", plays))
                last = next(p for p in range(NUM_PLAYERS) if p not in result.out_order)
                lines.append("  Out: " + ", ".join(f"P{p}" for p in result.out_order) + f"; last P{last}")
            plays = []
            lines.append("  Raw      " + _scores(result.raw))
            lines.append("  Settled  " + _scores(result.settled))
            lines.append("  Totals   " + _scores(state.scores))
            blocks[number] = lines
            lines = []
        elif i == len(record.actions) - 1:
            lines.append("  (the record ends here)")
            blocks[number] = lines
    for number in sorted(blocks):
        if wanted is None or number + 1 in wanted:
            out.append("")
            out.extend(blocks[number])
    out.append("")
    if record.finished:
        out.append("Final scores: " + _scores(record.final_scores))
    else:
        count = len(record.actions)
        out.append(f"Unfinished: stopped in hand {len(record.deals)}, after {count} action{'s' if count != 1 else ''}")
        out.append("Scores of the finished hands: " + _scores(record.final_scores))
    return "\n".join(out)


def _contract_lines(state: BarbuState) -> list[str]:
    """Hand, declarer, contract and doubles, as the ansi renderer writes them."""
    lines = []
    for line in render_state(state).splitlines():
        if line.startswith("Hand "):
            lines.append(line.split(" - phase ")[0])
        elif line.startswith("Doubles:"):
            lines.append(line)
    if len(lines) == 1:
        lines.append("Doubles: none")
    return lines


def _scores(values: Sequence[int]) -> str:
    return "  ".join(f"P{p} {v:+4d}" for p, v in enumerate(values))


def _wrap(prefix: str, items: list[str], width: int = 100) -> list[str]:
    lines, line = [], prefix
    for item in items:
        if len(line) + len(item) + 2 > width and line.strip():
            lines.append(line.rstrip(", "))
            line = " " * len(prefix)
        line += item + ", "
    lines.append(line.rstrip(", "))
    return lines


__all__ = ["FORMAT", "GameRecord", "RecordError", "VERSION", "printable", "render_record", "replay_record"]
