// The replay viewer: send a record to the server (which checks it by replaying it), then
// step through its steps: each hand's start, then trick by trick, forward and back.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  let replay = null;
  let at = 0;

  function say(text, error) {
    $("message").textContent = text || "";
    $("message").className = error ? "error" : "";
  }

  function show() {
    const step = { ...replay.steps[at], labels: replay.labels }; // the labels are sent once, not per step
    Barbu.render($("table"), step, { winner: step.winner, note: step.note });
    $("contract").textContent = Barbu.headline(step);
    $("doubles").textContent = Barbu.doublesText(step);
    Barbu.scores($("scores"), step);
    $("step-label").textContent = "step " + (at + 1) + " of " + replay.steps.length + " · hand " + step.hand_number;
    $("prev").disabled = at === 0;
    $("next").disabled = at === replay.steps.length - 1;
  }

  function go(to) {
    if (!replay) return;
    at = Math.max(0, Math.min(replay.steps.length - 1, to));
    show();
  }

  function hand(delta) {
    if (!replay) return;
    const current = replay.steps[at].hand_number;
    const starts = replay.steps.map((s, i) => [s.hand_number, i]).filter(([h, i]) => i === 0 || replay.steps[i - 1].hand_number !== h);
    const target = starts.find(([h]) => h === current + delta);
    if (target) go(target[1]);
    else if (delta < 0) go(0);
  }

  async function open(file) {
    say("Checking the record…");
    let body;
    try {
      body = JSON.parse(await file.text());
    } catch (e) {
      say(file.name + " is not JSON: " + e.message, true);
      return;
    }
    const response = await fetch("/api/replays", { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const data = await response.json().catch(() => ({}));
    if (!response.ok) {
      say(typeof data.detail === "string" ? data.detail : "the server refused the record (" + response.status + ")", true);
      return;
    }
    replay = data;
    say(file.name + ": " + replay.steps.length + " steps; final scores " + replay.final_scores.map(Barbu.signed).join(" "));
    go(0);
  }

  $("record-file").addEventListener("change", (e) => e.target.files[0] && open(e.target.files[0]));
  $("prev").addEventListener("click", () => go(at - 1));
  $("next").addEventListener("click", () => go(at + 1));
  $("prev-hand").addEventListener("click", () => hand(-1));
  $("next-hand").addEventListener("click", () => hand(1));
  document.addEventListener("keydown", (e) => {
    if (e.key === "ArrowRight") go(at + 1);
    if (e.key === "ArrowLeft") go(at - 1);
  });
})();
