"""A person at the table: :class:`HumanAgent` (an ``Agent`` that asks at the terminal) and
:func:`play_at_terminal`, the loop behind ``barbu play``.

``HumanAgent(read, write)`` fits the agent contract (``barbu_env/agents/base.py``): its
``act(observation, agent)`` shows the table as that seat sees it (read from the
observation alone: the person's hand and the public facts), asks for a choice through
``read(prompt) -> str`` and returns its action id, so any code that seats agents can seat
a person (``BarbuGymEnv(opponents=[HumanAgent(), "heuristic", "heuristic"])``). Cards are
typed as text (``QH``, ``10S``, ``q♥``); contracts, trump suits, Domino ranks and doubles by
name or by the number shown beside them; ``?`` lists the legal choices, ``quit`` (or the
end of the input) raises :class:`HumanQuit`. Anything else is refused with the reason, and
asked again: input that cannot be read says so; a legal-looking choice that the rules forbid
is answered with the rule (the kernels' reason, put into words by ``barbu_env.view.refusals``, in
the numbers and switches of the ``rules`` the agent is given).

``read`` and ``write`` default to the terminal (``input`` and ``print``); tests pass their
own, e.g. ``read=iter(lines).__next__``-like functions.

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> from barbu_env.view.table import state_view
>>> s = BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0)
>>> view = state_view(s, 0)
>>> parse_choice(view, "3"), parse_choice(view, "barbu"), parse_choice(view, "no queens")
(54, 55, 54)
>>> parse_choice(view, "QH")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
barbu_env.play.terminal.ChoiceError: 'QH' is a card, but the declarer (you) chooses a contract now: a number ...
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import numpy as np

from ..envs.stepping import play_turns
from ..game.actions import AGENTS, DECLARE_OFFSET, DOUBLE_OFFSET, PASS_ACTION, RANK_OFFSET, TRUMP_OFFSET
from ..game.cards import RANK_NAMES, SUIT_LETTERS, SUIT_NAMES, card_from_text, card_text
from ..game.constants import CONTRACT_LABELS, CONTRACT_NAMES, NUM_CONTRACTS, NUM_HANDS, NUM_PLAYERS, Contract, Phase
from ..game.engine import BarbuState, HandResult
from ..game.rules import Rules, load_rules
from ..view.refusals import refusal_text

if TYPE_CHECKING:
    from ..agents.base import Agent
from ..view.table import (
    RELATIVE_SEAT_NAMES,
    SUIT_SYMBOLS,
    TableView,
    card_label,
    choice_text,
    contract_label,
    hand_suits,
    trick_winner,
)

#: Words that ask for the list of legal choices, for help, and to stop.
LIST_WORDS = ("?", "list", "choices")
HELP_WORDS = ("help", "h")
QUIT_WORDS = ("quit", "exit", "q")
#: Other names people use for the contracts (besides "no_queens", "no queens", the labels).
CONTRACT_ALIASES = {
    "tricks": Contract.NO_TRICKS,
    "hearts": Contract.NO_HEARTS,
    "queens": Contract.NO_QUEENS,
    "barbu": Contract.NO_KING_OF_HEARTS,
    "king": Contract.NO_KING_OF_HEARTS,
    "king of hearts": Contract.NO_KING_OF_HEARTS,
    "last two": Contract.NO_LAST_TWO,
    "trump": Contract.TRUMPS,
}
#: Words naming the seats a doubling turn names, relative to the actor (bit k-1 for relative seat k).
DOUBLE_WORDS = {"left": 1, "l": 1, "opposite": 2, "o": 2, "opp": 2, "right": 3, "r": 3}
NOBODY_WORDS = ("nobody", "none", "no", "pass", "-", "0")
HELP_TEXT = (
    "Type a card as rank then suit (QH, 10S, 2c, A♠), 'pass' in Domino when you cannot play; "
    "a contract, trump suit or double by its number or name (no queens, barbu, spades, left+right, nobody); "
    "a Domino starting rank (7, J, A). '?' lists your choices, 'quit' stops the game."
)


class HumanQuit(Exception):
    """The person at a ``HumanAgent`` asked to stop (``quit``, or the input ended)."""


class ChoiceError(ValueError):
    """A typed choice that cannot be read or is not legal; the message says why."""


# ---------------------------------------------------------------------- the table as text


def hand_line(hand: int) -> str:
    """A hand grouped by suit, spades first, high to low: ``♠ A K 2   ♥ Q   ♦ -   ♣ 10 9``."""
    suits = [" ".join(RANK_NAMES[c % 13] for c in cards) or "-" for cards in hand_suits(hand)]
    return "   ".join(f"{SUIT_SYMBOLS[s]} {text}" for s, text in zip((3, 2, 1, 0), suits))


def seat_text(view: TableView, seat: int, labels: Sequence[str] | None = None) -> str:
    """``"left (P1 heuristic)"``; the viewer's seat is ``"you (P0)"``."""
    label = f"P{seat}" + (f" {labels[seat]}" if labels and view.viewer != seat else "")
    return f"{view.name(seat)} ({label})"


def render_view(view: TableView, labels: Sequence[str] | None = None) -> str:
    """The table as ``view``'s seat sees it, as lines of text: hand and contract, doubles,
    scores, the trick or the Domino layout, the seat's hand, and whose turn it is."""
    if view.phase is Phase.GAME_OVER:
        return "Game over. Scores: " + ", ".join(f"{seat_text(view, p, labels)} {view.scores[p]:+d}" for p in range(4))
    head = (
        f"Hand {view.hand_number + 1}/{NUM_HANDS} | declarer {seat_text(view, view.declarer, labels)} | "
        f"{view.contract_text()}"
    )
    lines = ["", "=" * min(len(head), 100), head]
    doubles = view.doubles()
    if doubles:
        lines.append(
            "Doubles: " + ", ".join(f"P{i} x P{j}" + (" redoubled" if level == 2 else "") for i, j, level in doubles)
        )
    elif view.phase is not Phase.DECLARE and view.contract >= 0 and any(view.doubling_done):
        lines.append("Doubles: none")
    lines.append("Scores:  " + "   ".join(f"{seat_text(view, p, labels)} {view.scores[p]:+d}" for p in range(4)))
    if view.phase is Phase.TRICKS:
        lines.append(
            "Tricks:  " + "   ".join(f"P{p} {view.tricks_won[p]} ({view.points[p]:+d} pts)" for p in range(NUM_PLAYERS))
        )
        played = ", ".join(f"{view.name(p)} {card_label(c)}" for p, c in view.trick)
        lines.append(f"Trick {view.trick_number + 1}/13: {played or '(nobody has played yet)'}")
    elif view.phase is Phase.DOMINO:
        rows = []
        for s, row in zip(range(4), view.domino_rows()):
            rows.append(f"{SUIT_SYMBOLS[s]} " + (f"{RANK_NAMES[row[0]]}..{RANK_NAMES[row[1]]}" if row else "-"))
        lines.append("Layout:  " + "   ".join(reversed(rows)))
        if view.out_order:
            lines.append("Out:     " + ", ".join(seat_text(view, p, labels) for p in view.out_order))
    lines.append(f"Your hand: {hand_line(view.hand)}")
    if view.legal:
        lines.append(f"Your turn: {_ask(view)}")
    return "\n".join(lines)


def _ask(view: TableView) -> str:
    phase = view.phase
    if phase is Phase.DECLARE:
        return "choose a contract (" + ", ".join(f"{n} {label}" for n, _, label in choices(view)) + ")"
    if phase is Phase.TRUMP:
        return "name the trump suit (" + ", ".join(f"{n} {label}" for n, _, label in choices(view)) + ")"
    if phase is Phase.DOMINO_RANK:
        return "name the Domino starting rank (2-10, J, Q, K, A)"
    if phase is Phase.DOUBLE:
        return "double? (" + ", ".join(f"{n} {label}" for n, _, label in choices(view)) + ")"
    if view.legal == [PASS_ACTION]:
        return "you cannot play: type pass"
    return "play a card (e.g. " + card_text(view.legal[0]) + "); ? lists the cards you may play"


def choices(view: TableView) -> list[tuple[str, int, str]]:
    """The viewer's legal choices as (what to type, action id, meaning). Contracts are
    numbered 1-7 in their fixed order (only the legal ones listed); trump suits and doubles
    by their place in the list; cards by their text."""
    out = []
    for n, action in enumerate(view.legal, start=1):
        if action < DECLARE_OFFSET:
            out.append((card_text(action), action, choice_text(action)))
        elif action < TRUMP_OFFSET:
            out.append((str(action - DECLARE_OFFSET + 1), action, contract_label(action - DECLARE_OFFSET)))
        elif action < RANK_OFFSET or DOUBLE_OFFSET <= action < PASS_ACTION:
            out.append((str(n), action, choice_text(action)))
        elif action < DOUBLE_OFFSET:
            out.append((RANK_NAMES[action - RANK_OFFSET], action, choice_text(action)))
        else:
            out.append(("pass", action, "pass"))
    return out


# ---------------------------------------------------------------------- reading a choice


def _normal(text: str) -> str:
    """Lower case, symbols as letters, separators as single spaces."""
    t = text.strip().lower()
    for s, symbol in enumerate(SUIT_SYMBOLS):
        t = t.replace(symbol, SUIT_LETTERS[s].lower())
    for sep in ("_", "-", "+", ","):
        t = t.replace(sep, " ") if not (sep == "-" and t == "-") else t
    return " ".join(t.split())


def _as_card(text: str) -> int | None:
    t = text.replace(" ", "")
    if t.startswith("play"):
        t = t[len("play") :]
    try:
        return card_from_text(t)
    except ValueError:
        return None


def parse_choice(view: TableView, text: str) -> int:
    """The legal action id ``text`` names for the viewer, who is to act; raises
    ``ChoiceError`` saying why when it names none, or an illegal one."""
    t = _normal(text)
    if not t:
        raise ChoiceError("type a choice ('?' lists them)")
    phase = view.phase
    options = choices(view)
    if phase in (Phase.TRICKS, Phase.DOMINO):
        if t == "pass":
            if PASS_ACTION in view.legal:
                return PASS_ACTION
            raise ChoiceError(refusal_text(view, PASS_ACTION))
        card = _as_card(t)
        if card is None:
            raise ChoiceError(f"cannot read {text.strip()!r} as a card: type rank then suit, like QH, 10S or 2C")
        if card in view.legal:
            return card
        raise ChoiceError(refusal_text(view, card))
    if _as_card(t) is not None and phase is not Phase.DOMINO_RANK:
        raise ChoiceError(f"{text.strip()!r} is a card, but {_what_now(view)}")
    by_number = {key: action for key, action, _ in options if key.isdigit()}
    if t.isdigit() and phase is not Phase.DOMINO_RANK:
        if t in by_number:
            return by_number[t]
        if phase is Phase.DECLARE and 1 <= int(t) <= NUM_CONTRACTS:
            return _check_contract(view, int(t) - 1)
        raise ChoiceError(f"{t} is not one of the numbers listed: {_listing(options)}")
    if phase is Phase.DECLARE:
        return _check_contract(view, _contract_named(t))
    if phase is Phase.TRUMP:
        suit = _suit_named(t)
        if suit is None:
            raise ChoiceError(f"cannot read {text.strip()!r} as a suit: clubs, diamonds, hearts or spades (or 1-4)")
        return TRUMP_OFFSET + suit
    if phase is Phase.DOMINO_RANK:
        rank = t.removeprefix("domino ").removeprefix("from ").upper().replace("T", "10")
        if rank not in RANK_NAMES:
            raise ChoiceError(f"cannot read {text.strip()!r} as a rank: 2-10, J, Q, K or A")
        return RANK_OFFSET + RANK_NAMES.index(rank)
    if phase is Phase.DOUBLE:
        return _check_double(view, t, text)
    raise ChoiceError(f"nothing to choose in phase {phase.name}")


def _what_now(view: TableView) -> str:
    return {
        Phase.DECLARE: "the declarer (you) chooses a contract now: a number 1-7 or a name",
        Phase.TRUMP: "you name the trump suit now: clubs, diamonds, hearts or spades",
        Phase.DOUBLE: "it is your doubling turn: " + _listing(choices(view)),
    }.get(view.phase, "this is not a card play")


def _listing(options: list[tuple[str, int, str]]) -> str:
    return ", ".join(f"{key} = {meaning}" if key != meaning else key for key, _, meaning in options)


def _contract_named(t: str) -> int:
    t = t.removeprefix("declare ")
    names = {name.replace("_", " "): c for c, name in enumerate(CONTRACT_NAMES)}
    names.update({label.lower(): c for c, label in enumerate(CONTRACT_LABELS)})
    names.update(CONTRACT_ALIASES)
    bare = t.removeprefix("no ")
    for candidate in (t, bare):
        if candidate in names:
            return int(names[candidate])
    raise ChoiceError(
        f"no contract is called {t!r}: " + ", ".join(f"{c + 1} {lb}" for c, lb in enumerate(CONTRACT_LABELS))
    )


def _check_contract(view: TableView, contract: int) -> int:
    action = DECLARE_OFFSET + contract
    if action in view.legal:
        return action
    raise ChoiceError(refusal_text(view, action, choices=_listing(choices(view))))


def _suit_named(t: str) -> int | None:
    t = t.removeprefix("trump ").removeprefix("trumps ")
    for s, name in enumerate(SUIT_NAMES):
        if t in (name, name[:-1], SUIT_LETTERS[s].lower()):
            return s
    return None


def _check_double(view: TableView, t: str, text: str) -> int:
    t = t.removeprefix("double ")
    words = [w for w in t.replace(" and ", " ").split() if w]
    bits = 0
    if not (len(words) == 1 and words[0] in NOBODY_WORDS):
        for w in words:
            relative = DOUBLE_WORDS.get(w)
            if relative is None and len(w) == 2 and w[0] == "p" and w[1] in "0123":
                relative = (int(w[1]) - view.viewer) % NUM_PLAYERS
                if relative == 0:
                    raise ChoiceError("you cannot double yourself")
            if relative is None:
                raise ChoiceError(
                    f"cannot read {text.strip()!r} as a double: name left, opposite, right (or P0-P3), "
                    f"joined with +, or nobody; or a number: {_listing(choices(view))}"
                )
            bits |= 1 << (relative - 1)
    action = DOUBLE_OFFSET + bits
    if action in view.legal:
        return action
    raise ChoiceError(refusal_text(view, action, choices=_listing(choices(view))))


# ---------------------------------------------------------------------- the agent


class HumanAgent:
    """An agent whose choices a person types (see the module docstring). ``labels``
    (one per seat) name the other players on screen; ``rules`` are the rules in force (the
    observation does not carry them; default: the standard rules): a refused choice is
    answered with the rule that forbids it, in these rules' numbers."""

    name = "human"

    def __init__(
        self,
        read: Callable[[str], str] | None = None,
        write: Callable[[str], None] | None = None,
        labels: Sequence[str] | None = None,
        rules: Rules | str | dict | None = None,
    ):
        self.read = read or input
        self.write = write or partial(print, flush=True)
        self.labels = list(labels) if labels is not None else None
        self.rules = load_rules(rules)

    def act(self, observation: dict[str, np.ndarray], agent: str | None = None) -> int:
        view = TableView.from_observation(
            observation["observation"], AGENTS.index(agent), observation["action_mask"], rules=self.rules
        )
        self.write(render_view(view, self.labels))
        while True:
            try:
                line = self.read("> ")
            except EOFError:
                raise HumanQuit("the input ended") from None
            word = line.strip().lower()
            if word in QUIT_WORDS:
                raise HumanQuit("quit")
            if word in LIST_WORDS:
                self.write("Your choices: " + _listing(choices(view)))
                continue
            if word in HELP_WORDS:
                self.write(HELP_TEXT)
                continue
            try:
                return parse_choice(view, line)
            except ChoiceError as e:
                self.write(f"Not allowed: {e}")


# ---------------------------------------------------------------------- the game loop


def seat_labels(specs: Sequence[str]) -> list[str]:
    """Labels for the seats of a game from the agent specs (``"human"``, ``"heuristic"``, a
    checkpoint path shown by its file name, or whole where two files share a name): the
    tournament table's labels (``barbu_env.evaluation.tournament.agent_labels``)."""
    from ..evaluation.tournament.schedule import agent_labels

    return agent_labels(list(specs))[0]


def play_at_terminal(
    agents: Sequence[Agent],
    labels: Sequence[str],
    rules: Rules | str | dict | None = None,
    rng: np.random.Generator | None = None,
    hands: int = NUM_HANDS,
    write: Callable[[str], None] | None = None,
    first_declarer: int | None = None,
    state: BarbuState | None = None,
) -> BarbuState:
    """Play a game (or its first ``hands`` hands) among four agents, seat order; returns
    the state (finished, or after ``hands`` hands). ``write`` is told every action, each
    trick's winner and each hand's scores, as lines of text. A ``HumanQuit`` from an agent
    propagates (the caller can still record ``state``, passed in to keep it)."""
    say = write or (lambda _text: None)
    if state is None:
        state = BarbuState.new_game(load_rules(rules), rng, first_declarer=first_declarer)
    names = [f"P{p} {labels[p]}" for p in range(NUM_PLAYERS)]

    def announce() -> None:  # before a hand's first decision
        if state.phase is Phase.DECLARE and not state.is_terminal and len(state.results) < hands:
            say(f"\n--- Hand {state.hand_number + 1}/{NUM_HANDS}: {names[state.current_player]} declares ---")

    def apply(action: int) -> HandResult | None:
        action, seat, phase = int(action), state.current_player, state.phase
        tricks, points = state.tricks_won, state.points
        result = state.apply_action(action)
        say(f"{names[seat]}: {action_said(action, seat)}")
        if (taken := trick_taken(state, phase, result, tricks, points)) is not None:
            winner, gained = taken
            say(f"  trick to {names[winner]}" + (f" ({gained:+d})" if gained else ""))
        if result is not None:
            for line in hand_summary(result, state.scores, names):
                say(line)
        announce()
        return result

    announce()
    play_turns(state, agents, hands=hands, apply=apply)
    if state.is_terminal:
        say("Final scores: " + ", ".join(f"{names[p]} {state.scores[p]:+d}" for p in range(NUM_PLAYERS)))
    return state


def trick_taken(
    state: BarbuState, phase: Phase, result: HandResult | None, tricks: Sequence[int], points: Sequence[int]
) -> tuple[int, int] | None:
    """After an action taken in ``phase`` (``result``: the hand it ended, if any), when the
    seats had won ``tricks`` and ``points`` before it: (the trick's winner, the points it
    gained) if the action completed a trick, else None."""
    if phase is not Phase.TRICKS or (result is None and state.trick_size != 0):
        return None
    won, raw = (result.tricks, result.raw) if result is not None else (state.tricks_won, state.points)
    winner = trick_winner(tricks, won)
    return winner, raw[winner] - points[winner]


def action_said(action: int, seat: int) -> str:
    """``seat``'s action as the table hears it: ``choice_text``, but doubles name absolute
    seats ("double P1 and P3")."""
    if DOUBLE_OFFSET <= action < PASS_ACTION:
        named = [
            f"P{(seat + k + 1) % NUM_PLAYERS}" for k in range(NUM_PLAYERS - 1) if (action - DOUBLE_OFFSET) >> k & 1
        ]
        return "double " + (" and ".join(named) if named else "nobody")
    return choice_text(action)


def hand_summary(result: HandResult, totals: Sequence[int], names: Sequence[str]) -> list[str]:
    """A finished hand's scores as lines: contract, raw, settled, game totals."""
    what = contract_label(CONTRACT_NAMES.index(result.contract))
    if result.out_order:
        what += " (out: " + ", ".join(f"P{p}" for p in result.out_order) + ")"
    return [
        f"Hand {result.hand + 1} over: {what}, declared by {names[result.declarer]}",
        "  raw      " + "  ".join(f"P{p} {v:+d}" for p, v in enumerate(result.raw)),
        "  settled  " + "  ".join(f"P{p} {v:+d}" for p, v in enumerate(result.settled)),
        "  totals   " + "  ".join(f"P{p} {v:+d}" for p, v in enumerate(totals)),
    ]


__all__ = [
    "ChoiceError",
    "action_said",
    "HumanAgent",
    "HumanQuit",
    "RELATIVE_SEAT_NAMES",
    "choices",
    "hand_line",
    "hand_summary",
    "parse_choice",
    "play_at_terminal",
    "render_view",
    "seat_labels",
    "trick_taken",
]
