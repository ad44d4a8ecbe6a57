"""Why an action is not legal for the seat to act, in words: one table for the terminal seat
(``barbu_env.play.terminal``) and the browser table (``barbu_env.play.web.server``).

The *reason* is the kernels': a :class:`~barbu_env.game.constants.Refusal` code, computed next
to the legality code (``BarbuState.refusal``, ``barbu_env.game._kernels.refusal``), so that the
reason given and the mask cannot disagree. This module only puts a code into words, with
the numbers and switches of the rules in force (``min_declarer_doubles``,
``trumps_must_overtrump``, ``trumps_must_ruff``, ``barbu_king_first_chance``,
``doubling_targets``, ``redouble_pass``): a reason that comes from a switch names it.

* :func:`refusal_code` reads the code for a :class:`~barbu_env.view.table.TableView` from what
  the view was read from, its seat's observation and the rules (``view.observation``,
  ``view.rules``): the position that observation shows (``Positions.from_observation``,
  the other hands empty, which legality never looks at) is asked.
* :func:`reason` is the code in words, for ``view``'s seat ("you ...").
* :func:`refusal_text` is the whole answer to a refused action: the reason and what the
  seat may do instead (in play the cards it may play, else its choices).

A view without an observation (built by hand) or whose rules do not match the game (the
code says "legal" for an action the view's mask refuses) gets a plain "not one of your
choices" answer rather than a wrong reason.

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> from barbu_env.game.rules import Rules
>>> from barbu_env.view.table import state_view
>>> s = BarbuState.new_game(Rules(min_declarer_doubles=3), rng=np.random.default_rng(0), first_declarer=0)
>>> s.apply_action(52)  # P0 declares No Tricks
>>> view = state_view(s, s.current_player)
>>> refusal_code(view, 52).name, refusal_code(view, 76).name
('WRONG_PHASE', 'LEGAL')
>>> print(reason(view, 0))
play 2♣ is not a choice in the doubling turns
"""

from __future__ import annotations

import numpy as np

from ..game import _kernels as K
from ..game.actions import DECLARE_OFFSET, NUM_ACTIONS, PASS_ACTION
from ..game.cards import ACE_OF_HEARTS, KING_OF_HEARTS, RANK_NAMES, SUIT_MASK, SUIT_NAMES, suit_of
from ..game.constants import CONTRACT_LABELS, NUM_PLAYERS, Phase, Refusal
from ..game.observation import decode
from ..game.position import Positions
from ..game.rules import Rules
from .table import TableView, card_label, choice_text

#: Where the game stands, for the "not a choice now" answers.
_PHASE_NAMES = {
    Phase.DECLARE: "while the declarer chooses a contract",
    Phase.TRUMP: "while the declarer names the trump suit",
    Phase.DOMINO_RANK: "while the declarer names the Domino starting rank",
    Phase.DOUBLE: "in the doubling turns",
    Phase.TRICKS: "in trick play",
    Phase.DOMINO: "in Domino play",
}


def refusal_code(view: TableView, action: int) -> Refusal:
    """The kernels' reason why ``action`` is not legal for ``view``'s seat (``Refusal.LEGAL``
    if it is), from the view's observation and rules; ``ValueError`` for a view that was not
    read from an observation, or whose seat is not to act."""
    if view.observation is None:
        raise ValueError("this view was not read from an observation: it cannot say why an action is refused")
    if view.to_act != view.viewer:
        raise ValueError(f"it is P{view.to_act}'s turn, not P{view.viewer}'s: nothing is refused to P{view.viewer}")
    if isinstance(action, bool) or not isinstance(action, (int, np.integer)) or not 0 <= action < NUM_ACTIONS:
        return Refusal.NO_SUCH_ACTION
    rules = view.rules or Rules()
    p = Positions.from_observation(view.observation, rules, seat=view.viewer)
    return Refusal(K.refusal(p.ints, p.cards, K.rules_params(rules), 0, int(action)))


def _seat(view: TableView, seat: int) -> str:
    return f"{view.name(seat)} (P{seat})" if seat != view.viewer else "you"


def _owed(view: TableView, rules: Rules) -> int:
    """Doubles the viewer still owes the declarer (from the observation's ``owed`` rows)."""
    if view.observation is None or not rules.min_declarer_doubles:
        return 0
    owed = decode(np.asarray(view.observation, dtype=np.float32))["owed"]
    relative = (view.declarer - view.viewer) % NUM_PLAYERS
    return round(float(owed[0, relative]) * rules.min_declarer_doubles)


def reason(view: TableView, action: int, code: Refusal | None = None) -> str:
    """Why ``action`` is not legal for ``view``'s seat, in words (``code``: the kernels'
    reason, read with :func:`refusal_code` when not given); ``ValueError`` if it is legal."""
    code = refusal_code(view, action) if code is None else Refusal(code)
    rules = view.rules or Rules()
    if code is Refusal.LEGAL:
        raise ValueError(f"{choice_text(action)} is legal now: nothing to explain")
    if code is Refusal.NO_SUCH_ACTION:
        return f"{action!r} is not an action: actions are the ids 0-{NUM_ACTIONS - 1}"
    if code is Refusal.GAME_OVER:
        return "the game is over"
    if code is Refusal.WRONG_PHASE:
        if action == PASS_ACTION:
            return "you may pass only in Domino when no card of yours can go on the layout"
        return f"{choice_text(action)} is not a choice {_PHASE_NAMES[view.phase]}"
    if code is Refusal.NOT_HELD:
        return f"you do not hold {card_label(action)}"
    contract = CONTRACT_LABELS[view.contract] if view.contract >= 0 else "this contract"
    led = suit_of(view.trick[0][1]) if view.trick else -1
    if code is Refusal.FOLLOW_SUIT:
        return f"you must follow suit: {SUIT_NAMES[led]} were led and you hold some"
    if code is Refusal.OVERTRUMP:
        top = max((c for _, c in view.trick if suit_of(c) == view.trump), default=-1)  # the trick's highest trump
        beat = f"above {card_label(top)}" if top >= 0 else "higher than the trumps in the trick"
        return (
            f"you must overtrump: play a trump ({SUIT_NAMES[view.trump]}) {beat}, since you hold one "
            "(this table's rule trumps_must_overtrump)"
        )
    if code is Refusal.RUFF:
        return (
            f"you hold no {SUIT_NAMES[led]}, so you must play a trump ({SUIT_NAMES[view.trump]}) "
            "(this table's rule trumps_must_ruff)"
        )
    if code is Refusal.HEART_LEAD:
        return f"in {contract} you may not lead a heart while you hold another suit"
    if code is Refusal.KING_FIRST:
        when = (
            f"you hold no {SUIT_NAMES[led]}"
            if led >= 0 and not view.hand & SUIT_MASK[led]
            else f"{card_label(ACE_OF_HEARTS)} is in this heart trick"
        )
        return (
            f"you must play {card_label(KING_OF_HEARTS)} at the first chance, and {when} "
            "(this table's rule barbu_king_first_chance)"
        )
    if code is Refusal.NOT_ON_LAYOUT:
        start = RANK_NAMES[view.start_rank] if view.start_rank >= 0 else "starting rank"
        return (
            f"{card_label(action)} cannot go on the layout now: each suit's row starts with its {start} "
            "and grows one rank at a time, up and down"
        )
    if code is Refusal.MUST_PLACE:
        return "you may not pass: a card of yours can go on the layout"
    if code is Refusal.ALREADY_DECLARED:
        return (
            f"you have already declared {CONTRACT_LABELS[action - DECLARE_OFFSET]}: "
            "each declarer plays each contract once"
        )
    declarer = _seat(view, view.declarer)
    if code is Refusal.MUST_DOUBLE_DECLARER:
        n, owed = rules.min_declarer_doubles, _owed(view, rules)
        times = {1: "once", 2: "twice"}.get(n, f"{n} times")
        left = view.contracts_left[view.declarer].bit_count() + 1
        still = f", and you still owe them {owed} in their {left} hand{'s' * (left > 1)} left" if owed else ""
        return (
            f"you must double the declarer, {declarer}, now: each player must double each declarer at least "
            f"{times} in their 7 hands (this table's rule min_declarer_doubles){still}"
        )
    if code is Refusal.DECLARER_REDOUBLES_ONLY:
        doubled_me = [p for p in range(NUM_PLAYERS) if p != view.viewer and view.named[p][view.viewer]]
        return (
            "as declarer you may only redouble players who doubled you "
            f"({' and '.join(_seat(view, p) for p in doubled_me) or 'nobody has'} doubled you)"
        )
    if code is Refusal.DECLARER_ONLY_CONTRACT:
        return f"in {contract} only the declarer, {declarer}, may be doubled"
    if code is Refusal.DECLARER_ONLY_RULE:
        return (
            f"only the declarer, {declarer}, may be doubled at this table "
            "(this table's rule doubling_targets: declarer_only)"
        )
    if code is Refusal.REDOUBLE_PASS_ONLY:
        return (
            "in the redoubling pass you may only redouble players after you who doubled you "
            "(this table's rule redouble_pass)"
        )
    raise ValueError(f"no words for refusal {code!r}")  # a code added to Refusal without its words


def refusal_text(view: TableView, action: int, code: Refusal | None = None, choices: str | None = None) -> str:
    """The answer to ``action`` refused to ``view``'s seat: :func:`reason`, then what it may
    do instead: in play the cards it may play, else ``choices`` (default: its legal actions
    as ``choice_text``); ``code``: the kernels' reason if the caller has it (read from the view
    otherwise). A view whose mask and code disagree (rules other than
    the game's) gets "... is not one of your choices now" instead of a reason."""
    if choices is None:
        choices = ", ".join(choice_text(a) for a in view.legal)
    try:
        code = refusal_code(view, action) if code is None else Refusal(code)
    except ValueError:
        code = None
    if code is None or code is Refusal.LEGAL:
        what = choice_text(action) if isinstance(action, int) and 0 <= action < NUM_ACTIONS else repr(action)
        return f"{what} is not one of your choices now: {choices}"
    why = reason(view, action, code)
    if code in (Refusal.NO_SUCH_ACTION, Refusal.GAME_OVER, Refusal.ALREADY_DECLARED):
        return why
    if view.phase in (Phase.TRICKS, Phase.DOMINO):
        cards = ", ".join(card_label(c) for c in view.legal if c < DECLARE_OFFSET)
        return f"{why}; you may play {cards}" if cards else f"{why}; you can only pass"
    return f"{why}; your choices: {choices}"


__all__ = ["reason", "refusal_code", "refusal_text"]
