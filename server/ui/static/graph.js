// graph.js draws a Loom graph spec ({nodes, edges: [{from, to, conditional,
// max, exit}]}) as SVG with a layered (Sugiyama) layout:
//
//  1. cycles are broken by reversing the back edges of a depth-first walk
//     from Start (self-loops are set aside and drawn beside their node);
//  2. nodes get layers by longest path; the ranks are doubled, so every
//     edge spans at least one rank between its ends, and long edges get a
//     dummy node on each rank they cross. A labelled edge's label is a
//     node of its own, as wide as the measured text, on the middle rank;
//  3. crossings are reduced by barycentre sweeps down and up, keeping the
//     order with the fewest crossings;
//  4. x coordinates pull each node toward the weighted mean of its
//     neighbours (long edges weigh most, so they run straight), and each
//     rank is then placed exactly: the positions nearest those wishes that
//     keep the rank's order and spacing (weighted isotonic regression by
//     pool-adjacent-violators).
//
// Labels are nodes of the layout, so no label can overlap another label or
// a node: ranks are apart vertically and a rank's members are apart by
// construction.

export const START = '__start__';
export const END = '__end__';

const NODE_H = 34;
const LABEL_H = 16;
const NODE_SEP = 18;   // between neighbours on a rank
const EDGE_SEP = 10;   // between an edge's dummy and its neighbours
const RANK_SEP = 14;   // between ranks
const PAD = 14;
const LOOP_W = 26;     // a self-loop's width beside its node
const SWEEPS = 8;

// edgeLabel is the bound an edge carries, if any, in the page's words:
// t(key, params) translates.
export function edgeLabel(e, t = defaultT) {
  if (e.exit) return t('graph.after', { n: e.max });
  if (e.max > 0) return t('graph.max', { n: e.max });
  return '';
}

function defaultT(key, p) {
  if (key === 'graph.after') return `after ${p.n}×`;
  if (key === 'graph.max') return `max ${p.n}×`;
  if (key === 'graph.start') return 'start';
  if (key === 'graph.end') return 'end';
  return key;
}

// estimateWidth guesses a text's width when it cannot be measured: wide
// characters (CJK) take about one em, others about half.
function estimateWidth(text, px) {
  let w = 0;
  for (const ch of text) w += /[\u1100-\u115f\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6]/.test(ch) ? px : px * 0.6;
  return w;
}

// layout places the spec's nodes and edges. measure(text, cls) returns a
// text's width in pixels. The result is {nodes: Map(name → {x, y, w, h,
// label}), edges: [{edge, points, label, lx, ly, lw, lh, kind}], width,
// height}; every label has its box (lx, ly is the top left corner).
export function layout(spec, { measure = (s, cls) => estimateWidth(s, cls === 'edge-label' ? 11 : 13), t = defaultT } = {}) {
  const names = [START, ...(spec.nodes || []).filter((n) => n !== START && n !== END)];
  const edges = spec.edges || [];
  const known = new Set(names);
  for (const e of edges) {
    for (const n of [e.from, e.to]) if (!known.has(n) && n !== END) { known.add(n); names.push(n); }
  }
  names.push(END);
  const nodeLabel = (n) => (n === START ? t('graph.start') : n === END ? t('graph.end') : n);

  // Layout nodes: real ones, then dummies and labels.
  const V = [];
  const byName = new Map();
  for (const n of names) {
    const label = nodeLabel(n);
    const w = Math.max(n === START || n === END ? 56 : 72, Math.ceil(measure(label, 'node')) + 28);
    const v = { id: V.length, name: n, label, w, h: NODE_H, left: w / 2, right: w / 2, kind: 'node', loops: [] };
    V.push(v);
    byName.set(n, v);
  }
  const outs = new Map(names.map((n) => [n, []]));
  for (const e of edges) outs.get(e.from)?.push(e);

  // 1. Back edges of a walk from Start, in the spec's order.
  const back = new Set();
  const mark = new Map();
  const walk = (n) => {
    mark.set(n, 1);
    for (const e of outs.get(n) || []) {
      if (e.from === e.to) continue;
      const m = mark.get(e.to);
      if (m === 1) back.add(e);
      else if (!m) walk(e.to);
    }
    mark.set(n, 2);
  };
  for (const n of names) if (!mark.get(n)) walk(n);

  // Self-loops widen their node on the right, label included.
  for (const e of edges) {
    if (e.from !== e.to) continue;
    const v = byName.get(e.from);
    const label = edgeLabel(e, t);
    const lw = label ? Math.ceil(measure(label, 'edge-label')) + 6 : 0;
    v.loops.push({ edge: e, label, lw });
    v.right = Math.max(v.right, v.w / 2 + LOOP_W * v.loops.length + lw);
  }

  // 2. Longest-path layers over the forward DAG (reversed back edges).
  const dag = edges.filter((e) => e.from !== e.to)
    .map((e) => (back.has(e) ? { edge: e, u: byName.get(e.to), v: byName.get(e.from), reversed: true }
      : { edge: e, u: byName.get(e.from), v: byName.get(e.to), reversed: false }));
  const preds = new Map(V.map((v) => [v, []]));
  for (const d of dag) preds.get(d.v).push(d.u);
  const layer = new Map();
  const depth = (v) => {
    if (layer.has(v)) return layer.get(v);
    layer.set(v, 0); // guards the recursion; the DAG has no cycle
    let l = 0;
    for (const u of preds.get(v)) l = Math.max(l, depth(u) + 1);
    layer.set(v, l);
    return l;
  };
  for (const v of V) v.rank = 2 * depth(v);
  // Start on top, End alone at the bottom.
  const endV = byName.get(END);
  endV.rank = Math.max(endV.rank, 2 + Math.max(0, ...V.filter((v) => v !== endV).map((v) => v.rank)));
  const maxRank = endV.rank;

  // Dummy chains, with the label on the middle rank.
  const chains = [];
  const adj = []; // [a, b, weight] between consecutive ranks
  for (const d of dag) {
    const label = edgeLabel(d.edge, t);
    const lw = label ? Math.ceil(measure(label, 'edge-label')) + 6 : 0;
    const r0 = d.u.rank;
    const r1 = d.v.rank;
    const mid = r0 + 1 + 2 * Math.floor((r1 - r0 - 2) / 4);
    const chain = [d.u];
    for (let r = r0 + 1; r < r1; r++) {
      const isLabel = label && r === mid;
      // The edge runs down the left side of its label.
      const dv = { id: V.length, kind: isLabel ? 'label' : 'dummy', rank: r, h: isLabel ? LABEL_H : 0,
        left: EDGE_SEP / 2, right: isLabel ? lw + 4 : EDGE_SEP / 2, label: isLabel ? label : '', lw };
      V.push(dv);
      chain.push(dv);
    }
    chain.push(d.v);
    for (let i = 1; i < chain.length; i++) {
      const a = chain[i - 1];
      const b = chain[i];
      const w = a.kind === 'node' && b.kind === 'node' ? 1 : a.kind === 'node' || b.kind === 'node' ? 2 : 8;
      adj.push([a, b, w]);
    }
    chains.push({ ...d, chain, label, lw });
  }

  // Ranks, first in the order of a walk, then by barycentre sweeps.
  const ranks = Array.from({ length: maxRank + 1 }, () => []);
  const seen = new Set();
  const down = new Map(V.map((v) => [v, []]));
  const up = new Map(V.map((v) => [v, []]));
  for (const [a, b, w] of adj) {
    down.get(a).push([b, w]);
    up.get(b).push([a, w]);
  }
  const visit = (v) => {
    if (seen.has(v)) return;
    seen.add(v);
    ranks[v.rank].push(v);
    for (const [w] of down.get(v)) visit(w);
  };
  for (const v of V) if (v.kind === 'node') visit(v);
  for (const v of V) visit(v);
  const index = () => ranks.forEach((r) => r.forEach((v, i) => { v.order = i; }));
  index();

  const crossings = () => {
    let c = 0;
    for (let r = 0; r < maxRank; r++) {
      const es = [];
      for (const a of ranks[r]) for (const [b] of down.get(a)) es.push([a.order, b.order]);
      for (let i = 0; i < es.length; i++) {
        for (let j = i + 1; j < es.length; j++) {
          if ((es[i][0] - es[j][0]) * (es[i][1] - es[j][1]) < 0) c++;
        }
      }
    }
    return c;
  };
  const sortBy = (r, nb) => {
    const keyed = ranks[r].map((v) => {
      const ns = nb.get(v);
      const b = ns.length ? ns.reduce((s, [w]) => s + w.order, 0) / ns.length : v.order;
      return [v, b, v.order];
    });
    keyed.sort((a, b) => (a[1] - b[1]) || (a[2] - b[2]));
    ranks[r] = keyed.map((k) => k[0]);
    ranks[r].forEach((v, i) => { v.order = i; });
  };
  let best = ranks.map((r) => r.slice());
  let bestC = crossings();
  for (let s = 0; s < SWEEPS && bestC > 0; s++) {
    if (s % 2 === 0) for (let r = 1; r <= maxRank; r++) sortBy(r, up);
    else for (let r = maxRank - 1; r >= 0; r--) sortBy(r, down);
    const c = crossings();
    if (c < bestC) {
      bestC = c;
      best = ranks.map((r) => r.slice());
    }
  }
  best.forEach((r, i) => { ranks[i] = r; });
  index();

  // 4. x: initial packing, then sweeps toward the neighbours' mean.
  const gap = (a, b) => a.right + (a.kind === 'node' && b.kind === 'node' ? NODE_SEP : EDGE_SEP) + b.left;
  for (const r of ranks) {
    let x = 0;
    r.forEach((v, i) => {
      if (i) x += gap(r[i - 1], v);
      v.x = x;
    });
  }
  const place = (r, nb) => {
    const row = ranks[r];
    if (!row.length) return;
    const wish = row.map((v) => {
      const ns = nb.get(v);
      if (!ns.length) return [v.x, 0.01];
      let sw = 0;
      let sx = 0;
      for (const [w, wt] of ns) { sw += wt; sx += wt * w.x; }
      return [sx / sw, sw];
    });
    // Minimise Σ w(x - wish)² with x[i+1] - x[i] ≥ gap: shift by the
    // cumulative gaps and solve the isotonic regression.
    const off = [0];
    for (let i = 1; i < row.length; i++) off.push(off[i - 1] + gap(row[i - 1], row[i]));
    const blocks = [];
    for (let i = 0; i < row.length; i++) {
      blocks.push({ v: wish[i][0] - off[i], w: wish[i][1], n: 1 });
      while (blocks.length > 1 && blocks[blocks.length - 2].v > blocks[blocks.length - 1].v) {
        const b = blocks.pop();
        const a = blocks[blocks.length - 1];
        a.v = (a.v * a.w + b.v * b.w) / (a.w + b.w);
        a.w += b.w;
        a.n += b.n;
      }
    }
    let i = 0;
    for (const b of blocks) for (let k = 0; k < b.n; k++, i++) row[i].x = b.v + off[i];
  };
  const both = new Map(V.map((v) => [v, [...up.get(v), ...down.get(v)]]));
  for (let s = 0; s < SWEEPS; s++) {
    if (s % 2 === 0) for (let r = 1; r <= maxRank; r++) place(r, up);
    else for (let r = maxRank - 1; r >= 0; r--) place(r, down);
  }
  for (let r = 0; r <= maxRank; r++) place(r, both);

  // y: each rank as tall as its tallest member.
  let y = PAD;
  const rankY = [];
  for (const r of ranks) {
    const h = Math.max(0, ...r.map((v) => v.h));
    rankY.push(y + h / 2);
    y += h + RANK_SEP;
  }
  for (const v of V) v.y = rankY[v.rank];
  const height = Math.ceil(y - RANK_SEP + PAD);

  // Shift right of the padding.
  const minX = Math.min(...V.map((v) => v.x - v.left));
  const maxX = Math.max(...V.map((v) => v.x + v.right));
  for (const v of V) v.x += PAD - minX;
  const width = Math.ceil(maxX - minX + 2 * PAD);

  // Edges: ports spread along the nodes' bottoms and tops, in the order
  // of where the edge goes next.
  const ports = new Map();
  const portOf = (v, other, side) => {
    const key = v.id + side;
    if (!ports.has(key)) {
      const list = chains.flatMap((c) => {
        if (side === 'bottom' && c.chain[0] === v) return [c];
        if (side === 'top' && c.chain[c.chain.length - 1] === v) return [c];
        return [];
      });
      const next = (c) => (side === 'bottom' ? c.chain[1] : c.chain[c.chain.length - 2]);
      list.sort((a, b) => next(a).x - next(b).x);
      ports.set(key, list);
    }
    const list = ports.get(key);
    const i = list.indexOf(other);
    const span = Math.min(v.w * 0.6, 14 * (list.length - 1));
    return list.length < 2 ? v.x : v.x - span / 2 + (span * i) / (list.length - 1);
  };
  const routed = chains.map((c) => {
    const first = c.chain[0];
    const last = c.chain[c.chain.length - 1];
    const pts = [[portOf(first, c, 'bottom'), first.y + first.h / 2]];
    for (const d of c.chain.slice(1, -1)) {
      if (d.kind === 'label') pts.push([d.x, d.y - d.h / 2], [d.x, d.y + d.h / 2]);
      else pts.push([d.x, d.y]);
    }
    pts.push([portOf(last, c, 'top'), last.y - last.h / 2]);
    if (c.reversed) pts.reverse();
    const lab = c.chain.find((d) => d.kind === 'label');
    return {
      edge: c.edge, kind: c.reversed ? 'back' : 'down', points: pts, path: smooth(pts), label: c.label,
      lx: lab ? lab.x + 4 : 0, ly: lab ? lab.y - LABEL_H / 2 : 0, lw: c.lw, lh: LABEL_H,
    };
  });
  for (const v of V) {
    (v.loops || []).forEach((l, i) => {
      const x = v.x + v.w / 2;
      const reach = LOOP_W * (i + 1);
      const dy = 8 + 2 * i;
      routed.push({
        edge: l.edge, kind: 'self', label: l.label, lw: l.lw, lh: LABEL_H,
        lx: x + reach - 4, ly: v.y - LABEL_H / 2,
        path: `M${x} ${v.y - dy} C${x + reach} ${v.y - dy - 16} ${x + reach} ${v.y + dy + 16} ${x} ${v.y + dy}`,
      });
    });
  }
  const nodes = new Map();
  for (const v of V) if (v.kind === 'node') nodes.set(v.name, { x: v.x, y: v.y, w: v.w, h: v.h, label: v.label, rank: v.rank });
  return { nodes, edges: routed, width, height, crossings: bestC };
}

// smooth draws a path through points as a Catmull-Rom spline (cubic
// Bézier pieces), leaving and entering its nodes vertically.
function smooth(pts) {
  const dir = Math.sign(pts[pts.length - 1][1] - pts[0][1]); // down or up
  const tan = pts.map((p, i) => {
    if (i === 0 || i === pts.length - 1) {
      const q = pts[i === 0 ? 1 : i - 1];
      return [0, dir * Math.abs(q[1] - p[1])];
    }
    return [(pts[i + 1][0] - pts[i - 1][0]) / 2, (pts[i + 1][1] - pts[i - 1][1]) / 2];
  });
  let d = `M${r1(pts[0][0])} ${r1(pts[0][1])}`;
  for (let i = 1; i < pts.length; i++) {
    const [x0, y0] = pts[i - 1];
    const [x1, y1] = pts[i];
    const c0 = [x0 + tan[i - 1][0] / 3, y0 + tan[i - 1][1] / 3];
    const c1 = [x1 - tan[i][0] / 3, y1 - tan[i][1] / 3];
    d += ` C${r1(c0[0])} ${r1(c0[1])} ${r1(c1[0])} ${r1(c1[1])} ${r1(x1)} ${r1(y1)}`;
  }
  return d;
}

const r1 = (n) => Math.round(n * 10) / 10;

// drawGraph draws spec into svg (an <svg> element of the page), labels
// translated by t, and returns highlight({running, waiting, next,
// visited}), which marks nodes: running and visited are Sets of node
// names, waiting a name, next an array.
export function drawGraph(svg, spec, t = defaultT) {
  const ns = svg.namespaceURI;
  const make = (tag, attrs = {}, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  };
  // Measure texts with the page's own fonts, in a scratch element.
  const probe = make('text', { class: 'probe', x: 0, y: 0 });
  const scratch = make('g', { class: 'node', visibility: 'hidden' }, null);
  const edgeScratch = make('g', { class: 'edge' });
  svg.replaceChildren(scratch, edgeScratch);
  const measure = (text, cls) => {
    probe.setAttribute('class', cls === 'edge-label' ? 'edge-label' : '');
    (cls === 'edge-label' ? edgeScratch : scratch).append(probe);
    probe.textContent = text;
    const w = probe.getComputedTextLength();
    return w > 0 ? w : estimateWidth(text, cls === 'edge-label' ? 11 : 13);
  };
  const g = layout(spec, { measure, t });
  const title = make('title', { id: 'graph-title' },
    t('graph.title', { name: spec.name || '', nodes: (spec.nodes || []).join(', ') }));
  const defs = make('defs');
  const marker = make('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: '9', refY: '5',
    markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' });
  marker.append(make('path', { d: 'M0 0 L10 5 L0 10 z' }));
  defs.append(marker);
  const edgeLayer = make('g', { class: 'edges' });
  const labelLayer = make('g', { class: 'edge-labels' });
  const nodeName = (n) => g.nodes.get(n)?.label ?? n;
  for (const r of g.edges) {
    const cls = ['edge', r.kind];
    if (r.edge.conditional) cls.push('conditional');
    if (r.edge.exit) cls.push('exit');
    const eg = make('g', { class: cls.join(' '), 'data-from': r.edge.from, 'data-to': r.edge.to });
    eg.append(make('title', {}, `${nodeName(r.edge.from)} → ${nodeName(r.edge.to)}${r.label ? ' (' + r.label + ')' : ''}`));
    eg.append(make('path', { d: r.path, 'marker-end': 'url(#arrow)' }));
    if (r.label) {
      eg.append(make('text', { x: r.lx, y: r.ly + r.lh / 2, 'dominant-baseline': 'central', class: 'edge-label' }, r.label));
    }
    edgeLayer.append(eg);
  }
  const nodeLayer = make('g', { class: 'nodes' });
  const els = new Map();
  for (const [n, m] of g.nodes) {
    const terminal = n === START || n === END;
    const ng = make('g', { class: terminal ? 'node terminal' : 'node', 'data-node': n,
      transform: `translate(${r1(m.x)} ${r1(m.y)})` });
    ng.append(make('title', {}, terminal ? m.label : t('graph.node', { name: n })));
    ng.append(make('rect', { x: -m.w / 2, y: -m.h / 2, width: m.w, height: m.h, rx: terminal ? m.h / 2 : 8 }));
    ng.append(make('text', { 'text-anchor': 'middle', 'dominant-baseline': 'central' }, m.label));
    nodeLayer.append(ng);
    els.set(n, ng);
  }
  svg.replaceChildren(title, defs, edgeLayer, labelLayer, nodeLayer);
  svg.setAttribute('viewBox', `0 0 ${g.width} ${g.height}`);
  svg.setAttribute('width', g.width);
  svg.setAttribute('height', g.height);
  svg.setAttribute('aria-labelledby', 'graph-title');
  svg.dataset.crossings = g.crossings;
  return {
    highlight({ running = new Set(), waiting = null, next = [], visited = new Set() } = {}) {
      for (const [n, e] of els) {
        e.classList.toggle('is-running', running.has(n));
        e.classList.toggle('is-waiting', n === waiting);
        e.classList.toggle('is-next', !running.size && n !== waiting && next.includes(n));
        e.classList.toggle('is-visited', visited.has(n) && !running.has(n));
      }
    },
  };
}

// Zoom bounds: below MIN_ZOOM a label is under about 8 px.
const MIN_ZOOM = 0.6;
const MAX_ZOOM = 3;
// FIT_FLOOR is the least zoom a graph opens at: a large graph opens with
// labels of at least about 11 px, to be panned, not shrunk to a smudge.
const FIT_FLOOR = 0.85;

/**
 * zoomable lets a person zoom and pan the graph svg drawn in wrap, a
 * scroll container: buttons (zoom in, out, fit), Ctrl + wheel and a
 * trackpad pinch zoom around the pointer, two fingers pinch, and a drag
 * pans. It returns {fit(), zoom(factor), scale()}; fit is called when a
 * graph is drawn.
 */
export function zoomable(wrap, svg) {
  let scale = 1;
  const size = () => {
    const vb = svg.viewBox.baseVal;
    return { w: vb?.width || 0, h: vb?.height || 0 };
  };
  // set zooms to s keeping the graph point under (cx, cy), wrap's
  // coordinates, where it is.
  const set = (s, cx = wrap.clientWidth / 2, cy = wrap.clientHeight / 2) => {
    s = Math.min(MAX_ZOOM, Math.max(MIN_ZOOM, s));
    const { w, h } = size();
    const gx = (wrap.scrollLeft + cx) / scale;
    const gy = (wrap.scrollTop + cy) / scale;
    scale = s;
    svg.setAttribute('width', Math.round(w * s));
    svg.setAttribute('height', Math.round(h * s));
    wrap.scrollLeft = gx * s - cx;
    wrap.scrollTop = gy * s - cy;
    wrap.dataset.zoom = s.toFixed(2);
  };
  const fit = () => {
    const { w, h } = size();
    if (!w || !h) return;
    const room = Math.min((wrap.clientWidth - 8) / w, (wrap.clientHeight - 8) / h);
    scale = 1;
    set(Math.min(1, Math.max(FIT_FLOOR, room)));
    wrap.scrollLeft = (svg.clientWidth - wrap.clientWidth) / 2;
    wrap.scrollTop = 0;
  };
  const local = (e) => {
    const r = wrap.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  };
  wrap.addEventListener('wheel', (e) => {
    if (!e.ctrlKey && !e.metaKey) return; // a plain wheel scrolls (pans)
    e.preventDefault();
    set(scale * Math.exp(-e.deltaY / 300), ...local(e));
  }, { passive: false });
  const pointers = new Map();
  let pinch = 0;
  let drag = null;
  wrap.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    pointers.set(e.pointerId, e);
    if (pointers.size === 2) {
      const [a, b] = [...pointers.values()];
      pinch = Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY);
      drag = null;
    } else if (e.pointerType === 'mouse') {
      drag = { x: e.clientX, y: e.clientY, l: wrap.scrollLeft, t: wrap.scrollTop };
      wrap.setPointerCapture(e.pointerId);
      wrap.classList.add('dragging');
    }
  });
  wrap.addEventListener('pointermove', (e) => {
    if (!pointers.has(e.pointerId)) return;
    pointers.set(e.pointerId, e);
    if (pointers.size === 2 && pinch) {
      const [a, b] = [...pointers.values()];
      const d = Math.hypot(a.clientX - b.clientX, a.clientY - b.clientY);
      const [cx, cy] = local({ clientX: (a.clientX + b.clientX) / 2, clientY: (a.clientY + b.clientY) / 2 });
      set(scale * (d / pinch), cx, cy);
      pinch = d;
    } else if (drag) {
      wrap.scrollLeft = drag.l - (e.clientX - drag.x);
      wrap.scrollTop = drag.t - (e.clientY - drag.y);
    }
  });
  const up = (e) => {
    pointers.delete(e.pointerId);
    if (pointers.size < 2) pinch = 0;
    drag = null;
    wrap.classList.remove('dragging');
  };
  wrap.addEventListener('pointerup', up);
  wrap.addEventListener('pointercancel', up);
  return { fit, zoom: (f) => set(scale * f), scale: () => scale };
}

/**
 * compact folds a spec for a shorter drawing: a pipeline (nodes one after
 * another, each with one way in and one way out, no route between them)
 * becomes one node, and so does a loop (nodes that lead back to each
 * other). It returns {spec, groups: Map(name → member names)}; a node
 * not folded is its own group.
 */
export function compact(spec) {
  const nodes = (spec.nodes || []).filter((n) => n !== START && n !== END);
  const edges = spec.edges || [];
  const group = new Map(nodes.map((n) => [n, n]));
  // Loops: strongly connected components (Tarjan) of more than one node.
  const out = new Map(nodes.map((n) => [n, []]));
  for (const e of edges) if (out.has(e.from) && out.has(e.to)) out.get(e.from).push(e.to);
  let index = 0;
  const idx = new Map();
  const low = new Map();
  const stack = [];
  const on = new Set();
  const comps = [];
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of out.get(v)) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const c = [];
      let w;
      do { w = stack.pop(); on.delete(w); c.push(w); } while (w !== v);
      if (c.length > 1) comps.push(c.reverse());
    }
  };
  for (const n of nodes) if (!idx.has(n)) visit(n);
  for (const c of comps) {
    const name = `${c[0]} ⟲ ${c[c.length - 1]} (${c.length})`;
    for (const n of c) group.set(n, name);
  }
  // Pipelines: a plain edge a → b where a has one way out and b one way
  // in, neither folded into a loop.
  const ins = new Map();
  const outs = new Map();
  for (const e of edges) {
    outs.set(e.from, (outs.get(e.from) || 0) + 1);
    ins.set(e.to, (ins.get(e.to) || 0) + 1);
  }
  const chainNext = new Map();
  for (const e of edges) {
    if (e.conditional || e.max || !group.has(e.from) || !group.has(e.to)) continue;
    if (group.get(e.from) !== e.from || group.get(e.to) !== e.to || e.from === e.to) continue;
    if (outs.get(e.from) === 1 && ins.get(e.to) === 1) chainNext.set(e.from, e.to);
  }
  const heads = [...chainNext.keys()].filter((n) => ![...chainNext.values()].includes(n));
  for (const h of heads) {
    const chain = [h];
    while (chainNext.has(chain[chain.length - 1])) chain.push(chainNext.get(chain[chain.length - 1]));
    const name = `${chain[0]} → ${chain[chain.length - 1]} (${chain.length})`;
    for (const n of chain) group.set(n, name);
  }
  const groups = new Map();
  for (const [n, g] of group) {
    if (!groups.has(g)) groups.set(g, []);
    groups.get(g).push(n);
  }
  const to = (n) => group.get(n) ?? n;
  const seen = new Set();
  const folded = [];
  for (const e of edges) {
    const f = to(e.from);
    const t = to(e.to);
    if (f === t) continue;
    const key = `${f}\u0000${t}\u0000${!!e.conditional}`;
    if (seen.has(key)) continue;
    seen.add(key);
    folded.push({ ...e, from: f, to: t, max: f === e.from && t === e.to ? e.max : 0, exit: f === e.from && t === e.to ? e.exit : undefined });
  }
  return { spec: { ...spec, nodes: [...new Set(nodes.map(to))], edges: folded }, groups };
}
