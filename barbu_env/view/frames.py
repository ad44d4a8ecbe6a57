"""Pictures of the table: the environments' ``render_mode="rgb_array"`` and ``barbu replay
--video``.

:func:`draw_table` draws a :class:`~barbu_env.view.table.TableView` with Pillow: the four seats
(the viewer at the bottom, then left, opposite and right clockwise as play goes), each
with its label, game score and, in trick play, tricks and points this hand; the hands
(face up where the view shows them, backs otherwise), the current trick in the middle or
the Domino layout, and a header with the hand number, declarer, contract and doubles.
:func:`state_frame` is the picture of a game state as ``uint8[H, W, 3]``
(``FRAME_HEIGHT x FRAME_WIDTH``). :func:`record_frames` turns a game record into frames
(one per trick, or per card) and :func:`write_video` writes them as a GIF (Pillow) or an
MP4 (the ``video`` extra: imageio with its ffmpeg), at ``FPS_RANGE`` frames per second,
whole or not at all (``barbu_env.util.files.replacing``: a failed write leaves any old file).

Fonts are matplotlib's DejaVu Sans (matplotlib is a dependency), which has the suit symbols.

>>> import numpy as np
>>> from barbu_env.game.engine import BarbuState
>>> frame = state_frame(BarbuState.new_game(rng=np.random.default_rng(0), first_declarer=0), viewer=0)
>>> frame.shape, frame.dtype
((640, 960, 3), dtype('uint8'))
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from functools import cache
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from ..game.cards import RANK_NAMES, SUIT_MASK, cards_of, rank_of, suit_of
from ..game.constants import NUM_HANDS, NUM_PLAYERS, Phase
from ..game.engine import BarbuState
from ..util.extras import require
from ..util.files import quote, replacing
from .table import FRAME_EVERY, SUIT_SYMBOLS, TableView, hand_suits, record_steps, state_view

FRAME_WIDTH, FRAME_HEIGHT = 960, 640
CARD_W, CARD_H = 56, 80
#: The Domino layout's smaller cards.
MINI_W, MINI_H = 30, 46
#: Visible part of a card under the next one: in a row (bottom and top hands) and in a column (side hands).
ROW_STEP, COLUMN_STEP = 34, 24
#: Colours.
FELT = (27, 94, 52)
FELT_DARK = (18, 66, 36)
HEADER = (16, 40, 26)
TEXT = (240, 240, 232)
DIM_TEXT = (170, 200, 178)
CARD_FACE = (252, 252, 248)
CARD_EDGE = (60, 60, 60)
RED = (200, 30, 40)
BLACK = (20, 20, 20)
BACK = (40, 70, 150)
BACK_LINE = (120, 150, 215)
TO_ACT = (250, 205, 60)
WINNER = (120, 230, 140)
#: Where each seat sits, by its place relative to the viewer: bottom, left, top, right.
PLACES = ("bottom", "left", "top", "right")
#: Top-left corner of the card each place has put on the current trick.
TRICK_SPOTS = {"bottom": (452, 352), "left": (356, 280), "top": (452, 208), "right": (548, 280)}


@cache
def _font(size: int, bold: bool = False) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    spec = importlib.util.find_spec("matplotlib")
    if spec is not None and spec.submodule_search_locations:
        name = "DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf"
        path = Path(spec.submodule_search_locations[0]) / "mpl-data" / "fonts" / "ttf" / name
        if path.exists():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def _suit_colour(card: int) -> tuple[int, int, int]:
    return RED if suit_of(card) in (1, 2) else BLACK


def _card(
    draw: ImageDraw.ImageDraw,
    x: int,
    y: int,
    card: int | None,
    edge: tuple[int, int, int] = CARD_EDGE,
    width: int = 1,
    index: str = "row",
) -> None:
    """A card with its top-left corner at (x, y): its face, or its back when ``card`` is None.
    The corner index (rank and suit) stacks downwards for cards overlapped in a row, and
    runs across for cards overlapped in a column (``index="column"``)."""
    box = (x, y, x + CARD_W, y + CARD_H)
    if card is None:
        draw.rounded_rectangle(box, radius=6, fill=BACK, outline=CARD_EDGE)
        draw.rounded_rectangle((x + 5, y + 5, x + CARD_W - 5, y + CARD_H - 5), radius=4, outline=BACK_LINE, width=2)
        return
    draw.rounded_rectangle(box, radius=6, fill=CARD_FACE, outline=edge, width=width)
    colour = _suit_colour(card)
    rank, symbol = RANK_NAMES[rank_of(card)], SUIT_SYMBOLS[suit_of(card)]
    font = _font(17, bold=True)
    draw.text((x + 5, y + 2), rank, fill=colour, font=font)
    if index == "column":
        draw.text((x + 7 + draw.textlength(rank, font=font), y + 3), symbol, fill=colour, font=_font(15))
    else:
        draw.text((x + 6, y + 21), symbol, fill=colour, font=_font(15))
    draw.text((x + CARD_W // 2 + 4, y + CARD_H - 12), symbol, fill=colour, font=_font(30), anchor="ms")


def _mini_card(draw: ImageDraw.ImageDraw, x: int, y: int, card: int) -> None:
    """A small card (the Domino layout): rank over suit."""
    draw.rounded_rectangle((x, y, x + MINI_W, y + MINI_H), radius=4, fill=CARD_FACE, outline=CARD_EDGE)
    colour = _suit_colour(card)
    draw.text((x + MINI_W / 2, y + 4), RANK_NAMES[rank_of(card)], fill=colour, font=_font(14, bold=True), anchor="mt")
    draw.text((x + MINI_W / 2, y + MINI_H - 4), SUIT_SYMBOLS[suit_of(card)], fill=colour, font=_font(16), anchor="mb")


def draw_table(
    view: TableView,
    labels: Sequence[str] | None = None,
    note: str | None = None,
    winner: int = -1,
) -> Image.Image:
    """The table of ``view`` as an RGB image (``FRAME_WIDTH x FRAME_HEIGHT``). ``labels`` name
    the seats' players, ``note`` is written across the bottom of the felt, ``winner``'s
    card in the trick (a seat, or -1) is outlined."""
    img = Image.new("RGB", (FRAME_WIDTH, FRAME_HEIGHT), FELT)
    draw = ImageDraw.Draw(img)
    draw.ellipse((200, 150, 760, 500), fill=FELT_DARK)
    _header(draw, view, labels)
    seats = [((view.viewer + k) % NUM_PLAYERS, PLACES[k]) for k in range(NUM_PLAYERS)]
    for seat, place in seats:
        _seat(draw, view, seat, place, labels)
    if view.phase is Phase.DOMINO:
        _domino(draw, view)
    elif view.phase is Phase.GAME_OVER:
        _final_scores(draw, view, labels)
    else:
        spot = {seat: TRICK_SPOTS[place] for seat, place in seats}
        for seat, card in view.trick:
            edge, width = (WINNER, 4) if seat == winner else (CARD_EDGE, 1)
            _card(draw, *spot[seat], card, edge=edge, width=width)
    if note:
        font = _font(16, bold=True)
        w = draw.textlength(note, font=font)
        draw.rounded_rectangle((480 - w / 2 - 10, 452, 480 + w / 2 + 10, 478), radius=8, fill=HEADER)
        draw.text((480, 465), note, fill=TO_ACT, font=font, anchor="mm")
    return img


def _final_scores(draw: ImageDraw.ImageDraw, view: TableView, labels: Sequence[str] | None) -> None:
    """The final scores, best first, in the middle of the table."""
    draw.text((480, 220), "Final scores", fill=TEXT, font=_font(24, bold=True), anchor="mm")
    ranked = sorted(range(NUM_PLAYERS), key=lambda p: -view.scores[p])
    for k, seat in enumerate(ranked):
        label = f"P{seat}" + (f" {labels[seat]}" if labels else "")
        y = 270 + 38 * k
        draw.text((380, y), f"{k + 1}.  {label}", fill=TO_ACT if k == 0 else TEXT, font=_font(20), anchor="lm")
        draw.text((600, y), f"{view.scores[seat]:+d}", fill=TO_ACT if k == 0 else TEXT, font=_font(20), anchor="rm")


def _header(draw: ImageDraw.ImageDraw, view: TableView, labels: Sequence[str] | None) -> None:
    draw.rectangle((0, 0, FRAME_WIDTH, 34), fill=HEADER)
    font = _font(16, bold=True)
    if view.phase is Phase.GAME_OVER:
        draw.text((12, 17), "Game over", fill=TEXT, font=font, anchor="lm")
        return
    left = f"Hand {view.hand_number + 1}/{NUM_HANDS}   {view.contract_text()}   declarer P{view.declarer}"
    draw.text((12, 17), left, fill=TEXT, font=font, anchor="lm")
    doubles = view.doubles()
    text = "doubles: " + (
        ", ".join(f"P{i}–P{j}" + (" redoubled" if level == 2 else "") for i, j, level in doubles) if doubles else "none"
    )
    if view.phase in (Phase.DECLARE, Phase.TRUMP, Phase.DOMINO_RANK):
        text = ""
    draw.text((FRAME_WIDTH - 12, 17), text, fill=DIM_TEXT, font=_font(14), anchor="rm")


def _seat(draw: ImageDraw.ImageDraw, view: TableView, seat: int, place: str, labels: Sequence[str] | None) -> None:
    label = f"P{seat}" + (f" {labels[seat]}" if labels else "")
    if seat == view.declarer and view.phase is not Phase.GAME_OVER:
        label += "  (declarer)"
    info = f"score {view.scores[seat]:+d}"
    if view.phase is Phase.TRICKS:
        info += f"   tricks {view.tricks_won[seat]}   points {view.points[seat]:+d}"
    elif view.phase is Phase.DOMINO and seat in view.out_order:
        info += f"   out {view.out_order.index(seat) + 1}."
    # its cards by suit (spades first, high to low) when the view shows that hand, else as many backs as it holds
    cards = (
        [c for suit in hand_suits(view.hands[seat]) for c in suit]
        if seat in view.hands
        else [None] * view.cards_left[seat]
    )
    colour = TO_ACT if seat == view.to_act else TEXT
    font, small = _font(15, bold=True), _font(13)
    if place in ("bottom", "top"):
        width = CARD_W + ROW_STEP * max(len(cards) - 1, 0)
        x0 = (FRAME_WIDTH - width) // 2
        y_cards, y_label = (FRAME_HEIGHT - CARD_H - 10, FRAME_HEIGHT - CARD_H - 50) if place == "bottom" else (76, 42)
        for k, card in enumerate(cards):
            _card(draw, x0 + k * ROW_STEP, y_cards, card)
        draw.text((FRAME_WIDTH // 2, y_label), label, fill=colour, font=font, anchor="mt")
        draw.text((FRAME_WIDTH // 2, y_label + 19), info, fill=DIM_TEXT, font=small, anchor="mt")
    else:
        x = 16 if place == "left" else FRAME_WIDTH - 16 - CARD_W
        for k, card in enumerate(cards):
            _card(draw, x, 112 + k * COLUMN_STEP, card, index="column")
        anchor_x, anchor = (16, "lt") if place == "left" else (FRAME_WIDTH - 16, "rt")
        draw.text((anchor_x, 48), label, fill=colour, font=font, anchor=anchor)
        draw.text((anchor_x, 68), info, fill=DIM_TEXT, font=small, anchor=anchor)
    if seat == view.to_act:
        _turn_marker(draw, place)


def _turn_marker(draw: ImageDraw.ImageDraw, place: str) -> None:
    """A small triangle pointing from the middle of the table towards the seat to act."""
    cx, cy = 480, 325
    dx, dy = {"bottom": (0, 1), "top": (0, -1), "left": (-1, 0), "right": (1, 0)}[place]
    tip = (cx + dx * 150, cy + dy * 120)
    base = (cx + dx * 130, cy + dy * 100)
    side = (dy * 10, dx * 10)
    draw.polygon(
        [tip, (base[0] + side[0], base[1] + side[1]), (base[0] - side[0], base[1] - side[1])],
        fill=TO_ACT,
    )


def _domino(draw: ImageDraw.ImageDraw, view: TableView) -> None:
    """The layout: a row per suit (spades on top), each card at its rank's place, so the
    rows line up rank by rank."""
    laid = view.laid()
    step, x0 = MINI_W + 2, FRAME_WIDTH // 2 - (13 * (MINI_W + 2)) // 2
    for row, s in enumerate((3, 2, 1, 0)):
        y = 206 + row * (MINI_H + 8)
        colour = RED if s in (1, 2) else BLACK
        draw.text((x0 - 12, y + MINI_H / 2), SUIT_SYMBOLS[s], fill=colour, font=_font(22), anchor="rm")
        for c in cards_of(laid & SUIT_MASK[s]):
            _mini_card(draw, x0 + rank_of(c) * step, y, c)


# ---------------------------------------------------------------------- states and records


def state_frame(
    state: BarbuState, viewer: int = 0, reveal: bool = False, labels: Sequence[str] | None = None
) -> np.ndarray:
    """The picture of ``state`` from ``viewer``'s seat (``reveal``: every hand face up) as
    ``uint8[FRAME_HEIGHT, FRAME_WIDTH, 3]``."""
    return np.asarray(draw_table(state_view(state, viewer, reveal=reveal), labels), dtype=np.uint8)


def record_frames(
    state: BarbuState,
    actions: Sequence[int],
    labels: Sequence[str] | None = None,
    viewer: int = 0,
    every: str = "trick",
    hands: Iterable[int] | None = None,
) -> Iterator[np.ndarray]:
    """Frames of a game played from ``state`` (a new game on a record's deals) by
    ``actions``: the steps of ``barbu_env.view.table.record_steps`` (every hand face up,
    ``viewer`` at the bottom; a frame as each hand's play begins, one per trick or card,
    the hand's scores), each drawn as ``uint8[FRAME_HEIGHT, FRAME_WIDTH, 3]``."""
    for step in record_steps(state, actions, viewer=viewer, every=every, hands=hands):
        yield np.asarray(draw_table(step.view, labels, note=step.note, winner=step.winner), dtype=np.uint8)


# ---------------------------------------------------------------------- video files

#: File endings ``write_video`` writes.
VIDEO_SUFFIXES = (".gif", ".mp4")
#: Frames per second a clip may have: from one frame every ten seconds to 50 a second. A
#: GIF counts each frame's time in hundredths of a second in 16 bits (Pillow adds up the
#: times of identical frames, and overflows past 655 s), and 2 hundredths is the shortest
#: time browsers show; MP4 takes the same range.
FPS_RANGE = (0.1, 50.0)


def check_fps(fps: float) -> float:
    """``fps`` as a float if it is in ``FPS_RANGE``, else a ``ValueError`` saying the range."""
    low, high = FPS_RANGE
    if not low <= float(fps) <= high:
        raise ValueError(f"frames per second run from {low:g} to {high:g}, not {fps}")
    return float(fps)


def write_video(frames: Iterable[np.ndarray], path: str | Path, fps: float = 2.0) -> int:
    """Write ``frames`` (``uint8[H, W, 3]``) to ``path``: a looping GIF (Pillow) or an MP4
    (imageio and imageio-ffmpeg, the ``video`` extra), whole or not at all: a failure
    leaves any old file at ``path`` as it was (``OutputError`` naming it for a failed
    write). ``fps`` must be in ``FPS_RANGE``. Returns the number of frames."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in VIDEO_SUFFIXES:
        raise ValueError(f"a video file ends in {' or '.join(VIDEO_SUFFIXES)}, not {quote(path.name)}")
    fps = check_fps(fps)
    if suffix == ".gif":
        images = [Image.fromarray(f).convert("P", palette=Image.Palette.ADAPTIVE, colors=96) for f in frames]
        if not images:
            raise ValueError("no frames to write")
        with replacing(path) as tmp:
            images[0].save(
                tmp,
                format="GIF",
                save_all=True,
                append_images=images[1:],
                duration=round(1000 / fps),
                loop=0,
                optimize=False,
            )
        return len(images)
    # The video extra, whole (imageio, and imageio-ffmpeg whose ffmpeg writes the frames).
    require("imageio.v2", "video", "writing MP4 (a .gif needs no extra)", package="imageio")
    ffmpeg = require("imageio_ffmpeg", "video", "writing MP4 (a .gif needs no extra)", package="imageio-ffmpeg")
    count = 0
    with replacing(path) as tmp:
        writer = None
        try:
            for frame in frames:
                if writer is None:  # the size is the first frame's; "-f mp4": the file's ending is not .mp4
                    height, width = frame.shape[:2]
                    writer = ffmpeg.write_frames(
                        str(tmp), (width, height), fps=fps, codec="libx264", quality=7, output_params=["-f", "mp4"]
                    )
                    writer.send(None)
                writer.send(np.ascontiguousarray(frame, dtype=np.uint8))
                count += 1
        finally:
            if writer is not None:
                writer.close()
        if count == 0:
            raise ValueError("no frames to write")
    return count


__all__ = [
    "FRAME_EVERY",
    "FRAME_HEIGHT",
    "FRAME_WIDTH",
    "FPS_RANGE",
    "VIDEO_SUFFIXES",
    "check_fps",
    "draw_table",
    "record_frames",
    "state_frame",
    "write_video",
]
