"""An observation or information-state tensor in words: ``describe``.

``describe(x)`` reads a tensor of ``OBS_DIM`` values (``BarbuState.observe``) or
``INFO_DIM`` values (``BarbuState.information_state``) slice by slice
(``barbu_env.game.observation``'s layouts) and writes what a person would read there,
seats named relative to the player (me, left, opposite, right). Every value of the tensor
is in the text, so two tensors that differ have texts that differ: the OpenSpiel game's
observation and information-state strings (``barbu_env.envs.openspiel``) are these texts,
and search keys its tree by them. It needs no OpenSpiel.
"""

from __future__ import annotations

import numpy as np

from ..game.cards import NUM_CARDS, RANK_NAMES, SUIT_NAMES, card_text
from ..game.constants import CARDS_PER_HAND, CONTRACT_NAMES, NUM_CONTRACTS, NUM_PLAYERS, Phase
from ..game.observation import INFO_DIM, INFO_OFFSETS, OBS_DIM, OFFSETS

_RELATIVE = ("me", "left", "opposite", "right")
_PHASE_NAMES = tuple(p.name.lower() for p in Phase)
_CARD_TEXT = tuple(card_text(c) for c in range(NUM_CARDS))
#: Per tensor size (an observation, an information state): its slice names, their starts, their shapes.
_LAYOUTS = {
    dim: (list(offsets), np.array([a for a, _, _ in offsets.values()]), [shape for _, _, shape in offsets.values()])
    for dim, offsets in ((OBS_DIM, OFFSETS), (INFO_DIM, INFO_OFFSETS))
}


def _split(x: np.ndarray) -> dict[str, list[tuple[int, float]]]:
    """The tensor's non-zero values per slice: name -> [(index within the slice, value)]."""
    names, starts, _ = _LAYOUTS[len(x)]
    nz = np.flatnonzero(x)
    where = (np.searchsorted(starts, nz, side="right") - 1).tolist()
    out: dict[str, list[tuple[int, float]]] = {}
    for i, v, k in zip(nz.tolist(), x[nz].tolist(), where):
        out.setdefault(names[k], []).append((i - int(starts[k]), v))
    return out


def _cards(items) -> str:
    return " ".join(_CARD_TEXT[i] for i, _ in items) or "-"


def _one(items, names) -> str | None:
    return names[items[0][0]] if items else None


def _seats(indices) -> str:
    return "+".join(_RELATIVE[i] for i in indices) or "nobody"


def _rows(items, width: int) -> dict[int, list[tuple[int, float]]]:
    """A 2-D slice's non-zero values by row: row -> [(column, value)]."""
    out: dict[int, list[tuple[int, float]]] = {}
    for i, v in items:
        out.setdefault(i // width, []).append((i % width, v))
    return out


def _numbers(x: np.ndarray, name: str, scale: float) -> str:
    a, b, _ = OFFSETS[name]
    return " ".join(f"{_RELATIVE[r]}={round(v * scale):g}" for r, v in enumerate(x[a:b].tolist()))


def describe(x: np.ndarray, at_chance: bool = False) -> str:
    """A person's reading of an observation (OBS_DIM values) or an information state
    (INFO_DIM), relative seats named me/left/opposite/right; every value of the tensor
    is in the text, so two tensors that differ have texts that differ."""
    x = np.asarray(x, dtype=np.float32)
    f = _split(x)
    get = f.get
    hand_no = _one(get("hand_number", ()), range(1, 29))
    phase = _one(get("phase", ()), _PHASE_NAMES)
    head = [f"hand {hand_no}" if hand_no else "no hand", "dealing" if at_chance else (phase or "-")]
    for name, label, names in (
        ("declarer", "declarer", _RELATIVE),
        ("contract", "contract", CONTRACT_NAMES),
        ("trump", "trump", SUIT_NAMES),
        ("domino_rank", "domino rank", RANK_NAMES),
        ("to_act", "to act", _RELATIVE),
    ):
        v = _one(get(name, ()), names)
        if v is not None:
            head.append(f"{label} {v}")
    lines = [", ".join(head), f"hand: {_cards(get('hand', ()))}"]
    for name in ("trick", "played", "taken", "excluded"):
        if name in f:
            rows = _rows(f[name], NUM_CARDS)
            lines.append(f"{name}: " + "; ".join(f"{_RELATIVE[r]} {_cards(rows[r])}" for r in sorted(rows)))
    if "domino_playable" in f:
        lines.append(f"domino playable: {_cards(f['domino_playable'])}")
    if "doubled" in f or "doubling_done" in f:
        named = _rows(get("doubled", ()), NUM_PLAYERS)
        text = f"doubling done: {_seats(i for i, _ in get('doubling_done', ()))}"
        lines.append(text + "".join(f"; {_RELATIVE[i]} named {_seats(c for c, _ in named[i])}" for i in sorted(named)))
    a, b, _ = OFFSETS["owed"]
    owed = x[a:b].reshape(NUM_PLAYERS, NUM_PLAYERS).tolist()
    lines.append(
        "owed: " + "; ".join(f"{_RELATIVE[i]} " + " ".join(f"{v:g}" for v in row) for i, row in enumerate(owed))
    )
    left = _rows(get("contracts_left", ()), NUM_CONTRACTS)
    lines.append(
        "contracts left: "
        + "; ".join(
            f"{_RELATIVE[i]} " + (",".join(CONTRACT_NAMES[c] for c, _ in left.get(i, ())) or "-")
            for i in range(NUM_PLAYERS)
        )
    )
    lines.append(f"scores: {_numbers(x, 'game_scores', 100)}")
    play = [f"cards left: {_numbers(x, 'cards_left', CARDS_PER_HAND)}"]
    leader = _one(get("leader", ()), _RELATIVE)
    trick_no = _one(get("trick_number", ()), range(1, 14))
    if leader is not None or trick_no is not None:
        play.append(f"trick {trick_no} led by {leader}")
    if "tricks_won" in f:
        play.append(f"tricks won: {_numbers(x, 'tricks_won', CARDS_PER_HAND)}")
    if "hand_points" in f:
        play.append(f"points: {_numbers(x, 'hand_points', 10)}")
    if "domino_place" in f:
        out = _rows(f["domino_place"], NUM_PLAYERS)
        play.append("out: " + " ".join(f"{_RELATIVE[i]}={out[i][0][0] + 1}" for i in sorted(out)))
    if "voids" in f:
        voids = _rows(f["voids"], 4)
        play.append(
            "voids: "
            + "; ".join(f"{_RELATIVE[i]} " + ",".join(SUIT_NAMES[s] for s, _ in voids[i]) for i in sorted(voids))
        )
    lines.append(", ".join(play))
    if len(x) == INFO_DIM:
        lines += _describe_record(f)
    return "\n".join(lines)


def _describe_record(f: dict[str, list[tuple[int, float]]]) -> list[str]:
    """The information state's record of the hand: dealt, doubling turns, cards in order, passes."""
    lines = [f"dealt: {_cards(f.get('dealt', ()))}"]
    turns = _rows(f.get("doubling_turns", ()), 2 * NUM_PLAYERS)
    if turns:
        lines.append(
            "doubling turns: "
            + "; ".join(
                f"{_RELATIVE[next((c for c, _ in turns[t] if c < NUM_PLAYERS), 0)]} named "
                + _seats(c - NUM_PLAYERS for c, _ in turns[t] if c >= NUM_PLAYERS)
                for t in sorted(turns)
            )
        )
    order = _rows(f.get("play_order", ()), NUM_CARDS)
    if order:
        who = {c: r for r, items in _rows(f.get("played", ()), NUM_CARDS).items() for c, _ in items}
        domino = _one(f.get("contract", ()), CONTRACT_NAMES) == "domino"
        items = []
        for k in sorted(order):
            c = order[k][0][0]
            mark = "" if domino or k % 4 else f"| trick {k // 4 + 1}: "
            items.append(f"{mark}{_RELATIVE[who[c]] if c in who else '?'} {_CARD_TEXT[c]}")
        lines.append(("placed: " if domino else "play: ") + " ".join(items).lstrip("| "))
    passes = _rows(f.get("domino_passes", ()), NUM_CARDS)
    if passes:
        lines.append(
            "passes: "
            + "; ".join(f"{_RELATIVE[r]} at " + ",".join(str(k) for k, _ in passes[r]) for r in sorted(passes))
        )
    return lines


__all__ = ["describe"]
