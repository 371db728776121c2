// The attention page of `python -m luong_lit serve`: one panel per model for the same sentence.
// Everything typed or returned is put into the page as text (textContent, SVG text nodes),
// never as HTML; the page calls only the server it came from.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CELL = 24;
const $ = (id) => document.getElementById(id);
let MODELS = [];

function el(tag, attrs = {}, text = null) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  if (text !== null) node.textContent = String(text);
  return node;
}

function svgEl(tag, attrs = {}, text = null) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== null) node.textContent = String(text);
  return node;
}

async function getJSON(path, body) {
  const init = body === undefined ? {} : {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  };
  const res = await fetch(path, init);
  const data = await res.json();
  if (!res.ok) throw new Error(data.error || `${path}: HTTP ${res.status}`);
  return data;
}

function setStatus(text, error = false) {
  $("status").textContent = text;
  $("status").className = error ? "error" : "";
}

function decoding() {
  const greedy = $("search").value === "greedy";
  const beam = greedy ? 1 : Math.max(1, parseInt($("beam").value, 10) || 1);
  const nBest = Math.min(beam, Math.max(1, parseInt($("nbest").value, 10) || 1));
  return {beam: beam, n_best: nBest, replace_unk: $("unk").checked};
}

function showTip(event, text) {
  const tip = $("tip");
  tip.textContent = text;
  tip.hidden = false;
  tip.style.left = `${event.clientX + 12}px`;
  tip.style.top = `${event.clientY + 12}px`;
}

function hideTip() {
  $("tip").hidden = true;
}

// The attention matrix: target words down, source words across (paper Figure 7).
function heatmap(a) {
  const S = a.source.length, T = a.target.length;
  const left = 8 + 7.5 * Math.max(...a.target.map((w) => w.length), 3);
  const top = 8 + 7.5 * Math.max(...a.source.map((w) => w.length), 3);
  const svg = svgEl("svg", {width: left + S * CELL + 8, height: top + T * CELL + 8, class: "heatmap"});
  const peak = Math.max(1e-6, ...a.weights.flat());
  const replaced = new Map(a.replaced.map((r) => [r.target, r.source]));
  a.source.forEach((w, s) => {
    const x = left + s * CELL + CELL / 2;
    svg.append(svgEl("text", {x: x, y: top - 6, transform: `rotate(-60 ${x} ${top - 6})`, class: "src"}, w));
  });
  a.target.forEach((w, t) => {
    const label = svgEl("text", {x: left - 6, y: top + t * CELL + CELL * 0.7, "text-anchor": "end", class: "tgt"}, w);
    if (replaced.has(t)) {
      label.classList.add("replaced");
      label.append(svgEl("title", {}, `replaced <unk>: from source word "${a.source[replaced.get(t)]}"`));
    }
    svg.append(label);
    a.source.forEach((sw, s) => {
      const v = a.weights[t][s];
      const shade = Math.round(255 * (1 - v / peak));
      const cell = svgEl("rect", {x: left + s * CELL, y: top + t * CELL, width: CELL - 1, height: CELL - 1,
        fill: `rgb(${shade},${shade},${shade})`, class: "cell", "data-value": v.toFixed(4)});
      cell.addEventListener("mousemove", (e) => showTip(e, `${w} → ${sw}\na_t = ${v.toFixed(3)}`));
      cell.addEventListener("mouseleave", hideTip);
      svg.append(cell);
    });
  });
  for (const [s, t] of a.links) {
    svg.append(svgEl("circle", {cx: left + s * CELL + CELL / 2, cy: top + t * CELL + CELL / 2, r: 2.5,
      fill: "#e60", class: "link", "pointer-events": "none"}));
  }
  for (const [t, s] of replaced) {
    svg.append(svgEl("rect", {x: left + s * CELL, y: top + t * CELL, width: CELL - 1, height: CELL - 1,
      fill: "none", stroke: "#06c", "stroke-width": 2, class: "replaced-cell", "pointer-events": "none"}));
  }
  if (a.p_t) drawWindows(svg, a, left, top);
  return svg;
}

// local-p (and local-m): each step's p_t and its window [p_t - D, p_t + D], clipped to the source.
function drawWindows(svg, a, left, top) {
  const S = a.source.length;
  a.p_t.forEach((p, t) => {
    const y = top + t * CELL;
    const centre = Math.floor(p);
    const from = Math.max(0, centre - a.D), to = Math.min(S - 1, centre + a.D);
    if (to >= from) {
      svg.append(svgEl("rect", {x: left + from * CELL, y: y, width: (to - from + 1) * CELL - 1, height: CELL - 1,
        fill: "none", stroke: "#c00", "stroke-dasharray": "3 2", class: "window", "pointer-events": "none"}));
    }
    svg.append(svgEl("line", {x1: left + (p + 0.5) * CELL, x2: left + (p + 0.5) * CELL, y1: y + 2, y2: y + CELL - 3,
      stroke: "#c00", "stroke-width": 2, class: "p_t", "pointer-events": "none"}));
  });
}

function panel(model, a) {
  const box = el("section", {class: "panel", "data-model": model.name});
  const kind = model.attention ? ` (${model.attention}${model.window ? `, D = ${model.window}` : ""})` : "";
  box.append(el("h2", {}, model.name + kind));
  box.append(el("p", {class: "translation"}, a.translation));
  if (!a.translation) box.append(el("p", {class: "empty"}, "(The translation is empty: the model ended it at once.)"));
  if (a.truncated) box.append(el("p", {class: "cut"}, "The sentence was cut to the server's --max-src-len."));
  if (a.hypotheses.length > 1) {
    const list = el("ol", {class: "nbest"});
    for (const h of a.hypotheses) {
      const item = el("li", {}, h.text);
      item.append(el("span", {class: "score"}, (h.score ?? 0).toFixed(2)));
      list.append(item);
    }
    box.append(list);
  }
  box.append(heatmap(a));
  return box;
}

async function translate(event) {
  event.preventDefault();
  const text = $("text").value.replace(/\s+/g, " ").trim();
  if (!text) {
    $("panels").replaceChildren();  // no earlier result beside the message
    return setStatus("Type a sentence first.", true);
  }
  const options = decoding();
  setStatus(`Translating with ${MODELS.length} model(s)…`);
  $("go").disabled = true;
  try {
    const answers = await Promise.all(MODELS.map((m) => getJSON("/attention", {text: text, model: m.name, ...options})));
    const panels = $("panels");
    panels.replaceChildren(...answers.map((a, i) => panel(MODELS[i], a)));
    setStatus("");
  } catch (err) {
    $("panels").replaceChildren();  // an error stands alone: the earlier result goes
    setStatus(err.message, true);
  } finally {
    $("go").disabled = false;
  }
}

async function start() {
  try {
    const health = await getJSON("/health");
    MODELS = health.models;
    $("models").textContent = "Models: " + MODELS.map((m) => `${m.name} (${m.checkpoints.join(" + ")})`).join("; ");
    $("beam").value = health.beam;
    $("search").value = health.beam > 1 ? "beam" : "greedy";
    $("nbest").value = health.n_best;
    $("unk").checked = health.replace_unk;
  } catch (err) {
    setStatus(`The server does not answer: ${err.message}`, true);
  }
  const showBeam = () => { $("beam").disabled = $("search").value === "greedy"; };
  showBeam();
  $("search").addEventListener("change", showBeam);
  $("form").addEventListener("submit", translate);
  document.body.dataset.ready = "yes";
}

start();
