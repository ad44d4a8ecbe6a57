"""Pictures of the table: ``render_mode="rgb_array"`` on both environments, and the clips of
``barbu replay --video``. The expectations are regions of the picture: where the seat at
the bottom puts its card on the trick, and whether a hand is drawn face up or as backs;
``tests/data/frames/trick.png`` is a whole expected frame, compared within a tolerance
(fonts are anti-aliased differently from one FreeType to another)."""

from __future__ import annotations

from pathlib import Path

import gymnasium
import numpy as np
import pytest
from PIL import Image

import barbu_env
import barbu_env.envs.gym_env  # noqa: F401 (registers Barbu-v1)
from barbu_env.cli.main import main
from barbu_env.evaluation.records import GameRecord
from barbu_env.game.engine import BarbuState, Phase
from barbu_env.view.frames import (
    BACK,
    CARD_FACE,
    CARD_H,
    CARD_W,
    FELT_DARK,
    FRAME_HEIGHT,
    FRAME_WIDTH,
    TRICK_SPOTS,
    record_frames,
    state_frame,
    write_video,
)

EXPECTED = Path(__file__).parent / "data" / "frames" / "trick.png"


def region(frame: np.ndarray, x: int, y: int, w: int = CARD_W, h: int = CARD_H) -> np.ndarray:
    return frame[y : y + h, x : x + w]


def share_of(pixels: np.ndarray, colour: tuple[int, int, int]) -> float:
    return float(np.all(pixels == np.array(colour, dtype=np.uint8), axis=-1).mean())


def to_play(seed: int = 0) -> BarbuState:
    """A game at its first card of trick play, seat 0 to lead (declaring and doubling done)."""
    state = BarbuState.new_game(rng=np.random.default_rng(seed), first_declarer=0)
    state.apply_action(52)  # No Tricks
    while state.phase is Phase.DOUBLE:
        state.apply_action(76)
    assert state.current_player == 0
    return state


def test_the_aec_frame_changes_where_the_bottom_seat_plays_its_card():
    env = barbu_env.env(render_mode="rgb_array")
    env.reset(seed=0, options={"first_declarer": 0})
    for action in [52, 76, 76, 76, 76]:  # No Tricks, nobody doubles
        env.step(action)
    before = env.render()
    assert before.shape == (FRAME_HEIGHT, FRAME_WIDTH, 3) and before.dtype == np.uint8
    spot = TRICK_SPOTS["bottom"]
    assert share_of(region(before, *spot), FELT_DARK) > 0.95  # an empty place on the table
    card = int(np.flatnonzero(env.last()[0]["action_mask"])[0])
    env.step(card)
    after = env.render()
    assert share_of(region(after, *spot), CARD_FACE) > 0.5  # the card, face up
    for place in ("top", "left", "right"):  # the other places of the trick stay empty
        assert np.array_equal(region(before, *TRICK_SPOTS[place]), region(after, *TRICK_SPOTS[place])), place


def test_the_aec_frame_shows_every_hand_and_the_gym_frame_only_the_learners():
    top = (FRAME_WIDTH // 2 - 30, 90, 60, 40)  # the middle of the top seat's hand
    env = barbu_env.env(render_mode="rgb_array")
    env.reset(seed=1)
    assert share_of(region(env.render(), *top), CARD_FACE) > 0.3
    gym = gymnasium.make("Barbu-v1", opponents="random", render_mode="rgb_array")
    gym.reset(seed=1)
    frame = gym.render()
    assert frame.shape == (FRAME_HEIGHT, FRAME_WIDTH, 3)
    assert share_of(region(frame, *top), BACK) > 0.3 and share_of(region(frame, *top), CARD_FACE) == 0
    bottom = (FRAME_WIDTH // 2 - 30, FRAME_HEIGHT - 80, 60, 40)
    assert share_of(region(frame, *bottom), CARD_FACE) > 0.3


def test_a_frame_matches_the_expected_picture():
    state = to_play(seed=3)
    for _ in range(3):
        state.apply_action(state.legal_actions()[0])
    frame = state_frame(state, viewer=0, reveal=True, labels=["you", "heuristic", "random", "heuristic"])
    expected = np.asarray(Image.open(EXPECTED).convert("RGB"))
    assert frame.shape == expected.shape
    differs = np.abs(frame.astype(int) - expected.astype(int)).max(axis=-1) > 60
    assert differs.mean() < 0.01, f"{differs.mean():.2%} of the pixels differ from {EXPECTED.name}"


def test_a_hand_of_a_record_becomes_a_frame_per_trick(tmp_path):
    state = to_play(seed=5)
    while state.hand_number == 0:
        state.apply_action(state.legal_actions()[-1])
    record = GameRecord.from_state(state)
    replay = BarbuState.new_game(record.rules_obj(), first_declarer=0, deals=record.deals)
    frames = list(record_frames(replay, record.actions, hands=[1]))
    tricks = sum(record.hands[0]["tricks"])
    assert len(frames) == 1 + tricks  # play begins, then each trick
    assert all(f.shape == (FRAME_HEIGHT, FRAME_WIDTH, 3) for f in frames)
    path = tmp_path / "hand.gif"
    assert write_video(frames, path, fps=4) == len(frames)
    gif = Image.open(path)
    assert gif.n_frames == len(frames) and gif.size == (FRAME_WIDTH, FRAME_HEIGHT)
    with pytest.raises(ValueError, match="ends in .gif or .mp4"):
        write_video(frames, tmp_path / "hand.avi")


def test_barbu_replay_writes_a_clip(tmp_path, capsys):
    state = to_play(seed=2)
    while state.hand_number < 2:
        state.apply_action(state.legal_actions()[0])
    path = GameRecord.from_state(state, agents=["a", "b", "c", "d"]).save(tmp_path / "game.json")
    assert main(["replay", str(path), "--video", str(tmp_path / "game.gif"), "--hand", "2"]) == 0
    assert "frames written to" in capsys.readouterr().out
    assert Image.open(tmp_path / "game.gif").n_frames > 5  # play begins, then a frame per trick
    assert main(["replay", str(path), "--video", str(tmp_path / "game.webm")]) == 1
    assert "ends in .gif or .mp4" in capsys.readouterr().err


def test_an_mp4_is_written_with_the_video_extra(tmp_path):
    pytest.importorskip("imageio_ffmpeg")
    frames = [state_frame(to_play(seed=0))] * 3
    path = tmp_path / "clip.mp4"
    assert write_video(frames, path, fps=2) == 3 and path.stat().st_size > 1000
