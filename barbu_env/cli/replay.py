"""``barbu replay``: a game record (someone else's, maybe: read as
``barbu_env.evaluation.records`` reads a stranger's file) replayed through the environment,
then printed hand by hand or drawn as a clip (``barbu_env.view.frames``)."""

from __future__ import annotations

import argparse

from ..util.argtypes import positive_float, positive_int
from ..util.files import check_writable


def add(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "replay",
        help="check a game record and print it hand by hand",
        description="Replay a game record's actions through the environment on its deals, check that every "
        "hand result and the final scores come out as recorded, and print the game hand by hand.",
    )
    p.add_argument("file", metavar="FILE", help="a game record (JSON), e.g. from barbu eval --records")
    p.add_argument("--hand", type=positive_int, action="append", metavar="N", help="print only hand N; repeatable")
    p.add_argument("--no-check", action="store_true", help="print without replaying through the environment first")
    p.add_argument(
        "--video",
        metavar="OUT.gif|OUT.mp4",
        help="draw the game (or the --hand hands) as a clip instead of printing it; MP4 needs the video extra",
    )
    p.add_argument(
        "--every",
        choices=("trick", "card"),
        default="trick",
        help="with --video: a frame per completed trick (default) or per card",
    )
    p.add_argument(
        "--fps",
        type=_fps,
        default=2.0,
        help="with --video: frames per second, 0.1 (a frame every ten seconds) to 50 (default 2)",
    )
    p.add_argument("--seat", type=int, choices=range(4), default=0, help="with --video: the seat drawn at the bottom")
    return p


def _fps(text: str) -> float:
    """A ``--fps`` value: a number in ``barbu_env.view.frames.FPS_RANGE``."""
    from ..view.frames import check_fps

    try:
        return check_fps(positive_float(text))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def run(args: argparse.Namespace) -> int:
    from ..evaluation.records import GameRecord, render_record, replay_record

    record = GameRecord.load(args.file)
    if not args.no_check:
        hands, _ = replay_record(record)
    if args.video:
        check_writable(args.video, "--video")  # before drawing the frames
        return _write_replay_video(record, args)
    print(render_record(record, hands=args.hand))
    if not args.no_check:
        scores = "the final scores" if record.finished else "the scores of an unfinished game"
        print(f"Replayed through barbu_env.env(): {len(hands)} hand results and {scores} match the record.")
    return 0


def _write_replay_video(record, args: argparse.Namespace) -> int:
    import numpy as np

    from ..game.engine import BarbuState
    from ..view.frames import record_frames, write_video

    state = BarbuState.new_game(
        record.rules_obj(), rng=np.random.default_rng(0), first_declarer=record.first_declarer, deals=record.deals
    )
    frames = record_frames(state, record.actions, record.agents, viewer=args.seat, every=args.every, hands=args.hand)
    count = write_video(frames, args.video, fps=args.fps)
    print(f"{count} frames written to {args.video}")
    return 0
