// Drawing a table "view" (the JSON of barbu_env.play.web.server.view_json) into the page.
// Shared by the table (index.html) and the replay viewer (replay.html). No build step.
"use strict";

const Barbu = (() => {
  const RANKS = ["2", "3", "4", "5", "6", "7", "8", "9", "10", "J", "Q", "K", "A"];
  const SUITS = ["♣", "♦", "♥", "♠"];
  const PLACES = ["bottom", "left", "top", "right"];  // relative to the viewer: you, left, opposite, right

  const rank = (card) => RANKS[card % 13];
  const suit = (card) => Math.floor(card / 13);
  const cardText = (card) => rank(card) + SUITS[suit(card)];
  const isRed = (card) => suit(card) === 1 || suit(card) === 2;

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined) node.textContent = text;
    return node;
  }

  // A face-up card (a button when it can be clicked) or, with card === null, a back.
  function cardEl(card, clickable) {
    if (card === null) return el("div", "card back");
    const node = el(clickable ? "button" : "div", "card" + (isRed(card) ? " red" : ""));
    node.dataset.card = String(card);
    node.title = cardText(card);
    node.append(el("span", "rank", rank(card)), el("span", "suit", SUITS[suit(card)]), el("span", "big", SUITS[suit(card)]));
    return node;
  }

  function placeOf(view, seat) {
    return PLACES[(seat - view.viewer + 4) % 4];
  }

  function seatInfo(view, seat) {
    let info = "score " + signed(view.scores[seat]);
    if (view.phase === "TRICKS") info += "  ·  tricks " + view.tricks_won[seat] + "  ·  points " + signed(view.points[seat]);
    if (view.phase === "DOMINO" && view.out_order.includes(seat)) info += "  ·  out " + (view.out_order.indexOf(seat) + 1) + ".";
    return info;
  }

  function signed(n) {
    return (n > 0 ? "+" : "") + n;
  }

  function seatName(view, seat) {
    let name = "P" + seat + " " + view.labels[seat];
    if (seat === view.declarer && view.phase !== "GAME_OVER") name += " (declarer)";
    return name;
  }

  // Draw the whole table into `root`. opts.onCard(card) makes the viewer's cards clickable.
  function render(root, view, opts) {
    opts = opts || {};
    root.replaceChildren(el("div", "oval"));
    const legalCards = new Set(view.legal.filter((a) => a.id < 52).map((a) => a.id));
    for (let seat = 0; seat < 4; seat++) {
      const place = placeOf(view, seat);
      const box = el("div", "seat " + place + (seat === view.to_act ? " to-act" : ""));
      box.id = "seat-" + seat;
      const held = view.hands[String(seat)];
      const cards = el("div", "cards " + (place === "left" || place === "right" ? "column" : "row"));
      if (held) {
        const mine = seat === view.viewer && opts.onCard;
        if (mine) cards.classList.add("hand-mine");
        for (const card of held) {
          const node = cardEl(card, mine);
          if (mine) {
            if (legalCards.size) node.classList.add(legalCards.has(card) ? "legal" : "dim");
            node.addEventListener("click", () => opts.onCard(card));
          }
          cards.append(node);
        }
      } else {
        for (let k = 0; k < view.cards_left[seat]; k++) cards.append(cardEl(null, false));
      }
      box.append(el("div", "name", seatName(view, seat)), el("div", "info", seatInfo(view, seat)), cards);
      root.append(box);
    }
    if (view.phase === "DOMINO") root.append(domino(view));
    else if (view.phase === "GAME_OVER") root.append(finalScores(view));
    else root.append(trick(view, view.trick, opts.winner === undefined ? -1 : opts.winner));
    if (opts.note) root.append(el("div", "note", opts.note));
  }

  function trick(view, cards, winner) {
    const box = el("div", "trick");
    box.id = "trick";
    for (const [seat, card] of cards) {
      const node = cardEl(card, false);
      node.classList.add("spot-" + placeOf(view, seat));
      if (seat === winner) node.classList.add("winner");
      box.append(node);
    }
    return box;
  }

  function domino(view) {
    const box = el("div", "domino");
    box.id = "domino";
    for (const s of [3, 2, 1, 0]) {
      const row = el("div", "row");
      const label = el("span", "label", SUITS[s]);
      if (s === 1 || s === 2) label.style.color = "#ff6a72";
      row.append(label);
      const laid = new Set(view.domino_rows[s]);
      for (let r = 0; r < 13; r++) {
        const card = s * 13 + r;
        if (laid.has(card)) {
          const mini = el("div", "mini" + (isRed(card) ? " red" : ""));
          mini.dataset.card = String(card);
          mini.append(el("div", "", RANKS[r]), el("div", "", SUITS[s]));
          row.append(mini);
        } else {
          row.append(el("div", "slot"));
        }
      }
      box.append(row);
    }
    return box;
  }

  function finalScores(view) {
    const box = el("div", "final");
    box.append(el("h2", "", "Final scores"));
    const order = [0, 1, 2, 3].sort((a, b) => view.scores[b] - view.scores[a]);
    order.forEach((seat, k) => {
      const line = el("div");
      line.append(el("span", "", k + 1 + ". P" + seat + " " + view.labels[seat]), el("span", "", signed(view.scores[seat])));
      box.append(line);
    });
    return box;
  }

  // The side panel's score table.
  function scores(node, view) {
    const rows = [["", "game", "tricks", "points"]];
    for (let seat = 0; seat < 4; seat++) {
      rows.push(["P" + seat + " " + view.labels[seat], signed(view.scores[seat]), String(view.tricks_won[seat]), signed(view.points[seat])]);
    }
    const table = el("table", "scores");
    rows.forEach((cells, i) => {
      const tr = el("tr");
      for (const c of cells) tr.append(el(i === 0 ? "th" : "td", "", c));
      table.append(tr);
    });
    node.replaceChildren(table);
  }

  function doublesText(view) {
    if (!view.doubles.length) return view.phase === "DECLARE" ? "" : "no doubles";
    return "doubles: " + view.doubles.map(([i, j, level]) => "P" + i + "–P" + j + (level === 2 ? " redoubled" : "")).join(", ");
  }

  function headline(view) {
    if (view.phase === "GAME_OVER") return "Game over";
    return "Hand " + view.hand_number + "/28 · " + view.contract_text + " · declarer P" + view.declarer;
  }

  return { RANKS, SUITS, cardText, render, scores, doublesText, headline, el, signed };
})();
