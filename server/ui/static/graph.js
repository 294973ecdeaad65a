// graph.js draws a Loom graph spec ({nodes, edges: [{from, to, conditional,
// max, exit}]}) as SVG with a simple layered layout:
//
//   - back edges are found by a depth-first walk from Start; the rest form
//     a DAG whose nodes are put in rows by longest path from Start;
//   - edges to the next row are short curves, edges that skip rows go
//     straight when nothing is in the way, else round a lane on the left;
//   - back edges (loops) go round a lane on the right, labelled with their
//     bound; route targets and loop exits are dashed.

export const START = '__start__';
export const END = '__end__';

const NODE_H = 34;
const ROW_GAP = 36;
const COL_GAP = 28;
const LANE_GAP = 16;
const PAD = 16;

// label is the text a node shows.
function label(n) {
  if (n === START) return 'start';
  if (n === END) return 'end';
  return n;
}

function nodeWidth(n) {
  if (n === START || n === END) return 64;
  return Math.max(84, Math.round(label(n).length * 7.8) + 28);
}

// edgeLabel is the bound an edge carries, if any.
export function edgeLabel(e) {
  if (e.exit) return `after ${e.max}×`;
  if (e.max > 0) return `max ${e.max}×`;
  return '';
}

// layout places the spec's nodes and routes its edges; it returns
// {nodes: Map(name → {x, y, w, h, layer}), edges: [{edge, path, label,
// lx, ly, anchor, kind}], width, height}.
export function layout(spec) {
  const names = [START, ...(spec.nodes || [])];
  const edges = spec.edges || [];
  const known = new Set(names);
  for (const e of edges) {
    for (const n of [e.from, e.to]) {
      if (!known.has(n) && n !== END) { known.add(n); names.push(n); }
    }
  }
  names.push(END);
  const outs = new Map(names.map((n) => [n, []]));
  for (const e of edges) outs.get(e.from).push(e);

  // Back edges: to a node on the walk's stack.
  const back = new Set();
  const mark = new Map();
  const walk = (n) => {
    mark.set(n, 1);
    for (const e of outs.get(n)) {
      const m = mark.get(e.to);
      if (m === 1) back.add(e);
      else if (!m) walk(e.to);
    }
    mark.set(n, 2);
  };
  for (const n of names) if (!mark.get(n)) walk(n);

  // Longest-path layers over the forward edges, in topological order.
  const order = [];
  const seen = new Set();
  const topo = (n) => {
    seen.add(n);
    for (const e of outs.get(n)) if (!back.has(e) && !seen.has(e.to)) topo(e.to);
    order.push(n);
  };
  for (const n of names) if (!seen.has(n)) topo(n);
  order.reverse();
  const layer = new Map(names.map((n) => [n, 0]));
  for (const n of order) {
    for (const e of outs.get(n)) {
      if (!back.has(e)) layer.set(e.to, Math.max(layer.get(e.to), layer.get(n) + 1));
    }
  }
  const last = Math.max(0, ...[...layer.entries()].filter(([n]) => n !== END).map(([, l]) => l));
  layer.set(END, Math.max(layer.get(END), last + 1));

  // Rows, ordered once by the mean position of their parents.
  const rows = [];
  for (const n of names) (rows[layer.get(n)] ||= []).push(n);
  const pos = new Map();
  rows.forEach((row, i) => {
    if (!row) { rows[i] = []; return; }
    if (i > 0) {
      const mean = (n) => {
        const ps = edges.filter((e) => e.to === n && !back.has(e) && pos.has(e.from)).map((e) => pos.get(e.from));
        return ps.length ? ps.reduce((a, b) => a + b, 0) / ps.length : Infinity;
      };
      const keyed = row.map((n, j) => [n, mean(n), j]);
      keyed.sort((a, b) => (a[1] - b[1]) || (a[2] - b[2]));
      rows[i] = keyed.map((k) => k[0]);
    }
    rows[i].forEach((n, j) => pos.set(n, j));
  });

  // Coordinates: rows centred on x = 0 for now.
  const nodes = new Map();
  const rowWidth = (row) => row.reduce((s, n) => s + nodeWidth(n), 0) + COL_GAP * Math.max(0, row.length - 1);
  const widest = Math.max(...rows.map(rowWidth));
  rows.forEach((row, i) => {
    let x = -rowWidth(row) / 2;
    const y = PAD + NODE_H / 2 + i * (NODE_H + ROW_GAP);
    for (const n of row) {
      const w = nodeWidth(n);
      nodes.set(n, { x: x + w / 2, y, w, h: NODE_H, layer: i });
      x += w + COL_GAP;
    }
  });
  // Classify the edges: loops round lanes on the right, skips that a node
  // is in the way of round lanes on the left.
  const classes = edges.map((e) => {
    const a = nodes.get(e.from);
    const b = nodes.get(e.to);
    if (e.from === e.to) return 'self';
    if (back.has(e)) return 'back';
    const y1 = a.y + a.h / 2;
    const y2 = b.y - b.h / 2;
    const blocked = [...nodes.entries()].some(([n, m]) => {
      if (n === e.from || n === e.to || m.layer <= a.layer || m.layer >= b.layer) return false;
      const x = a.x + (b.x - a.x) * ((m.y - y1) / (y2 - y1));
      return x > m.x - m.w / 2 - 10 && x < m.x + m.w / 2 + 10;
    });
    return blocked ? 'skip' : 'down';
  });
  const count = (k) => classes.filter((c) => c === k).length;
  const labelRoom = (k) => Math.max(0, ...edges.filter((e, i) => classes[i] === k && edgeLabel(e))
    .map((e) => edgeLabel(e).length * 6.5 + 8));
  const leftRoom = PAD + (count('skip') ? 22 + LANE_GAP * count('skip') + labelRoom('skip') : 0);
  const rightRoom = PAD + Math.max(
    count('back') ? 22 + LANE_GAP * count('back') + labelRoom('back') : 0,
    count('self') ? 40 + labelRoom('self') : 0);
  const shift = leftRoom + widest / 2;
  for (const m of nodes.values()) m.x += shift;
  const minX = leftRoom;
  const maxX = leftRoom + widest;

  const r = 10; // lane corner radius
  let left = 0;
  let right = 0;
  const routed = edges.map((e, i) => {
    const a = nodes.get(e.from);
    const b = nodes.get(e.to);
    const out = { edge: e, kind: classes[i], label: edgeLabel(e), side: '' };
    switch (out.kind) {
      case 'self': {
        const x = a.x + a.w / 2;
        Object.assign(out, { side: 'right', lx: x + 30, ly: a.y,
          path: `M${x} ${a.y - 7} C${x + 34} ${a.y - 26} ${x + 34} ${a.y + 26} ${x} ${a.y + 7}` });
        break;
      }
      case 'back': {
        const lane = maxX + 22 + LANE_GAP * right++;
        Object.assign(out, { side: 'right', lx: lane + 6, ly: (a.y + b.y) / 2,
          path: `M${a.x + a.w / 2} ${a.y} H${lane - r} Q${lane} ${a.y} ${lane} ${a.y - r} ` +
            `V${b.y + r} Q${lane} ${b.y} ${lane - r} ${b.y} H${b.x + b.w / 2}` });
        break;
      }
      case 'skip': {
        const lane = minX - 22 - LANE_GAP * left++;
        Object.assign(out, { side: 'left', lx: lane - 6, ly: (a.y + b.y) / 2,
          path: `M${a.x - a.w / 2} ${a.y} H${lane + r} Q${lane} ${a.y} ${lane} ${a.y + r} ` +
            `V${b.y - r} Q${lane} ${b.y} ${lane + r} ${b.y} H${b.x - b.w / 2}` });
        break;
      }
      default: {
        const y1 = a.y + a.h / 2;
        const y2 = b.y - b.h / 2;
        const dy = (y2 - y1) / 2;
        Object.assign(out, { lx: (a.x + b.x) / 2 + 8, ly: (y1 + y2) / 2,
          path: `M${a.x} ${y1} C${a.x} ${y1 + dy} ${b.x} ${y2 - dy} ${b.x} ${y2}` });
      }
    }
    return out;
  });

  const rowsUsed = rows.length;
  return {
    nodes, edges: routed,
    width: Math.ceil(leftRoom + widest + rightRoom),
    height: Math.ceil(PAD * 2 + rowsUsed * NODE_H + (rowsUsed - 1) * ROW_GAP),
  };
}

// drawGraph draws spec into svg (an <svg> element of the page) and returns
// highlight({running, waiting, next, visited}), which marks nodes: running
// and visited are Sets of node names, waiting a name, next an array.
export function drawGraph(svg, spec) {
  const ns = svg.namespaceURI;
  const make = (tag, attrs = {}, text) => {
    const e = document.createElementNS(ns, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (text != null) e.textContent = text;
    return e;
  };
  const g = layout(spec);
  const title = make('title', { id: 'graph-title' },
    `Graph of ${spec.name || 'the agent'}: ${(spec.nodes || []).join(', ')}`);
  const defs = make('defs');
  const marker = make('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: '9', refY: '5',
    markerWidth: '7', markerHeight: '7', orient: 'auto-start-reverse' });
  marker.append(make('path', { d: 'M0 0 L10 5 L0 10 z' }));
  defs.append(marker);
  const edgeLayer = make('g', { class: 'edges' });
  for (const r of g.edges) {
    const cls = ['edge', r.kind];
    if (r.edge.conditional) cls.push('conditional');
    if (r.edge.exit) cls.push('exit');
    const eg = make('g', { class: cls.join(' '), 'data-from': r.edge.from, 'data-to': r.edge.to });
    eg.append(make('title', {}, `${label(r.edge.from)} → ${label(r.edge.to)}${r.label ? ' (' + r.label + ')' : ''}`));
    eg.append(make('path', { d: r.path, 'marker-end': 'url(#arrow)' }));
    if (r.label) {
      eg.append(make('text', { x: r.lx, y: r.ly, 'text-anchor': r.side === 'left' ? 'end' : 'start',
        'dominant-baseline': 'central', class: 'edge-label' }, r.label));
    }
    edgeLayer.append(eg);
  }
  const nodeLayer = make('g', { class: 'nodes' });
  const els = new Map();
  for (const [n, m] of g.nodes) {
    const terminal = n === START || n === END;
    const ng = make('g', { class: terminal ? 'node terminal' : 'node', 'data-node': n,
      transform: `translate(${m.x} ${m.y})` });
    ng.append(make('title', {}, terminal ? label(n) : `node ${n}`));
    ng.append(make('rect', { x: -m.w / 2, y: -m.h / 2, width: m.w, height: m.h, rx: terminal ? m.h / 2 : 8 }));
    ng.append(make('text', { 'text-anchor': 'middle', 'dominant-baseline': 'central' }, label(n)));
    nodeLayer.append(ng);
    els.set(n, ng);
  }
  svg.replaceChildren(title, defs, edgeLayer, nodeLayer);
  svg.setAttribute('viewBox', `0 0 ${g.width} ${g.height}`);
  svg.setAttribute('width', g.width);
  svg.setAttribute('height', g.height);
  svg.setAttribute('aria-labelledby', 'graph-title');
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
