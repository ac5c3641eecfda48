"""A self-contained HTML page of attention maps (no network: inline CSS, JS, JSON data).

The page has a picker for the kind (encoder, decoder, encoder-decoder), the
layer and the head, a heat map with the tokens on its axes, and two token
columns (queries left, keys right): hovering a query token (or a heat-map row)
highlights the keys it attends to, in proportion to the weight.
"""

from __future__ import annotations

import html
import json

import numpy as np

from t2t_lite.pictures.attention import TITLES, AttentionMaps

STYLE = """
body { font-family: sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 8px 0; }
.controls { margin: 8px 0 12px 0; }
.controls label { margin-right: 14px; }
.panes { display: flex; gap: 40px; align-items: flex-start; }
table.heat { border-collapse: collapse; font-size: 13px; }
table.heat td.cell { width: 22px; height: 22px; padding: 0; border: 1px solid #fff; }
table.heat th { font-weight: normal; padding: 1px 4px; white-space: nowrap; }
table.heat th.col { writing-mode: vertical-rl; transform: rotate(180deg); text-align: left; }
table.heat th.row { text-align: right; }
tr.hot th.row, .tok.hot { background: #ffd54f; }
.tokens { display: flex; gap: 60px; font-size: 14px; }
.tokens div.column div.tok { padding: 2px 6px; margin: 1px 0; border-radius: 3px;
  cursor: default; white-space: nowrap; }
.note { color: #666; font-size: 12px; margin-top: 10px; }
"""

SCRIPT = """
const DATA = JSON.parse(document.getElementById('attention-data').textContent);
const $ = (id) => document.getElementById(id);
function options(select, count, label) {
  select.innerHTML = '';
  for (let i = 0; i < count; i++) {
    const o = document.createElement('option'); o.value = i; o.textContent = label + ' ' + i;
    select.appendChild(o);
  }
}
function colour(w) {  // white -> dark blue
  const t = Math.max(0, Math.min(1, w));
  const r = Math.round(255 - 247 * t), g = Math.round(255 - 207 * t), b = Math.round(255 - 148 * t);
  return 'rgb(' + r + ',' + g + ',' + b + ')';
}
function current() {
  const kind = DATA.kinds[$('kind').value];
  return {kind: kind, w: kind.weights[$('layer').value][$('head').value]};
}
function highlight(q) {
  const c = current();
  document.querySelectorAll('tr.hot, .tok.hot').forEach((e) => e.classList.remove('hot'));
  document.querySelectorAll('#keys .tok').forEach((e, k) => {
    e.style.background = q === null ? '' : colour(c.w[q][k]);
    e.style.color = q !== null && c.w[q][k] > 0.5 ? '#fff' : '';
  });
  if (q === null) return;
  $('row-' + q).classList.add('hot');
  $('query-' + q).classList.add('hot');
}
function tokenColumn(id, tokens, prefix, hover) {
  const column = $(id); column.innerHTML = '';
  tokens.forEach((t, i) => {
    const d = document.createElement('div'); d.className = 'tok'; d.textContent = t;
    d.id = prefix + i;
    if (hover) { d.onmouseenter = () => highlight(i); d.onmouseleave = () => highlight(null); }
    column.appendChild(d);
  });
}
function draw() {
  const c = current();
  let rows = '<tr><th></th>' + c.kind.keys.map(
    (t) => '<th class="col">' + escape(t) + '</th>').join('') + '</tr>';
  c.kind.queries.forEach((t, q) => {
    rows += '<tr id="row-' + q + '"><th class="row">' + escape(t) + '</th>' +
      c.w[q].map((w, k) => '<td class="cell" style="background:' + colour(w) +
        '" title="' + escape(t) + ' -> ' + escape(c.kind.keys[k]) + ': ' +
        w.toFixed(3) + '"></td>').join('') + '</tr>';
  });
  $('heat').innerHTML = rows;
  c.kind.queries.forEach((t, q) => {
    const r = $('row-' + q);
    r.onmouseenter = () => highlight(q); r.onmouseleave = () => highlight(null);
  });
  tokenColumn('queries', c.kind.queries, 'query-', true);
  tokenColumn('keys', c.kind.keys, 'key-', false);
  $('caption').textContent = c.kind.title + ', layer ' + $('layer').value +
    ', head ' + $('head').value;
}
function escape(s) {
  return String(s).replace(/[&<>"]/g, (ch) => ({'&': '&amp;', '<': '&lt;', '>': '&gt;',
    '"': '&quot;'}[ch]));
}
const kinds = $('kind');
Object.keys(DATA.kinds).forEach((k) => {
  const o = document.createElement('option'); o.value = k; o.textContent = DATA.kinds[k].title;
  kinds.appendChild(o);
});
options($('layer'), DATA.num_layers, 'layer');
options($('head'), DATA.num_heads, 'head');
[kinds, $('layer'), $('head')].forEach((s) => s.onchange = draw);
const start = new URLSearchParams(location.search);
['kind', 'layer', 'head'].forEach((k) => { if (start.get(k) !== null) $(k).value = start.get(k); });
draw();
if (start.get('hover') !== null) highlight(Number(start.get('hover')));
"""

BODY = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>{title}</title>
<style>{style}</style></head>
<body>
<h1>{title}</h1>
<div class="controls">
<label>attention <select id="kind"></select></label>
<label><select id="layer"></select></label>
<label><select id="head"></select></label>
<span id="caption"></span>
</div>
<div class="panes">
<table class="heat" id="heat"></table>
<div class="tokens"><div class="column" id="queries"></div><div class="column" id="keys"></div></div>
</div>
<p class="note">Rows: the attending (query) tokens; columns: the tokens attended to (keys).
Hover a row or a token on the left to highlight what it attends to. Decoder rows are the
positions predicting each target token; they attend to the decoder inputs
(&lt;s&gt; then the target shifted right). URL options: ?kind=cross&amp;layer=0&amp;head=1&amp;hover=2.</p>
<script type="application/json" id="attention-data">{data}</script>
<script>{script}</script>
</body></html>
"""


def page_data(maps: AttentionMaps) -> dict:
    """The JSON the page draws: tokens per kind (those the maps have) and weights
    rounded to 4 places."""
    kinds = {}
    for kind in maps.kinds:
        queries, keys = maps.axes(kind)
        kinds[kind] = {"title": TITLES[kind], "queries": queries, "keys": keys,
                       "weights": np.round(maps.weights[kind], 4).tolist()}
    return {"source": maps.source, "target": maps.target, "num_layers": maps.num_layers,
            "num_heads": maps.num_heads, "kinds": kinds}


def page(maps: AttentionMaps, title: str = "") -> str:
    """The HTML page of `maps`; opens offline in any browser."""
    data = json.dumps(page_data(maps), ensure_ascii=False)
    data = data.replace("</", "<\\/")  # No "</script>" inside the JSON block.
    return BODY.format(title=html.escape(title or "attention"), style=STYLE,
                       data=data, script=SCRIPT)
