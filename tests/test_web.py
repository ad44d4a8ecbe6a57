"""The browser table (``barbu serve``): its API refuses every bad request with a 4xx and an
unchanged game, and in headless Chromium a person plays a hand by clicking, has an illegal
click refused, and steps through a replay.

The browser tests need Debian's ``chromium`` and Playwright (in the dev extra); without
them they are skipped, except under ``BARBU_REQUIRE_BROWSER=1`` (``.ci/run``'s browser
step), where a missing browser fails. Screenshots go to ``$BARBU_SCREENSHOTS`` if set
(else the test's temporary directory)."""

from __future__ import annotations

import json
import os
import shutil
import urllib.error
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")

from live_server import serving  # noqa: E402

from barbu_env.agents import make_agent  # noqa: E402
from barbu_env.evaluation.records import GameRecord, replay_record  # noqa: E402
from barbu_env.game.engine import BarbuState  # noqa: E402
from barbu_env.play.terminal import play_at_terminal  # noqa: E402
from barbu_env.play.web.server import create_app  # noqa: E402

REQUIRE_ENV = "BARBU_REQUIRE_BROWSER"


@pytest.fixture(scope="module")
def server():
    """The app on a free port of 127.0.0.1, in a thread; yields its base URL."""
    with serving(create_app(["human", "heuristic", "heuristic", "random"], seed=0)) as port:
        yield f"http://127.0.0.1:{port}"


def call(base: str, method: str, path: str, body=None, raw: bytes | None = None) -> tuple[int, dict]:
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    request = urllib.request.Request(base + path, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read() or b"{}")


def record_file(path: Path, hands: int = 2, seed: int = 7) -> Path:
    """A record of the first ``hands`` hands of a game among baselines."""
    state = BarbuState.new_game(rng=np.random.default_rng(seed))
    agents = [make_agent(name, seed=k) for k, name in enumerate(["heuristic", "random", "heuristic", "random"])]
    play_at_terminal(agents, ["heuristic", "random", "heuristic", "random"], hands=hands, state=state)
    return GameRecord.from_state(state, agents=["heuristic", "random", "heuristic", "random"]).save(path)


def first_card_choice(view: dict) -> int:
    return next(a["id"] for a in view["legal"] if a["id"] < 52 or a["id"] == 84)


def play_to_cards(base: str) -> dict:
    """A new one-hand game, the person's declaring and doubling done: the person to play a card."""
    status, view = call(base, "POST", "/api/games", {"hands": 1, "seed": 11})
    assert status == 201
    while view["phase"] not in ("TRICKS", "DOMINO") or not view["legal"]:
        choice = view["legal"][0]["id"]
        if view["phase"] == "DECLARE":
            choice = 52  # No Tricks: a trick contract
        status, view = call(base, "POST", f"/api/games/{view['game']}/actions", {"action": choice})
        assert status == 200
    return view


# ---------------------------------------------------------------------- the API


def test_a_new_game_shows_only_the_persons_hand(server):
    status, view = call(server, "POST", "/api/games", {"hands": 1, "seed": 3})
    assert status == 201 and view["viewer"] == 0 and list(view["hands"]) == ["0"]
    assert len(view["hands"]["0"]) == 13 and view["cards_left"] == [13, 13, 13, 13]
    assert view["labels"] == ["you", "heuristic", "heuristic", "random"]
    status, again = call(server, "GET", f"/api/games/{view['game']}")
    assert status == 200 and again["hands"] == view["hands"]


def test_an_illegal_action_is_refused_with_its_reason_and_changes_nothing(server):
    view = play_to_cards(server)
    game = view["game"]
    legal = {a["id"] for a in view["legal"]}
    illegal_cards = [c for c in view["hands"]["0"] if c not in legal]
    if not illegal_cards:
        pytest.skip("every card of this hand is playable at this trick")
    status, refused = call(server, "POST", f"/api/games/{game}/actions", {"action": illegal_cards[0]})
    assert status == 422 and refused["detail"].startswith("not allowed: ")
    for bad in ({"action": 53}, {"action": 90}):  # not this phase's, no action at all
        assert call(server, "POST", f"/api/games/{game}/actions", bad)[0] == 422, bad
    status, after = call(server, "GET", f"/api/games/{game}")
    assert status == 200 and after == view


def test_unknown_games_opponents_and_presets_are_4xx(server):
    assert call(server, "GET", "/api/games/nosuchgame")[0] == 404
    assert call(server, "POST", "/api/games/nosuchgame/actions", {"action": 0})[0] == 404
    assert call(server, "POST", "/api/games", {"opponents": ["heuristic", "random", "/etc/passwd"]})[0] == 422
    assert call(server, "POST", "/api/games", {"opponents": ["random"]})[0] == 422
    assert call(server, "POST", "/api/games", {"rules": "../../secret"})[0] == 422
    assert call(server, "POST", "/api/games", {"hands": 29})[0] == 422
    assert call(server, "POST", "/api/games", {"colour": "red"})[0] == 422


def test_a_finished_game_refuses_actions_and_its_record_replays(server):
    view = play_to_cards(server)
    game = view["game"]
    while not view["over"]:
        status, view = call(server, "POST", f"/api/games/{game}/actions", {"action": first_card_choice(view)})
        assert status == 200
    assert view["hands_played"] == 1 and view["last_result"][0].startswith("Hand 1 over")
    status, refused = call(server, "POST", f"/api/games/{game}/actions", {"action": 0})
    assert status == 409 and "over" in refused["detail"]
    status, data = call(server, "GET", f"/api/games/{game}/record")
    assert status == 200
    hands, scores = replay_record(GameRecord.from_dict(data))
    assert len(hands) == 1 and scores == data["final_scores"]


def test_a_replay_is_checked_then_given_trick_by_trick(server, tmp_path):
    data = json.loads(record_file(tmp_path / "r.json").read_text())
    status, replay = call(server, "POST", "/api/replays", data)
    assert status == 201 and replay["labels"] == ["heuristic", "random", "heuristic", "random"]
    steps = replay["steps"]
    assert {s["hand_number"] for s in steps} == {1, 2}
    assert all(len(s["hands"]) == 4 for s in steps)  # every hand shown
    assert call(server, "GET", f"/api/replays/{replay['id']}") == (200, replay)
    edited = dict(data, final_scores=[s + 1 for s in data["final_scores"]])
    status, refused = call(server, "POST", "/api/replays", edited)
    assert status == 422 and "final scores" in refused["detail"]


def test_the_table_needs_exactly_one_human():
    with pytest.raises(ValueError, match="exactly one 'human'"):
        create_app(["heuristic", "heuristic", "heuristic", "heuristic"])


# ---------------------------------------------------------------------- in a real browser


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as e:
        chromium, missing = None, f"playwright is not installed ({e})"
    else:
        missing = "Debian's chromium is not installed (apt-get install chromium)"
    if chromium is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"{missing}, and {REQUIRE_ENV}=1 requires it", pytrace=False)
        pytest.skip(missing)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    page = browser.new_page(viewport={"width": 1360, "height": 720})
    yield page
    page.close()


@pytest.fixture
def shots(tmp_path) -> Path:
    folder = Path(os.environ.get("BARBU_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def declaring_seed(base: str) -> int:
    """A game seed whose first hand the person (seat 0) declares."""
    for seed in range(100):
        status, view = call(base, "POST", "/api/games", {"hands": 1, "seed": seed})
        if view["phase"] == "DECLARE" and view["legal"]:
            return seed
    raise AssertionError("no seed in 0..99 lets seat 0 declare first")


def open_table(page, url: str) -> None:
    """Open the table page and wait for the game it starts by itself to be shown (a click on
    "new game" before that races it: the first game's table can arrive after the click's)."""
    page.goto(url)
    page.wait_for_function("() => Number(document.body.dataset.shown || 0) > 0")


def act(page, selector: str) -> None:
    """Click ``selector`` and wait for the table the server answers with."""
    shown = page.evaluate("() => Number(document.body.dataset.shown || 0)")
    page.click(selector)
    page.wait_for_function(f"() => Number(document.body.dataset.shown || 0) > {shown}")


def test_a_whole_hand_is_played_by_clicking(server, page, shots):
    open_table(page, f"{server}/?seed={declaring_seed(server)}")
    page.select_option("#hands", "1")
    act(page, "#new-game")
    page.wait_for_selector("#choices button[data-action='52']")
    page.screenshot(path=str(shots / "declare.png"))
    act(page, "#choices button[data-action='52']")  # No Tricks
    clicks = 0
    while "Done" not in page.inner_text("#status"):
        if page.query_selector("#choices button[data-action]") is not None:  # the doubling turn
            act(page, "#choices button[data-action]")
        else:
            act(page, ".hand-mine .card.legal >> nth=0")
            clicks += 1
            if clicks == 6:
                page.screenshot(path=str(shots / "tricks.png"))
        assert page.inner_text("#message") == "" and clicks <= 13
    assert clicks == 13 and page.query_selector_all(".hand-mine .card") == []
    assert "Hand 1 over" in page.inner_text("#log")
    page.screenshot(path=str(shots / "hand_over.png"))


def test_an_illegal_click_is_refused_and_the_table_stays(server, page, shots):
    open_table(page, f"{server}/?seed={declaring_seed(server)}")
    page.select_option("#hands", "1")
    act(page, "#new-game")
    act(page, "#choices button[data-action='52']")
    for _ in range(20):  # to a trick where some card of the hand may not be played
        if page.query_selector("#choices button[data-action]"):
            act(page, "#choices button[data-action]")
        elif page.query_selector(".hand-mine .card.dim"):
            break
        else:
            act(page, ".hand-mine .card.legal >> nth=0")
    dim = page.query_selector(".hand-mine .card.dim")
    assert dim is not None, "no trick asked the person to follow suit"
    held = [c.get_attribute("data-card") for c in page.query_selector_all(".hand-mine .card")]
    trick = page.inner_html("#trick")
    dim.click()
    page.wait_for_selector("#message.error")
    assert page.inner_text("#message").startswith("not allowed: you must follow suit")
    assert [c.get_attribute("data-card") for c in page.query_selector_all(".hand-mine .card")] == held
    assert page.inner_html("#trick") == trick
    page.screenshot(path=str(shots / "illegal.png"))


def test_a_replay_is_stepped_forward_and_back(server, page, shots, tmp_path):
    path = record_file(tmp_path / "replay.json")
    _, replay = call(server, "POST", "/api/replays", json.loads(path.read_text()))
    steps = replay["steps"]
    page.goto(server + "/replay")
    page.set_input_files("#record-file", str(path))
    page.wait_for_selector("#step-label:has-text('step 1 of')")
    assert "P1 random" in page.inner_text("#table")  # the seat names, sent once for all the steps

    def trick_shown() -> list[list[int]]:
        return [int(c.get_attribute("data-card")) for c in page.query_selector_all("#trick .card")]

    for k in range(1, 6):
        page.click("#next")
        page.wait_for_selector(f"#step-label:has-text('step {k + 1} of {len(steps)}')")
        assert trick_shown() == [card for _, card in steps[k]["trick"]]
    page.screenshot(path=str(shots / "replay.png"))
    page.click("#prev")
    page.wait_for_selector(f"#step-label:has-text('step 5 of {len(steps)}')")
    assert trick_shown() == [card for _, card in steps[4]["trick"]]
    page.click("#next-hand")
    page.wait_for_selector("#step-label:has-text('hand 2')")
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#step-label:has-text('hand 1')")


def test_two_checkpoints_with_one_file_name_are_two_opponents_wherever_the_person_sits(tmp_path):
    from barbu_env.agents.pretrained import checkpoint_path

    for folder in ("ra", "rb"):
        (tmp_path / folder).mkdir()
        shutil.copy(checkpoint_path("ppo"), tmp_path / folder / "best.pt")
    ra, rb = str(tmp_path / "ra" / "best.pt"), str(tmp_path / "rb" / "best.pt")
    with serving(create_app([ra, "human", rb, "heuristic"], seed=0)) as port:
        base = f"http://127.0.0.1:{port}"
        status, setup = call(base, "GET", "/api/setup")
        assert status == 200 and setup["opponents"] == [rb, "heuristic", ra]  # left, opposite, right
        assert {rb, ra} <= set(setup["choices"])
        status, view = call(base, "POST", "/api/games", {"hands": 1, "seed": 3})  # the table's own opponents
        assert status == 201 and view["labels"] == [ra, "you", rb, "heuristic"]
        status, view = call(base, "POST", "/api/games", {"hands": 1, "seed": 3, "opponents": [ra, rb, "random"]})
        assert status == 201 and view["labels"] == ["random", "you", ra, rb]


def test_the_pages_files_answer_get_head_and_conditional_requests_and_nothing_outside(tmp_path):
    import http.client

    with serving(create_app(["human", "random", "random", "random"], seed=0)) as port:

        def ask(method: str, path: str, **headers: str) -> tuple[int, bytes, dict]:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request(method, path, headers=headers)
            answer = conn.getresponse()
            body = answer.read()
            conn.close()
            return answer.status, body, dict(answer.getheaders())

        status, body, headers = ask("GET", "/static/table.js")
        assert status == 200 and b"function" in body and headers["content-type"].startswith("text/javascript")
        etag = headers["etag"]
        for path in ("/", "/replay", "/static/style.css"):
            assert ask("HEAD", path)[0] == 200 and ask("HEAD", path)[1] == b""
        assert ask("GET", "/static/table.js", **{"If-None-Match": etag})[0] == 304
        assert ask("GET", "/static/table.js", **{"If-None-Match": '"other"'})[0] == 200
        for path in ("/static/../server.py", "/static/%2e%2e/limits.py", "/static/..%2flimits.py", "/static/nope.js"):
            status, body, _ = ask("GET", path)
            assert status == 404 and b"def " not in body, path
