// The table page: start a game, show it from the person's seat, send their clicks.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  let view = null;
  let busy = false;

  async function call(method, url, body) {
    const response = await fetch(url, {
      method,
      headers: body === undefined ? {} : { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      const detail = typeof data.detail === "string" ? data.detail : JSON.stringify(data.detail || data);
      throw new Error(detail);
    }
    return data;
  }

  function say(text, error) {
    $("message").textContent = text || "";
    $("message").className = error ? "error" : "";
  }

  function show(next) {
    view = next;
    // Counts the tables shown, so that a test (or a person's script) can wait for the next one.
    document.body.dataset.shown = String(Number(document.body.dataset.shown || 0) + 1);
    const last = view.last_trick;
    // Between the person's turns, the last completed trick stays on the table until a card is led.
    const showLast = last && view.phase !== "DOMINO" && view.trick.length === 0 && view.phase !== "GAME_OVER";
    const shown = showLast ? Object.assign({}, view, { trick: last.cards }) : view;
    Barbu.render($("table"), shown, {
      onCard: (card) => act(card),
      winner: showLast ? last.winner : -1,
      note: showLast ? "trick to P" + last.winner + (last.points ? " (" + Barbu.signed(last.points) + ")" : "") : null,
    });
    $("contract").textContent = Barbu.headline(view);
    $("doubles").textContent = Barbu.doublesText(view);
    Barbu.scores($("scores"), view);
    $("log").textContent = view.log.join("\n");
    $("log").scrollTop = $("log").scrollHeight;
    $("record").href = "/api/games/" + view.game + "/record";
    const choices = $("choices");
    choices.replaceChildren();
    if (view.over) {
      $("status").textContent = view.phase === "GAME_OVER" ? "Game over." : "Done: " + view.hands_played + " hand(s) played.";
      if (view.last_result) $("status").textContent += " " + view.last_result.slice(1).join(" | ");
    } else if (view.legal.length) {
      const cards = view.legal.filter((a) => a.id < 52);
      $("status").textContent = cards.length ? "Your turn: click a card." : "Your turn: " + prompt(view.phase);
      for (const a of view.legal.filter((a) => a.id >= 52)) {
        const b = Barbu.el("button", "action", a.text);
        b.dataset.action = String(a.id);
        b.addEventListener("click", () => act(a.id));
        choices.append(b);
      }
    } else {
      $("status").textContent = "Waiting for P" + view.to_act + ".";
    }
  }

  function prompt(phase) {
    return { DECLARE: "choose a contract.", TRUMP: "name the trump suit.", DOMINO_RANK: "name the starting rank.",
      DOUBLE: "your doubling turn.", DOMINO: "you cannot play: pass." }[phase] || "choose.";
  }

  async function act(action) {
    if (!view || busy) return;
    busy = true;
    try {
      show(await call("POST", "/api/games/" + view.game + "/actions", { action }));
      say("");
    } catch (e) {
      say(e.message, true);
    } finally {
      busy = false;
    }
  }

  async function newGame() {
    const opponents = [1, 2, 3].map((k) => $("opp-" + k).value);
    const body = { opponents, hands: Number($("hands").value) };
    // "/?seed=N": the same deals and agents every time (the server draws a seed otherwise).
    const seed = new URLSearchParams(window.location.search).get("seed");
    if (seed !== null) body.seed = Number(seed);
    try {
      show(await call("POST", "/api/games", body));
      say("");
    } catch (e) {
      say(e.message, true);
    }
  }

  async function start() {
    const setup = await call("GET", "/api/setup");
    [1, 2, 3].forEach((k) => {
      const select = $("opp-" + k);
      for (const name of setup.choices) select.append(new Option(name, name));
      select.value = setup.opponents[k - 1];
    });
    $("new-game").addEventListener("click", newGame);
    await newGame();
  }

  start().catch((e) => say(e.message, true));
})();
