"""One self-contained HTML replay of recorded episodes (inline SVG + JS, no network).

The page draws each frame's ``scene`` (``hackmatrix_env.viewer``) as SVG: the board,
the HUD, the action taken, the policy's top probabilities over the legal actions and its
value estimate, the 15 reward components, the action mask; play/pause/step/scrub
controls (keyboard: ←/→ step, space play/pause, Home/End, ↑/↓ episode) and an episode
picker with each episode's return, stage reached and cause of end. Episodes played by a
search (``hm-watch --search``) add a panel with the root's visits, Q and prior per action;
the moves where the search chose another action than the greedy network are marked by the
action, on the return curve (ticks) and counted in the episode picker.

The DOM is stable for tests: each board cell is ``g.cell[data-row][data-col]`` and each
drawn item in it ``g.item[data-kind]`` with the item's fields as ``data-*`` attributes;
``#step-counter`` reads ``step t / T``; ``#step-reward`` holds the step's reward. The search
panel ``#search-panel`` (hidden without search data) holds ``#search-note[data-differs]`` and
one ``#search div.srow[data-action][data-visits][data-q]`` per action of the search's mask.
"""

from __future__ import annotations

import html
import json
from pathlib import Path

from hackmatrix_env.constants import REWARD_COMPONENTS
from hackmatrix_env.viewer import ACTION_NAMES, PALETTE

from hackmatrix_train.episodes import Episode

_CSS = r"""
:root { --bg:#0b0f17; --panel:#111722; --edge:#232c3d; --text:#e6edf3; --muted:#8b96a8;
  --accent:#38e1ff; --good:#06d6a0; --bad:#ff4d6d; }
* { box-sizing:border-box; }
body { margin:0; background:var(--bg); color:var(--text);
  font:14px/1.35 "Inter","Segoe UI",system-ui,-apple-system,sans-serif; }
header { display:flex; align-items:baseline; gap:16px; padding:14px 22px 6px; }
header h1 { margin:0; font-size:20px; letter-spacing:.5px; }
header h1 span { color:var(--accent); }
header .sub { color:var(--muted); font-size:13px; }
main { display:grid; grid-template-columns: 250px minmax(420px,520px) minmax(300px,1fr);
  gap:14px; padding:8px 22px 22px; align-items:start; }
.panel { background:var(--panel); border:1px solid var(--edge); border-radius:10px; padding:12px; }
.panel h2 { margin:0 0 8px; font-size:12px; text-transform:uppercase; letter-spacing:1.2px;
  color:var(--muted); font-weight:600; }
#episodes { list-style:none; margin:0; padding:0; max-height:460px; overflow:auto; }
#episodes li { padding:7px 8px; border-radius:7px; cursor:pointer; display:grid;
  grid-template-columns:auto 1fr; gap:2px 8px; border:1px solid transparent; }
#episodes li:hover { background:#172033; }
#episodes li.active { background:#13253a; border-color:var(--accent); }
#episodes .n { font-weight:700; color:var(--accent); }
#episodes .ret { text-align:right; font-variant-numeric:tabular-nums; }
#episodes .meta { grid-column:1 / 3; color:var(--muted); font-size:12px; }
.end-victory { color:var(--good); } .end-died { color:var(--bad); }
#board { width:100%; display:block; }
.controls { display:flex; align-items:center; gap:6px; margin-top:10px; }
.controls button { background:#172033; color:var(--text); border:1px solid var(--edge);
  border-radius:7px; padding:5px 10px; font-size:14px; cursor:pointer; min-width:36px; }
.controls button:hover { border-color:var(--accent); }
#scrub { flex:1; accent-color:var(--accent); }
#step-counter { font-variant-numeric:tabular-nums; color:var(--muted); min-width:96px;
  text-align:right; }
#speed { background:#172033; color:var(--text); border:1px solid var(--edge); border-radius:6px; }
#spark { width:100%; height:46px; display:block; margin-top:8px; }
.hud { display:grid; grid-template-columns:repeat(4,1fr); gap:6px; margin-top:10px; }
.stat { background:#0e141e; border:1px solid var(--edge); border-radius:8px; padding:6px 8px; }
.stat .k { color:var(--muted); font-size:11px; text-transform:uppercase; letter-spacing:.8px; }
.stat .v { font-size:18px; font-weight:700; font-variant-numeric:tabular-nums; }
.chips { display:flex; flex-wrap:wrap; gap:4px; margin-top:8px; min-height:22px; }
.chip { font-size:12px; padding:2px 7px; border-radius:999px; background:#1b2233;
  border:1px solid #2c3650; }
.chip.prog { border-color:#9b5de5; color:#d7c2ff; }
.chip.flag { border-color:#ffd166; color:#ffd166; }
.right { display:flex; flex-direction:column; gap:14px; }
.action-line { display:flex; justify-content:space-between; align-items:baseline; }
#action-name { font-size:22px; font-weight:700; color:var(--accent); }
#step-reward { font-size:18px; font-weight:700; font-variant-numeric:tabular-nums; }
.muted { color:var(--muted); }
.bar { display:grid; grid-template-columns:70px 1fr 54px; gap:8px; align-items:center;
  margin:3px 0; font-size:13px; }
.bar .track { height:12px; background:#0e141e; border-radius:6px; overflow:hidden; }
.bar .fill { height:100%; background:linear-gradient(90deg,#1f8fff,#38e1ff); }
.bar.chosen .fill { background:linear-gradient(90deg,#ff9f1c,#ffd166); }
.bar.chosen .name { color:#ffd166; font-weight:700; }
.bar .p { text-align:right; font-variant-numeric:tabular-nums; }
table.rew { width:100%; border-collapse:collapse; font-size:12.5px; }
table.rew td { padding:2px 4px; }
table.rew td.v { text-align:right; font-variant-numeric:tabular-nums; }
table.rew tr.zero { color:#4b5567; }
table.rew tr.pos td.v { color:var(--good); } table.rew tr.neg td.v { color:var(--bad); }
#mask { display:grid; grid-template-columns:repeat(7,1fr); gap:4px; }
#mask div { font-size:10.5px; text-align:center; padding:3px 0; border-radius:5px;
  border:1px solid #232c3d; color:#4b5567; }
#mask div.legal { border-color:#1f7a5c; color:#9ff0cf; }
#mask div.taken { background:#ff9f1c; color:#111; border-color:#ffd166; font-weight:700; }
#legend { display:grid; grid-template-columns:1fr 1fr; gap:4px 10px; font-size:12px; }
#legend div { display:flex; align-items:center; gap:6px; }
#legend svg { width:26px; height:26px; flex:none; }
.srow { display:grid; grid-template-columns:70px 1fr 34px 60px 48px; gap:6px; align-items:center;
  margin:3px 0; font-size:13px; font-variant-numeric:tabular-nums; }
.srow .track { height:10px; background:#0e141e; border-radius:5px; overflow:hidden; }
.srow .fill { height:100%; background:linear-gradient(90deg,#7b2ff7,#c77dff); }
.srow .n, .srow .q, .srow .p { text-align:right; }
.srow.head { color:var(--muted); font-size:11px; text-transform:uppercase; letter-spacing:.6px; }
.srow.chosen .name { color:#ffd166; font-weight:700; }
.srow.greedy .name { text-decoration:underline dotted; text-underline-offset:3px; }
#search-note { margin-bottom:6px; font-size:13px; }
#search-note[data-differs="true"], #differs-badge { color:#ff9f1c; font-weight:700; }
#differs-badge { font-size:12px; margin-left:8px; }
kbd { background:#1b2233; border:1px solid #2c3650; border-radius:4px; padding:0 4px; font-size:11px; }
"""

_JS = r"""
"use strict";
const DATA = JSON.parse(document.getElementById("replay-data").textContent);
const PAL = DATA.palette, SVGNS = "http://www.w3.org/2000/svg";
const SEARCHED = DATA.episodes.some(e => e.frames.some(f => f.search));
const LETTER = {virus:"V", daemon:"D", glitch:"G", cryptog:"C"};
let ep = 0, fr = 0, timer = null;

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}
function hexagon(cx, cy, r) {
  const pts = [];
  for (let i = 0; i < 6; i++) {
    const a = Math.PI / 6 + i * Math.PI / 3;
    pts.push((cx + r * Math.cos(a)).toFixed(1) + "," + (cy + r * Math.sin(a)).toFixed(1));
  }
  return pts.join(" ");
}
function label(t, x, y, size, fill, parent, weight) {
  return el("text", {x, y, "font-size": size, fill, "text-anchor": "middle",
    "dominant-baseline": "central", "font-weight": weight || 700}, parent, t);
}
function pips(g, cx, y, n, max, color) {
  for (let i = 0; i < max; i++) {
    el("circle", {cx: cx + (i - (max - 1) / 2) * 11, cy: y, r: 3.6,
      fill: i < n ? color : "none", stroke: color, "stroke-width": 1.2}, g);
  }
}
// Draw one item at cell origin (x, y), cell size 100; returns its <g>.
function drawItem(parent, it, x, y, slot, slots) {
  const g = el("g", {class: "item"}, parent);
  for (const [k, v] of Object.entries(it)) {
    if (v !== null && typeof v !== "object") g.setAttribute("data-" + k.replace(/_/g, "-"), v);
  }
  const cx = x + 50 + (slots > 1 ? (slot - (slots - 1) / 2) * 30 : 0), cy = y + 50;
  switch (it.kind) {
    case "siphoned":
      el("rect", {x: x + 4, y: y + 4, width: 92, height: 92, rx: 9, fill: PAL.siphoned}, g);
      el("path", {d: `M${x+8} ${y+22} L${x+22} ${y+8} M${x+8} ${y+36} L${x+36} ${y+8}`,
        stroke: "#2b3750", "stroke-width": 2}, g);
      if (it.center) el("circle", {cx: x + 50, cy: y + 50, r: 7, fill: PAL.data_siphon, opacity: .5}, g);
      break;
    case "exit":
      el("rect", {x: x + 10, y: y + 10, width: 80, height: 80, rx: 8, fill: "rgba(123,241,168,.08)",
        stroke: PAL.exit, "stroke-width": 3}, g);
      el("rect", {x: x + 17, y: y + 17, width: 66, height: 66, rx: 6, fill: "none",
        stroke: PAL.exit, "stroke-width": 1, opacity: .5}, g);
      label("EXIT", x + 50, y + 50, 15, PAL.exit, g);
      break;
    case "data_siphon":
      el("polygon", {points: `${x+50},${y+24} ${x+76},${y+50} ${x+50},${y+76} ${x+24},${y+50}`,
        fill: PAL.data_siphon, stroke: "#fff", "stroke-width": 1.5}, g);
      label("DS", x + 50, y + 50, 14, "#1a0b16", g);
      break;
    case "resource": {
      const c = PAL[it.resource];
      el("rect", {x: x + 58, y: y + 7, width: 36, height: 20, rx: 10, fill: "#0b0f17", stroke: c}, g);
      label((it.resource === "credits" ? "$" : "⚡") + it.amount, x + 76, y + 17.5, 12, c, g);
      break;
    }
    case "block": {
      const c = PAL[it.block], op = it.siphoned ? .35 : .95;
      el("rect", {x: x + 13, y: y + 13, width: 74, height: 74, rx: 8, fill: c, opacity: op,
        stroke: it.siphoned ? c : "#fff", "stroke-width": it.siphoned ? 1 : 1.2}, g);
      if (it.block === "data") label("#" + it.points, x + 50, y + 50, 26, "#fff", g);
      else if (it.block === "program") {
        label(it.program, x + 50, y + 47, 15, "#fff", g);
        label("prog", x + 50, y + 68, 10, "rgba(255,255,255,.7)", g, 500);
      } else label("?", x + 50, y + 51, 34, "#fff", g);
      if (it.siphoned) label("✓", x + 80, y + 22, 13, "#fff", g);
      break;
    }
    case "cryptog_hint":
      el("circle", {cx: x + 50, cy: y + 50, r: 30, fill: "none", stroke: PAL.cryptog,
        "stroke-width": 2, "stroke-dasharray": "3 5"}, g);
      label("c?", x + 50, y + 50, 13, PAL.cryptog, g);
      break;
    case "transmission": {
      const c = PAL[it.type];
      el("circle", {cx: x + 22, cy: y + 78, r: 14, fill: "#0b0f17", stroke: c,
        "stroke-width": 2.2, "stroke-dasharray": "4 3"}, g);
      label(String(it.countdown), x + 22, y + 78.5, 14, c, g);
      break;
    }
    case "enemy": {
      const c = PAL[it.type], r = slots > 1 ? 22 : 30;
      const op = it.hidden ? .35 : 1;
      el("polygon", {points: hexagon(cx, cy - 4, r), fill: c, opacity: op,
        stroke: it.stunned ? PAL.stunned : (it.disabled ? "#666" : "#fff"),
        "stroke-width": it.stunned ? 3 : 1.3, "stroke-dasharray": it.hidden ? "4 3" : "none"}, g);
      label(LETTER[it.type], cx, cy - 4, slots > 1 ? 16 : 22, "#111", g).setAttribute("opacity", op);
      pips(g, cx, cy + 32, it.hp, it.max_hp, c);
      if (it.stunned) label("zz", x + 86, y + 14, 13, PAL.stunned, g);
      if (it.disabled) label("off", x + 16, y + 14, 11, "#999", g);
      break;
    }
    case "player":
      el("circle", {cx: x + 50, cy: y + 46, r: 31, fill: PAL.player, opacity: .18}, g);
      el("circle", {cx: x + 50, cy: y + 46, r: 24, fill: PAL.player, stroke: "#fff", "stroke-width": 2}, g);
      label("@", x + 50, y + 45, 24, "#0b0f17", g);
      pips(g, x + 50, y + 84, it.hp, 3, "#ff4d6d");
      break;
  }
  return g;
}
function drawBoard(scene) {
  const svg = document.getElementById("board");
  svg.textContent = "";
  el("rect", {x: 0, y: 0, width: 640, height: 640, rx: 14, fill: "#080b12"}, svg);
  for (let i = 0; i < 6; i++) {
    label(String(i), 50 + 20 + i * 100, 630, 12, "#56627a", svg, 500);
    label(String(5 - i), 10, 20 + 50 + i * 100, 12, "#56627a", svg, 500);
  }
  for (let r = 5; r >= 0; r--) for (let c = 0; c < 6; c++) {
    const x = 20 + c * 100, y = 20 + (5 - r) * 100;
    const g = el("g", {class: "cell", "data-row": r, "data-col": c}, svg);
    el("rect", {x: x + 4, y: y + 4, width: 92, height: 92, rx: 9, fill: PAL.cell,
      stroke: PAL.cell_edge, "stroke-width": 1.2}, g);
    const items = scene.cells[r][c];
    const enemies = items.filter(i => i.kind === "enemy");
    for (const it of items) {
      const slot = it.kind === "enemy" ? enemies.indexOf(it) : 0;
      drawItem(g, it, x, y, slot, it.kind === "enemy" ? enemies.length : 1);
    }
  }
}
function stat(k, v, color) {
  return `<div class="stat"><div class="k">${k}</div><div class="v"${color ? ` style="color:${color}"` : ""}>${v}</div></div>`;
}
function drawHud(h) {
  document.getElementById("hud").innerHTML =
    stat("stage", h.stage + "<span class=muted style='font-size:12px'>/8</span>") +
    stat("turn", h.turn) + stat("HP", "♥".repeat(h.hp) + "<span class=muted>" + "♡".repeat(h.max_hp - h.hp) + "</span>", "#ff4d6d") +
    stat("score", h.score) + stat("credits", h.credits, PAL.credits) +
    stat("energy", h.energy, PAL.energy) + stat("siphons", h.siphons, PAL.data_siphon) +
    stat("attack", h.attack);
  const chips = h.owned.map(p => `<span class="chip prog">${p}</span>`)
    .concat(h.flags.map(f => `<span class="chip flag">${f.toUpperCase()}</span>`));
  document.getElementById("owned").innerHTML = chips.join("") || "<span class=muted>no programs</span>";
}
function fmt(x, d) { return (x > 0 ? "+" : "") + x.toFixed(d === undefined ? 3 : d); }
function drawSearch(f) {
  const s = f.action !== undefined ? f.search : undefined, box = document.getElementById("search");
  const note = document.getElementById("search-note");
  document.getElementById("differs-badge").textContent = s && s.differs ? "≠ greedy" : "";
  box.innerHTML = "";
  if (!s) { note.textContent = f.action === undefined ? "the episode starts here" : "no search";
    note.dataset.differs = ""; return; }
  note.dataset.differs = s.differs;
  note.textContent = (s.differs ? `search plays ${DATA.actions[s.action]}, greedy would play ${DATA.actions[s.greedy]}`
    : `search agrees with greedy: ${DATA.actions[s.action]}`) + ` · ${s.simulations} simulations` +
    (s.value === null ? "" : ` · value ${s.value.toFixed(3)}`);
  const head = document.createElement("div");
  head.className = "srow head";
  head.innerHTML = "<span>action</span><span>visits</span><span class=n>n</span><span class=q>Q</span><span class=p>prior</span>";
  box.appendChild(head);
  const most = Math.max(1, ...s.actions.map(r => r[1]));
  for (const [a, n, q, p] of s.actions) {
    const row = document.createElement("div");
    row.className = "srow" + (a === f.action ? " chosen" : "") + (a === s.greedy ? " greedy" : "");
    row.dataset.action = a; row.dataset.visits = n; row.dataset.q = q === null ? "" : q;
    row.innerHTML = `<span class="name">${DATA.actions[a]}</span><div class="track"><div class="fill" style="width:${(100 * n / most).toFixed(1)}%"></div></div>` +
      `<span class="n">${n}</span><span class="q">${q === null ? "—" : fmt(q)}</span><span class="p">${(100 * p).toFixed(1)}%</span>`;
    box.appendChild(row);
  }
}
function drawStep(f) {
  const has = f.action !== undefined;
  document.getElementById("action-name").textContent = has ? DATA.actions[f.action] : "start";
  if (SEARCHED) drawSearch(f);
  const rew = document.getElementById("step-reward");
  rew.textContent = has ? fmt(f.reward) : "—";
  rew.dataset.value = has ? f.reward : "";
  rew.style.color = !has ? "" : f.reward >= 0 ? "#06d6a0" : "#ff4d6d";
  const v = document.getElementById("value");
  v.textContent = has && f.value !== null ? f.value.toFixed(3) : "—";
  const probs = document.getElementById("probs");
  probs.innerHTML = "";
  if (has) for (const [a, p] of f.probs) {
    const row = document.createElement("div");
    row.className = "bar" + (a === f.action ? " chosen" : "");
    row.innerHTML = `<span class="name">${DATA.actions[a]}</span><div class="track"><div class="fill" style="width:${(100 * p).toFixed(1)}%"></div></div><span class="p">${(100 * p).toFixed(1)}%</span>`;
    probs.appendChild(row);
  }
  if (!has) probs.innerHTML = "<span class=muted>the episode starts here</span>";
  const tb = document.getElementById("rewards");
  tb.innerHTML = "";
  DATA.components.forEach((name, i) => {
    const x = has ? f.breakdown[i] : 0;
    const tr = document.createElement("tr");
    tr.className = x > 0 ? "pos" : x < 0 ? "neg" : "zero";
    tr.innerHTML = `<td>${name.replace(/_/g, " ")}</td><td class="v">${x === 0 ? "0" : fmt(x, 4)}</td>`;
    tb.appendChild(tr);
  });
  const mask = document.getElementById("mask");
  mask.innerHTML = "";
  DATA.actions.forEach((name, a) => {
    const d = document.createElement("div");
    const legal = has && f.mask[a] === "1";
    d.className = (legal ? "legal" : "") + (has && a === f.action ? " taken" : "");
    d.textContent = name;
    d.dataset.action = a;
    mask.appendChild(d);
  });
}
function drawSpark() {
  const e = DATA.episodes[ep], svg = document.getElementById("spark");
  svg.textContent = "";
  let cum = 0; const ys = [0];
  for (const f of e.frames.slice(1)) { cum += f.reward; ys.push(cum); }
  const lo = Math.min(0, ...ys), hi = Math.max(1e-6, ...ys), n = Math.max(ys.length - 1, 1);
  const pts = ys.map((y, i) => `${(i / n * 600).toFixed(1)},${(42 - (y - lo) / (hi - lo) * 38).toFixed(1)}`);
  el("line", {x1: 0, x2: 600, y1: 42 - (0 - lo) / (hi - lo) * 38, y2: 42 - (0 - lo) / (hi - lo) * 38, stroke: "#232c3d"}, svg);
  el("polyline", {points: pts.join(" "), fill: "none", stroke: "#38e1ff", "stroke-width": 1.6}, svg);
  el("text", {x: 4, y: 10, "font-size": 9, fill: "#56627a"}, svg, "episode return " + fmt(cum, 2));
  e.frames.forEach((f, i) => {  // the moves where the search overruled greedy
    if (f.search && f.search.differs) {
      const x = (i / n * 600).toFixed(1);
      el("line", {class: "differs", x1: x, x2: x, y1: 38, y2: 46, stroke: "#ff9f1c", "stroke-width": 1.4}, svg);
    }
  });
  el("line", {id: "spark-cursor", x1: 0, x2: 0, y1: 0, y2: 46, stroke: "#ffd166", "stroke-width": 1.2}, svg);
}
function show() {
  const e = DATA.episodes[ep], f = e.frames[fr], last = e.frames.length - 1;
  drawBoard(f.scene); drawHud(f.scene.hud); drawStep(f);
  document.getElementById("step-counter").textContent = `step ${fr} / ${last}`;
  const scrub = document.getElementById("scrub");
  scrub.max = last; scrub.value = fr;
  const cur = document.getElementById("spark-cursor");
  if (cur) { const x = last ? fr / last * 600 : 0; cur.setAttribute("x1", x); cur.setAttribute("x2", x); }
  document.getElementById("end-note").textContent = fr === last ? `episode ends: ${e.summary.end}` : "";
  document.querySelectorAll("#episodes li").forEach((li, i) => li.classList.toggle("active", i === ep));
}
function go(n) { fr = Math.max(0, Math.min(n, DATA.episodes[ep].frames.length - 1)); show(); }
function pick(i) { ep = Math.max(0, Math.min(i, DATA.episodes.length - 1)); fr = 0; pause(); drawSpark(); show(); }
function pause() { if (timer) clearInterval(timer); timer = null; document.getElementById("play").textContent = "▶"; }
function play() {
  if (timer) return pause();
  if (fr >= DATA.episodes[ep].frames.length - 1) fr = 0;
  document.getElementById("play").textContent = "❚❚";
  timer = setInterval(() => {
    if (fr >= DATA.episodes[ep].frames.length - 1) return pause();
    go(fr + 1);
  }, Number(document.getElementById("speed").value));
}
function buildEpisodes() {
  const ul = document.getElementById("episodes");
  DATA.episodes.forEach((e, i) => {
    const s = e.summary, li = document.createElement("li");
    li.dataset.index = i;
    const cls = s.end === "victory" ? "end-victory" : s.end === "died" ? "end-died" : "";
    const differs = e.frames.filter(f => f.search && f.search.differs).length;
    li.innerHTML = `<span class="n">#${s.index}</span><span class="ret">${fmt(s.return, 2)}</span>` +
      `<span class="meta">stage ${s.stage} · ${s.length} steps · <span class="${cls}">${s.end}</span>` +
      (SEARCHED ? ` · ${differs} ≠ greedy` : "") + `</span>`;
    li.addEventListener("click", () => pick(i));
    ul.appendChild(li);
  });
}
function buildLegend() {
  const items = [
    ["player (HP pips)", {kind: "player", hp: 3}], ["virus", {kind: "enemy", type: "virus", hp: 2, max_hp: 2}],
    ["daemon", {kind: "enemy", type: "daemon", hp: 3, max_hp: 3}], ["glitch", {kind: "enemy", type: "glitch", hp: 2, max_hp: 2}],
    ["cryptog", {kind: "enemy", type: "cryptog", hp: 2, max_hp: 2}],
    ["hidden cryptog", {kind: "enemy", type: "cryptog", hp: 2, max_hp: 2, hidden: true}],
    ["stunned", {kind: "enemy", type: "virus", hp: 1, max_hp: 2, stunned: true}],
    ["last seen cryptog", {kind: "cryptog_hint"}], ["transmission (turns)", {kind: "transmission", type: "virus", countdown: 2}, "2 58 40 40"],
    ["data block (points)", {kind: "block", block: "data", points: 4}], ["program block", {kind: "block", block: "program", program: "push"}],
    ["question block", {kind: "block", block: "question"}], ["credits / energy", {kind: "resource", resource: "credits", amount: 2}, "54 -1 44 36"],
    ["data siphon", {kind: "data_siphon"}], ["exit", {kind: "exit"}], ["siphoned cell", {kind: "siphoned", center: true}],
  ];
  const box = document.getElementById("legend");
  for (const [name, it, view] of items) {
    const d = document.createElement("div");
    const svg = el("svg", {viewBox: view || "0 0 100 100"}, d);
    el("rect", {x: 4, y: 4, width: 92, height: 92, rx: 9, fill: PAL.cell}, svg);
    drawItem(svg, it, 0, 0, 0, 1).removeAttribute("class");
    d.appendChild(document.createTextNode(name));
    box.appendChild(d);
  }
}
document.getElementById("prev").onclick = () => { pause(); go(fr - 1); };
document.getElementById("next").onclick = () => { pause(); go(fr + 1); };
document.getElementById("first").onclick = () => { pause(); go(0); };
document.getElementById("last").onclick = () => { pause(); go(1e9); };
document.getElementById("play").onclick = play;
document.getElementById("scrub").oninput = e => { pause(); go(Number(e.target.value)); };
document.addEventListener("keydown", e => {
  const k = {ArrowLeft: () => { pause(); go(fr - 1); }, ArrowRight: () => { pause(); go(fr + 1); },
    " ": play, Home: () => { pause(); go(0); }, End: () => { pause(); go(1e9); },
    ArrowUp: () => pick(ep - 1), ArrowDown: () => pick(ep + 1)}[e.key];
  if (k) { e.preventDefault(); k(); }
});
document.getElementById("search-panel").hidden = !SEARCHED;
buildEpisodes(); buildLegend(); pick(0);
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<link rel="icon" href="data:,">
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>{css}</style></head>
<body>
<header><h1>Hack<span>Matrix</span> replay</h1><span class="sub">{subtitle}</span></header>
<main>
 <section class="panel"><h2>Episodes</h2><ul id="episodes"></ul>
  <h2 style="margin-top:14px">Legend</h2><div id="legend"></div></section>
 <section class="panel">
  <svg id="board" viewBox="0 0 640 640" role="img" aria-label="board"></svg>
  <div class="controls">
   <button id="first" title="first (Home)">«</button><button id="prev" title="back (←)">‹</button>
   <button id="play" title="play/pause (space)">▶</button><button id="next" title="forward (→)">›</button>
   <button id="last" title="last (End)">»</button>
   <input id="scrub" type="range" min="0" max="0" value="0" aria-label="step">
   <select id="speed" title="speed"><option value="600">slow</option>
    <option value="250" selected>normal</option><option value="80">fast</option></select>
   <span id="step-counter">step 0 / 0</span>
  </div>
  <svg id="spark" viewBox="0 0 600 46" preserveAspectRatio="none" aria-label="return so far"></svg>
  <div class="hud" id="hud"></div><div class="chips" id="owned"></div>
 </section>
 <section class="right">
  <div class="panel"><h2>Action taken</h2>
   <div class="action-line"><span><span id="action-name">start</span><span id="differs-badge"></span></span>
    <span>reward <span id="step-reward">—</span></span></div>
   <div class="muted" style="margin-top:4px">value estimate before the step: <b id="value">—</b>
    <span id="end-note" style="float:right;color:#ffd166"></span></div></div>
  <div class="panel"><h2>Policy: top legal actions</h2><div id="probs"></div></div>
  <div class="panel" id="search-panel" hidden><h2>Search: root visits and Q</h2>
   <div id="search-note"></div><div id="search"></div></div>
  <div class="panel"><h2>Reward components</h2><table class="rew"><tbody id="rewards"></tbody></table></div>
  <div class="panel"><h2>Action mask</h2><div id="mask"></div>
   <div class="muted" style="margin-top:8px;font-size:12px"><kbd>←</kbd> <kbd>→</kbd> step ·
    <kbd>space</kbd> play · <kbd>↑</kbd> <kbd>↓</kbd> episode · <kbd>Home</kbd> <kbd>End</kbd></div></div>
 </section>
</main>
<script type="application/json" id="replay-data">{data}</script>
<script>{js}</script>
</body></html>
"""


def replay_data(episodes: list[Episode], title: str, subtitle: str) -> dict:
    """The JSON the page reads: episodes (summary + frames), names, palette."""
    if not episodes:
        raise ValueError("a replay needs at least one episode")
    return {
        "title": title,
        "subtitle": subtitle,
        "actions": list(ACTION_NAMES),
        "components": list(REWARD_COMPONENTS),
        "palette": PALETTE,
        "episodes": [{"summary": ep.summary(), "frames": ep.frames} for ep in episodes],
    }


def render_html(
    episodes: list[Episode], title: str = "HackMatrix replay", subtitle: str = ""
) -> str:
    """The page as a string (no external resource of any kind)."""
    data = json.dumps(replay_data(episodes, title, subtitle), separators=(",", ":"))
    data = data.replace("</", "<\\/")  # never close the script element early
    return _PAGE.format(
        title=html.escape(title),
        subtitle=html.escape(subtitle),
        css=_CSS,
        js=_JS,
        data=data,
    )


def write_html(path: str | Path, episodes: list[Episode], title: str = "HackMatrix replay",
               subtitle: str = "") -> Path:  # fmt: skip
    """Write the replay page to ``path`` (parents created)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_html(episodes, title, subtitle), encoding="utf-8")
    return path
