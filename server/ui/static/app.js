// app.js is Loom's web page. It uses the server's LangGraph-compatible API
// (see server/README.md): /assistants for agents and graphs, /threads for
// threads, state and history, and /threads/{id}/runs/stream (NDJSON) for
// runs, with the stream modes events (nodes starting and ending, model
// text and reasoning), custom (status lines, tool calls and results, the
// agent's own events), updates (interrupts) and values (states).

import { drawGraph, zoomable, compact } from './graph.js';
import { t, lang, languages, setLang, translate, fieldName, wordFor, countText, addMessages } from './i18n.js';
import { renderMarkdown, looksLikeMarkdown } from './markdown.js';

const MODES = ['events', 'custom', 'updates', 'values'];
const HISTORY_LIMIT = 50;

const $ = (sel) => document.querySelector(sel);
const ui = {
  agent: $('#agent'), agentDesc: $('#agent-desc'), thread: $('#thread'), newThread: $('#new-thread'),
  status: $('#run-status'), settings: $('#settings'), keyForm: $('#key-form'), key: $('#api-key'),
  keyClear: $('#key-clear'), timeline: $('#timeline'), composer: $('#composer'), message: $('#message'),
  send: $('#send'), stop: $('#stop'), svg: $('#graph-svg'), mermaid: $('#mermaid'),
  graphWrap: $('#graph-wrap'), zoomIn: $('#zoom-in'), zoomOut: $('#zoom-out'), zoomFit: $('#zoom-fit'), compactView: $('#compact'),
  mermaidCopy: $('#mermaid-copy'), mermaidDownload: $('#mermaid-download'), graphMsg: $('#graph-msg'),
  history: $('#history'), historyNote: $('#history-note'), copyThread: $('#copy-thread'), refresh: $('#refresh'),
  fork: $('#fork-dialog'), forkForm: $('#fork-form'), forkValues: $('#fork-values'),
  forkError: $('#fork-error'), forkRaw: $('#fork-raw'), forkFields: $('#fork-fields'), forkRawBox: $('#fork-raw-box'), forkCancel: $('#fork-cancel'), forkNew: $('#fork-new'), lang: $('#lang'), forkH: $('#fork-h'),
  upload: $('#upload'), uploadFile: $('#upload-file'), panelSlot: $('#agent-panel'),
};

const app = {
  key: localStorage.getItem('loom.apiKey') || '',
  agents: [],
  agent: '',          // assistant id
  schema: null,       // the agent's input schema
  configSchema: null, // the schema of its configuration (config.configurable)
  stateSchema: null,  // the schema of its state
  graph: null,        // {highlight} of the drawn graph
  zoom: null,         // its zoom and pan
  groupOf: null,      // in the compact view, each node's folded group
  spec: null,         // the graph spec drawn
  mermaid: '',
  thread: '',         // thread id
  head: null,         // the thread's state
  busy: false,
  run: null,          // the Run being streamed
  abort: null,        // its AbortController
  pendingCard: null,  // the confirm card that waits for an answer
  forkFrom: null,     // the checkpoint the fork dialog edits
  panel: null,        // the agent's own panel, if it has one
  panelSeq: 0,        // the latest panel asked for
};

// ---- small helpers ----

// i18nAttrs are el's attributes that take a message key, or [key, params].
const i18nAttrs = { i18n: 'textContent', i18nTitle: 'title', i18nPlaceholder: 'placeholder', i18nLabel: 'aria-label' };

// el makes an element. i18n, i18nTitle, i18nPlaceholder and i18nLabel
// take a message key or [key, params]: the element shows the message and
// keeps the key, so a language switch translates it again.
function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k in i18nAttrs) {
      const [key, params] = Array.isArray(v) ? v : [v];
      e.dataset[k] = key;
      if (params) e.dataset.i18nArgs = JSON.stringify(params);
      if (k === 'i18n') e.textContent = t(key, params);
      else e.setAttribute(i18nAttrs[k], t(key, params));
    } else if (k === 'field') {
      e.dataset.i18nField = v;
      e.textContent = fieldName(v);
    } else if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else if (k === 'dataset') Object.assign(e.dataset, v);
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat()) if (kid != null) e.append(kid);
  return e;
}

const enc = encodeURIComponent;
const isObject = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);

class APIError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(json) {
  const h = { Accept: 'application/json' };
  if (json) h['Content-Type'] = 'application/json';
  if (app.key) h.Authorization = 'Bearer ' + app.key;
  // The agent's own words (status lines, replies) follow the page's
  // language, not the browser's.
  h['Accept-Language'] = lang() === 'zh' ? 'zh-CN,zh;q=0.9' : 'en';
  return h;
}

async function apiError(res) {
  let code = 'http_' + res.status;
  let message = `${res.status} ${res.statusText}`;
  try {
    const j = await res.json();
    code = j.error.code || code;
    message = j.error.message || message;
  } catch { /* not Loom's JSON error */ }
  if (res.status === 401) {
    ui.settings.open = true;
    ui.key.focus();
    message += t('key.ask');
  }
  return new APIError(res.status, code, message);
}

// api calls the server and returns the decoded JSON answer.
async function api(method, path, body) {
  const res = await fetch(path, {
    method, headers: headers(body !== undefined),
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw await apiError(res);
  if (res.status === 204) return null;
  return res.json();
}

// ndjson yields the objects of a newline-delimited JSON stream.
async function* ndjson(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) yield JSON.parse(line);
    }
  }
  if (buf.trim()) yield JSON.parse(buf);
}

// pendingOf returns the question a thread state waits on: {id, value, node}.
function pendingOf(st) {
  for (const t of st?.tasks || []) {
    if (t.interrupts?.length) return { ...t.interrupts[0], node: t.name };
  }
  return null;
}

function scrollDown() {
  ui.timeline.scrollTop = ui.timeline.scrollHeight;
}

function push(item) {
  ui.timeline.append(item);
  scrollDown();
  return item;
}

// note adds a line to the timeline: a message key with params, or text
// from elsewhere (an error).
function note(msg, cls = '', params) {
  return push(el('li', { class: 'note ' + cls, ...(params ? { i18n: [msg, params] } : { text: msg }) }));
}

function userMessage(text) {
  return push(el('li', { class: 'msg user' }, el('div', { class: 'who', i18n: 'chat.you' }), el('div', { class: 'bubble', text })));
}

// setStatus shows the thread's status: idle, running, waiting, stopped,
// done or error.
function setStatus(kind) {
  document.body.dataset.run = kind;
  ui.status.dataset.status = kind;
  setMsg(ui.status, 'status.' + kind);
}

// setMsg shows message key (with params) in e, and keeps the key for a
// language switch.
function setMsg(e, key, params) {
  e.dataset.i18n = key;
  if (params) e.dataset.i18nArgs = JSON.stringify(params);
  else delete e.dataset.i18nArgs;
  e.textContent = t(key, params);
}

// ---- values: readable views of JSON ----

// parsed is v, or what v holds when it is the JSON text of an object or a
// list (tools often return their result as text).
function parsed(v) {
  if (typeof v === 'string') {
    const s = v.trim();
    if ((s.startsWith('{') && s.endsWith('}')) || (s.startsWith('[') && s.endsWith(']'))) {
      try { return JSON.parse(s); } catch { /* text */ }
    }
  }
  return v;
}

const isScalar = (v) => v === null || typeof v !== 'object';

function isEmpty(v) {
  return v == null || v === '' || (Array.isArray(v) && !v.length) || (isObject(v) && !Object.keys(v).length);
}

// valueView shows a value readably: text, a number, yes or no, a list, a
// table for a list of objects, a key/value list for an object; what is
// nested deeper than three levels shows as compact JSON.
function valueView(v, depth = 0, words = false) {
  v = parsed(v);
  if (typeof v === 'boolean') return el('span', { class: 'bool ' + (v ? 'yes' : 'no'), dataset: { value: String(v) }, i18n: v ? 'bool.yes' : 'bool.no' });
  if (v === null) return el('span', { class: 'value muted', text: '—' });
  if (typeof v === 'string') {
    if (v.includes('\n') && looksLikeMarkdown(v)) return showMarkdown(el('div', { class: 'value text md-value' }), v);
    // A field's machine word the catalogue knows (status: cancelled)
    // reads as a word, the word itself in the title; a table's cells and
    // a list's items are data, shown as they are.
    if (words && wordFor(v)) return el('span', { class: 'value text word', title: v, field: v });
    return el('span', { class: 'value text', text: v });
  }
  if (typeof v === 'number') return el('span', { class: 'value num', text: String(v) });
  if (depth < 3 && Array.isArray(v)) {
    if (v.every(isScalar)) return el('ul', { class: 'list' }, v.map((x) => el('li', {}, valueView(x, depth + 1))));
    if (v.every(isObject)) return tableView(v, depth);
    if (isRows(v)) return rowsView(v, null, depth);
  }
  if (depth < 3 && isObject(v)) {
    // {columns, rows}: a query's result, as one table.
    const cols = v.columns ?? v.cols;
    if (isRows(v.rows) && Array.isArray(cols) && cols.every((c) => typeof c === 'string')) {
      const rest = Object.fromEntries(Object.entries(v).filter(([k]) => k !== 'rows' && k !== 'columns' && k !== 'cols'));
      const table = rowsView(v.rows, cols, depth);
      return Object.keys(rest).some((k) => !isEmpty(rest[k])) ? el('div', {}, fieldsView(rest, depth), table) : table;
    }
    return fieldsView(v, depth);
  }
  return el('code', { class: 'compact', text: JSON.stringify(v) });
}

// tableView shows a list of objects as a table, a column for each key.
function tableView(rows, depth) {
  const cols = [];
  for (const r of rows) for (const k of Object.keys(r)) if (!cols.includes(k)) cols.push(k);
  return el('div', { class: 'table-wrap' }, el('table', { class: 'data' },
    el('thead', {}, el('tr', {}, cols.map((c) => el('th', { scope: 'col', dataset: { key: c }, field: c })))),
    el('tbody', {}, rows.map((r) => el('tr', {}, cols.map((c) => el('td', {}, c in r ? valueView(r[c], depth + 1) : null)))))));
}

// fieldsView shows an object's fields as a key/value list.
function fieldsView(obj, depth = 0) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, v] of Object.entries(obj)) {
    if (isEmpty(v)) continue;
    // A mechanism's field (kind, node, an id) shows its value as it is.
    const raw = typeof v === 'string' && internalKey.test(k);
    dl.append(el('dt', { dataset: { key: k }, field: k }), el('dd', {}, raw ? el('span', { class: 'value text', text: v }) : valueView(v, depth + 1, true)));
  }
  return dl;
}

// rawView is the JSON itself, folded behind a toggle.
function rawView(v) {
  return el('details', { class: 'raw' }, el('summary', { i18n: 'run.raw' }),
    el('pre', { class: 'json', text: JSON.stringify(v, null, 2) }));
}

// showMarkdown shows text in e as Markdown (raw HTML in it stays text)
// and returns e; e.raw keeps the text as written.
function showMarkdown(e, text) {
  e.raw = text;
  e.replaceChildren(renderMarkdown(text));
  serverLinks(e);
  return e;
}

// linkKind is what a path of this server holds, as a message key.
function linkKind(path) {
  if (/\.(png|jpe?g|svg|webp)$/i.test(path) || /preview/i.test(path)) return 'link.preview';
  if (/\.pdf$/i.test(path)) return 'link.pdf';
  if (/\breports?\b/i.test(path)) return 'link.report';
  return 'link.file';
}

// serverLinks makes the links in root to this server's paths absolute,
// names the bare ones by what they hold (a preview, a PDF, a report), and
// opens them with the API key: a plain link would send none, so a click
// fetches the file and opens it as a blob.
function serverLinks(root) {
  for (const a of root.querySelectorAll('a[href^="/"]')) {
    const path = a.getAttribute('href');
    a.href = new URL(path, location.origin).href;
    a.dataset.path = path;
    a.target = '_blank';
    a.rel = 'noopener';
    if (a.textContent === path) {
      a.replaceChildren(el('span', { i18n: linkKind(path) }));
      a.title = a.href;
    }
    a.addEventListener('click', (ev) => {
      if (!app.key) return; // on loopback with no key, the link opens as it is
      ev.preventDefault();
      const tab = window.open('', '_blank');
      fetchBlob(path).then((b) => {
        const url = URL.createObjectURL(b);
        if (tab) tab.location.href = url;
        else saveBlob(b, decodeURIComponent(path.split('/').pop()));
        setTimeout(() => URL.revokeObjectURL(url), 60000);
      }).catch((e) => {
        tab?.close();
        note('link.failed', 'error', { error: e.message });
      });
    });
  }
}

// rowsView shows a list of rows (lists of values) as a table: the
// columns named by cols when given, else numbered.
function rowsView(rows, cols, depth = 0) {
  const n = Math.max(cols?.length || 0, ...rows.map((r) => r.length));
  const names = cols?.length ? cols : null;
  return el('div', { class: 'table-wrap' }, el('table', { class: 'data rows' },
    // The columns are the query's names (a database's, or the asker's
    // AS n): data, translated only when the catalogue knows the word.
    names ? el('thead', {}, el('tr', {}, names.map((c) => el('th', { scope: 'col', dataset: { key: c, content: 'column' }, field: String(c) })))) : null,
    el('tbody', {}, rows.map((r) => el('tr', {}, Array.from({ length: n }, (_, i) => el('td', { class: typeof r[i] === 'number' ? 'num' : null }, i < r.length ? valueView(r[i], depth + 1) : null)))))));
}

const isRows = (v) => Array.isArray(v) && v.length > 0 && v.every((r) => Array.isArray(r) && r.every(isScalar));

// A field is an internal one when its key names a mechanism (type, kind,
// an id, a tool and its arguments, slots) or its value is a machine name such as
// ask_confirmation or plugin.order.query.
const internalKey = /^(type|kind|intent|id|tool|name|args|arguments|revision|index|node|step|schema)$|_id$|(^|_)slots?$/;
const machineName = /^[a-z][a-z0-9]*(?:[_.][a-z0-9]+)+$/;
const isInternal = (k, v) => internalKey.test(k) || (typeof v === 'string' && machineName.test(v));

// leaves are the strings in v.
function leaves(v, out = []) {
  v = parsed(v);
  if (typeof v === 'string') out.push(v);
  else if (v && typeof v === 'object') for (const x of Object.values(v)) leaves(x, out);
  return out;
}

// ---- a run in the timeline ----

// Run shows one run (or one restored state) in the timeline: the nodes it
// went through, reasoning, text, status, tool calls and results, confirm
// cards, and how it ended. title is a message key with params, or text.
class Run {
  constructor(title, kind = 'run') {
    this.kind = kind;
    this.badge = el('span', { class: 'badge' });
    this.body = el('div', { class: 'run-body' });
    const who = Array.isArray(title) ? { i18n: title } : { text: title };
    this.li = push(el('li', { class: 'run', dataset: { status: kind === 'run' ? 'running' : 'restored', kind } },
      el('div', { class: 'run-head' }, el('span', { class: 'who', ...who }), this.badge), this.body));
    if (kind === 'run') setMsg(this.badge, 'status.running');
    this.trail = null;        // the list of the run's node chips
    this.chips = new Map();   // node:step → chip
    this.reasoning = new Map(); // node:step → <details>
    this.texts = new Map();   // message id → bubble
    this.streams = new Map(); // kind:node:step → <details> of streamed text
    this.statusLine = null;
    this.running = new Set();
    this.visited = new Set();
    this.interrupts = new Set();
    this.failed = false;
    this.id = '';
  }

  add(node) {
    this.body.append(node);
    scrollDown();
    return node;
  }

  handle(ev) {
    const d = ev.data;
    switch (ev.event) {
      case 'metadata': this.id = d.run_id; break;
      case 'events': this.onEvent(d); break;
      case 'custom': this.onCustom(d); break;
      case 'updates':
        if (d && d.__interrupt__) for (const i of d.__interrupt__) this.confirm(i, this.lastNode);
        break;
      case 'error': this.fail(d.message || d.error); break;
      default: break; // values, heartbeats
    }
  }

  onEvent(d) {
    const node = d.metadata?.langgraph_node;
    const step = d.metadata?.langgraph_step;
    const key = node + ':' + step;
    switch (d.event) {
      case 'on_chain_start':
        if (node) this.nodeStart(node, key);
        break;
      case 'on_chain_end':
        if (node) this.nodeEnd(node, key, d.data?.duration_ms);
        break;
      case 'on_chat_model_stream': {
        const c = d.data?.chunk || {};
        const reasoning = c.additional_kwargs?.reasoning_content;
        if (reasoning) this.reason(key, node, reasoning);
        if (c.content) this.text(c.id || key, c.content);
        break;
      }
      default: break; // tools and custom events come in the custom mode
    }
  }

  nodeStart(node, key) {
    if (!this.trail) {
      // The nodes' names are the code's: the run's steps fold, at its
      // top, under their count, which says when one is running.
      this.trail = el('ol', { class: 'trail', i18nLabel: 'run.steps' });
      this.body.prepend(el('details', { class: 'steps' }, el('summary', { class: 'steps-count' }), this.trail));
    }
    const chip = el('li', { class: 'chip', dataset: { node, state: 'running' }, text: node });
    this.trail.append(chip);
    this.countSteps(this.trail);
    this.chips.set(key, chip);
    this.running.add(node);
    this.lastNode = node;
    paint();
    scrollDown();
  }

  // countSteps says in trail's summary how many steps it holds, and
  // whether one is running.
  countSteps(trail) {
    const chips = trail.children;
    const running = [...chips].some((c) => c.dataset.state === 'running');
    setMsg(trail.previousSibling, running ? 'run.stepsNow' : 'run.stepsCount', { n: chips.length });
  }

  nodeEnd(node, key, ms) {
    const chip = this.chips.get(key);
    if (chip) {
      chip.dataset.state = 'done';
      if (ms != null) chip.title = `${node}: ${ms} ms`;
      this.countSteps(chip.parentElement);
    }
    this.fold(key);
    this.foldStreams(key);
    this.running.delete(node);
    this.visited.add(node);
    paint();
  }

  reason(key, node, text) {
    let d = this.reasoning.get(key);
    if (!d) {
      d = el('details', { class: 'reasoning', open: true, dataset: { state: 'streaming', node: node ?? '' } },
        el('summary', {}, el('span', { i18n: 'run.reasoning' }), el('span', { class: 'count' })),
        el('div', { class: 'reasoning-text' }));
      this.reasoning.set(key, d);
      this.add(d);
    }
    d.lastChild.textContent += text;
    scrollDown();
  }

  // fold closes a step's reasoning and says how long it is: words, or
  // characters for Chinese, Japanese or Korean text.
  fold(key) {
    const d = this.reasoning.get(key);
    if (!d || d.dataset.state === 'done') return;
    d.open = false;
    d.dataset.state = 'done';
    const c = countText(d.lastChild.textContent);
    const count = d.querySelector('.count');
    setMsg(count, c.unit === 'chars' ? 'count.chars' : 'count.words', { n: c.n });
    count.dataset.n = c.n;
    count.dataset.unit = c.unit;
  }

  // text adds a piece of the model's text to its bubble, which shows it
  // as Markdown (drawn again at most once a frame while it streams).
  text(id, piece) {
    let b = this.texts.get(id);
    if (!b) {
      b = el('div', { class: 'bubble assistant', dataset: { state: 'streaming' } });
      b.raw = '';
      this.texts.set(id, b);
      this.add(b);
    }
    b.raw += piece;
    if (!b.drawing) {
      b.drawing = requestAnimationFrame(() => {
        b.drawing = 0;
        showMarkdown(b, b.raw);
        scrollDown();
      });
    }
  }

  // said is the text the run's model wrote, as written.
  said() {
    return [...this.texts.values()].map((b) => b.raw).join('');
  }

  onCustom(d) {
    const data = d.data;
    switch (d.kind) {
      case 'status': {
        const text = typeof data === 'string' ? data : JSON.stringify(data);
        if (!this.statusLine) this.statusLine = this.add(el('p', { class: 'status-line', role: 'status' }));
        this.statusLine.textContent = text;
        break;
      }
      case 'tool_call':
      case 'tool_result':
        this.add(toolCard(d));
        break;
      default:
        // Text of the agent's own kind (a draft the model writes piece by
        // piece) grows one box per kind, node and step.
        if (typeof data === 'string') {
          this.stream(d.kind, `${d.kind}:${d.node ?? ''}:${d.step ?? ''}`, data);
          break;
        }
        this.add(el('div', { class: 'card event', dataset: { kind: d.kind } },
          el('div', { class: 'card-title', text: String(d.kind).replaceAll('_', ' ') }),
          valueView(data), isScalar(data) ? null : rawView(data)));
    }
  }

  // onChat shows one chunk of a chat completions stream (a run started
  // by a typed answer): its ext says what happened, in which node. The
  // run's last words (ext of the run's end) are left to outcome, which
  // reads them from the thread's state.
  onChat(c) {
    if (c.error) {
      this.fail(c.error.message || c.error.code);
      return;
    }
    const x = c.ext;
    if (!x || x.block_id === 'reply' || x.kind === 'interrupt') return;
    const key = `${x.node || ''}:${x.step ?? ''}`;
    if (x.node) this.enter(x.node, key);
    switch (x.kind) {
      case 'reasoning_text': this.reason(key, x.node, x.text || ''); break;
      case 'assistant_text': this.text(x.block_id, x.text || ''); break;
      case 'status': this.onCustom({ kind: 'status', data: x.text ?? x.data }); break;
      case 'tool_call':
      case 'tool_result': this.add(toolCard({ kind: x.kind, data: x.data, node: x.node })); break;
      case 'confirm_request': this.confirm({ id: x.interrupt_id, value: x.data }, x.node); break;
      case 'error': this.fail(x.text); break;
      default: this.onCustom({ kind: x.kind, data: x.data, node: x.node, step: x.step });
    }
  }

  // enter marks node (at step key) as the one working, ending the one
  // before: a chat stream says where its events come from, not when a
  // node starts or ends.
  enter(node, key) {
    if (this.chips.has(key)) return;
    this.endCurrent();
    this.nodeStart(node, key);
    this.current = [node, key];
  }

  // endCurrent ends the node entered last, unless it waits for a person.
  endCurrent() {
    if (!this.current) return;
    const [node, key] = this.current;
    this.current = null;
    if (this.chips.get(key)?.dataset.state === 'running') this.nodeEnd(node, key);
  }

  // stream adds piece to the box of streamed text key (of the agent's
  // kind kind): open, its end in view, while it grows; folded, with its
  // length, when its step ends. The text is drawn at most once a frame.
  stream(kind, key, piece) {
    let d = this.streams.get(key);
    if (!d) {
      const label = t('kind.' + kind);
      d = el('details', { class: 'stream', open: true, dataset: { kind, state: 'streaming' } },
        el('summary', {}, el('span', label === 'kind.' + kind ? { text: String(kind).replaceAll('_', ' ') } : { i18n: 'kind.' + kind }),
          el('span', { class: 'count' })),
        el('pre', { class: 'stream-text' }));
      d.raw = '';
      d.chunks = 0;
      this.streams.set(key, d);
      this.add(d);
    }
    d.raw += piece;
    d.chunks++;
    if (!d.drawing) {
      d.drawing = requestAnimationFrame(() => {
        d.drawing = 0;
        const pre = d.lastChild;
        pre.textContent = d.raw;
        pre.scrollTop = pre.scrollHeight;
        setMsg(d.querySelector('.count'), 'count.chars', { n: d.raw.length });
        scrollDown();
      });
    }
  }

  // foldStreams folds the streamed boxes of step key (node:step), or all.
  foldStreams(key) {
    for (const [k, d] of this.streams) {
      if (key && !k.endsWith(':' + key)) continue;
      if (d.dataset.state === 'done') continue;
      if (d.drawing) cancelAnimationFrame(d.drawing);
      d.drawing = 0;
      d.lastChild.textContent = d.raw;
      d.open = false;
      d.dataset.state = 'done';
      d.dataset.chunks = d.chunks;
      setMsg(d.querySelector('.count'), 'count.chars', { n: d.raw.length });
    }
  }

  // confirm shows a card for question q ({id, value}) asked by node.
  // Several questions pending at once are shown one at a time, in the
  // order asked, as the chat endpoint asks them: the next one shows once
  // this run's card is answered.
  confirm(q, node) {
    if (this.interrupts.has(q.id)) return;
    this.interrupts.add(q.id);
    if (this.asking?.dataset.state === 'pending') return;
    for (const chip of this.chips.values()) {
      if (chip.dataset.node === node && chip.dataset.state === 'running') chip.dataset.state = 'waiting';
    }
    this.asking = this.add(confirmCard(q, node));
    this.setBadge('interrupted', 'status.waiting');
  }

  fail(message) {
    this.failed = true;
    this.add(el('div', { class: 'card error', role: 'alert' }, el('div', { class: 'card-title', i18n: 'run.error' }),
      el('p', { text: message })));
    this.setBadge('error', 'status.error');
  }

  // close ends the stream's part: reasoning folds, unfinished steps stop.
  close() {
    for (const b of this.texts.values()) {
      if (b.drawing) cancelAnimationFrame(b.drawing);
      b.drawing = 0;
      showMarkdown(b, b.raw);
      b.dataset.state = 'done';
    }
    for (const key of this.reasoning.keys()) this.fold(key);
    this.foldStreams();
    for (const chip of this.chips.values()) if (chip.dataset.state === 'running') chip.dataset.state = 'stopped';
    for (const trail of this.body.querySelectorAll('ol.trail')) this.countSteps(trail);
    this.running.clear();
    if (this.statusLine) this.statusLine.classList.add('done');
  }

  // foldRepeated folds the tool results whose rows the run's answer
  // repeats (every cell of their tables is in said): the answer shows
  // them, the working stays one click away.
  foldRepeated(said) {
    for (const card of this.body.querySelectorAll('.card.tool-result:not([data-repeated])')) {
      const cells = [...card.querySelectorAll('table.data td')].map((td) => td.textContent.trim()).filter(Boolean);
      if (!cells.length || !cells.every((c) => said.includes(c))) continue;
      card.dataset.repeated = 'true';
      const title = card.querySelector('.card-title');
      const rest = [...card.children].filter((c) => c !== title);
      const d = el('details', { class: 'tool-body repeated' }, el('summary', { i18n: 'run.inAnswer' }));
      d.append(...rest);
      card.append(d);
    }
  }

  setBadge(status, key) {
    this.li.dataset.status = status;
    setMsg(this.badge, key);
  }

  // outcome shows where the thread stands after the run: a question, the
  // final state, or work left to continue.
  outcome(st) {
    const q = pendingOf(st);
    if (this.failed) return;
    if (!st.checkpoint) {
      this.setBadge('idle', 'status.noState');
    } else if (q) {
      this.confirm(q, q.node);
      this.setBadge('interrupted', 'status.waiting');
    } else if (!st.next?.length) {
      const view = isObject(st.values) ? fieldsView(st.values) : valueView(st.values);
      // An agent that says what it did (loom_reply) says it in a bubble,
      // unless it streamed its text already; its state folds away.
      const bubble = st.loom_reply && !this.texts.size ? this.add(showMarkdown(el('div', { class: 'bubble assistant reply' }), st.loom_reply)) : null;
      const said = st.loom_reply || this.said();
      const shown = said ? app.panel?.reply?.(said) : null;
      if (shown?.card) {
        // The agent's panel shows what the reply names (a report with its
        // charts): the reply's text folds away under it.
        this.add(shown.card);
        if (bubble) {
          const d = el('details', { class: 'reply-text' }, el('summary', { i18n: shown.asText || 'run.asText' }));
          bubble.replaceWith(d);
          d.append(bubble);
        }
      }
      if (said) this.foldRepeated(said);
      this.add(el('div', { class: 'card result', dataset: { status: 'done' } },
        el('div', { class: 'card-title', i18n: this.kind === 'run' ? 'run.finished' : 'run.state' }),
        st.loom_reply ? el('details', { class: 'state' }, el('summary', { i18n: 'run.state' }), view) : view));
      this.setBadge('done', this.kind === 'run' ? 'status.done' : 'status.restored');
    } else {
      this.add(el('div', { class: 'card next' },
        el('p', { i18n: 'run.goesOnPlain', title: st.next.join(', ') }),
        el('button', { type: 'button', class: 'primary continue', i18n: 'run.continue', onclick: (e) => { e.target.disabled = true; runStream({}); } })));
      this.setBadge('stopped', this.kind === 'run' ? 'status.stopped' : 'status.restored');
    }
  }
}

// BIG is the size of JSON past which a tool's result starts folded.
const BIG = 1200;

// toolCard shows a tool call (its arguments) or result as a readable
// view, with the JSON behind a toggle.
function toolCard(d) {
  const call = d.kind === 'tool_call';
  const data = d.data;
  const name = isObject(data) ? (data.name || data.tool || '') : '';
  let shown = data;
  if (isObject(data)) {
    const k = call ? ['arguments', 'args', 'input'] : ['result', 'output', 'content'];
    const found = k.find((x) => x in data);
    if (found) shown = data[found];
  }
  shown = parsed(shown);
  let view;
  if (call && isEmpty(shown)) view = el('p', { class: 'muted small', i18n: 'run.noArgs' });
  else if (typeof shown === 'string') {
    view = looksLikeMarkdown(shown) ? showMarkdown(el('div', { class: 'tool-text' }), shown) : el('p', { class: 'tool-text', text: shown });
  }
  else view = valueView(shown);
  const big = JSON.stringify(shown ?? null).length > BIG;
  // The tool's name and its JSON are the code's words: they fold under
  // one toggle.
  const json = isScalar(shown) || (call && isEmpty(shown)) ? null : el('pre', { class: 'json', text: JSON.stringify(shown, null, 2) });
  const more = name || json ? el('details', { class: 'raw' }, el('summary', { i18n: json ? 'run.raw' : 'run.details' }),
    name ? el('p', { class: 'tool-name muted small' }, el('span', { i18n: 'run.tool' }), ' ', el('code', { text: name })) : null, json) : null;
  return el('div', { class: `card tool ${call ? 'tool-call' : 'tool-result'}`, dataset: { node: d.node, tool: name } },
    el('div', { class: 'card-title' }, el('span', { class: 'icon', 'aria-hidden': 'true', text: call ? '→' : '←' }),
      el('span', { i18n: call ? 'run.toolCall' : 'run.toolResult' })),
    big ? el('details', { class: 'tool-body' }, el('summary', { i18n: 'run.details' }), view) : view, more);
}

// confirmCard is a question with accept and reject. It shows the question
// and the fields a person reads; fields that name mechanisms (type,
// intent, ids) and the JSON fold under details, and lines of the question
// that a field below repeats are not shown twice.
function confirmCard(q, node) {
  const v = parsed(q.value);
  let question = '';
  const shown = {};
  const internal = {};
  if (typeof v === 'string') {
    question = v;
  } else if (isObject(v)) {
    const qk = ['summary', 'question', 'message', 'prompt', 'text'].find((k) => typeof v[k] === 'string');
    for (const [k, x] of Object.entries(v)) {
      if (k === qk || isEmpty(x)) continue;
      (isInternal(k, x) ? internal : shown)[k] = x;
    }
    if (qk) {
      const said = leaves(shown).filter((s) => s.length > 3);
      const lines = v[qk].split('\n');
      const kept = lines.filter((l) => !said.some((s) => l.includes(s)));
      question = (kept.length ? kept : lines).join('\n').trim();
    }
  }
  if (node) internal.node = node;
  const noteInput = el('input', { type: 'text', class: 'note-input', i18nPlaceholder: 'card.optional', i18nLabel: 'card.note' });
  const accept = el('button', { type: 'button', class: 'primary accept', disabled: app.busy, i18n: 'card.accept' });
  const reject = el('button', { type: 'button', class: 'reject', disabled: app.busy, i18n: 'card.reject' });
  const card = el('div', { class: 'card confirm', role: 'group', i18nLabel: 'card.label', dataset: { state: 'pending', interrupt: q.id, node: node || '' } },
    el('div', { class: 'card-title' }, el('span', { class: 'card-heading', i18n: 'card.waiting' }), el('span', { class: 'card-state' })),
    question ? el('p', { class: 'question', text: question }) : null,
    Object.keys(shown).length ? fieldsView(shown) : null,
    el('p', { class: 'card-answer', hidden: true }, el('span', { class: 'answer-state' }), el('span', { class: 'note-text' })),
    el('p', { class: 'card-said muted small', hidden: true }),
    el('div', { class: 'confirm-actions' }, el('label', { class: 'note-label' }, el('span', { i18n: 'card.note' }), noteInput), reject, accept),
    el('details', { class: 'more' }, el('summary', { i18n: 'run.details' }), fieldsView(internal),
      isScalar(v) ? null : el('pre', { class: 'json', text: JSON.stringify(v, null, 2) })));
  const answer = (ok) => {
    if (app.busy || card.dataset.state !== 'pending') return;
    const text = noteInput.value.trim();
    settleCard(card, ok ? 'accepted' : 'rejected', text);
    const value = { accept: ok };
    if (text) value.note = text;
    // By id (LangGraph's map form): with several questions pending, a
    // value alone answers none of them.
    runStream({ command: { resume: q.id ? { [q.id]: value } : value } });
  };
  accept.addEventListener('click', () => answer(true));
  reject.addEventListener('click', () => answer(false));
  if (app.pendingCard && app.pendingCard !== card) settleCard(app.pendingCard, 'dismissed');
  app.pendingCard = card;
  return card;
}

// settleCard shows the card's answer: accepted or rejected (with the
// note), replied (answered by a chat message), or dismissed.
function settleCard(card, state, text = '') {
  card.dataset.state = state;
  if (state !== 'dismissed') setMsg(card.querySelector('.card-heading'), 'card.answered');
  const answer = card.querySelector('.card-answer');
  setMsg(answer.firstChild, 'card.' + state, { text });
  answer.lastChild.textContent = state !== 'replied' && text ? ` — ${text}` : '';
  answer.hidden = false;
  const run = card.closest('.run');
  if (state !== 'dismissed') {
    for (const chip of run?.querySelectorAll('.chip[data-state="waiting"]') || []) chip.dataset.state = 'done';
  }
  if (state !== 'dismissed' && run?.dataset.status === 'interrupted') {
    run.dataset.status = 'answered';
    setMsg(run.querySelector('.badge'), 'card.answered');
  }
  for (const b of card.querySelectorAll('button, input')) b.disabled = true;
  if (app.pendingCard === card) app.pendingCard = null;
}

// ---- runs ----

function setBusy(busy) {
  app.busy = busy;
  ui.send.disabled = busy;
  ui.stop.hidden = !busy;
  ui.agent.disabled = busy;
  ui.thread.disabled = busy;
  ui.newThread.disabled = busy;
  ui.copyThread.disabled = busy || !app.thread;
  for (const b of document.querySelectorAll('.history button, .card.confirm[data-state="pending"] button')) b.disabled = busy;
  if (busy) setStatus('running');
}

// runStream starts a run on the thread with body's input, resume or
// nothing (continue), and shows it as it streams.
// withLocale is a run's body with the page's language as the run's
// config.configurable.locale (zh-CN or en), for an agent whose configuration takes one
// (its status lines and replies follow it); others would refuse it.
function withLocale(body) {
  const takes = app.configSchema?.properties?.locale;
  if (!takes) return body;
  // A language tag (zh-CN, en), or the one of the agent's choices in the
  // page's language.
  const tag = languages[lang()];
  const locale = Array.isArray(takes.enum) ? takes.enum.find((x) => x === tag) ?? takes.enum.find((x) => String(x).split('-')[0] === lang()) : tag;
  if (locale == null) return body;
  const config = { ...body.config, configurable: { locale, ...body.config?.configurable } };
  return { ...body, config };
}

async function runStream(body) {
  if (app.busy || !app.thread) return;
  if (!body.command && app.pendingCard) settleCard(app.pendingCard, 'dismissed');
  const run = new Run(app.agent);
  app.run = run;
  app.abort = new AbortController();
  setBusy(true);
  try {
    const res = await fetch(`/threads/${enc(app.thread)}/runs/stream?format=ndjson`, {
      method: 'POST', headers: headers(true), signal: app.abort.signal,
      body: JSON.stringify({ assistant_id: app.agent, stream_mode: MODES, ...withLocale(body) }),
    });
    if (!res.ok) throw await apiError(res);
    for await (const ev of ndjson(res.body)) run.handle(ev);
  } catch (e) {
    if (e.name !== 'AbortError') run.fail(e.message);
  }
  run.close();
  app.abort = null;
  setBusy(false);
  await refreshThread(run);
  app.run = null;
  paint();
}

async function stopRun() {
  const run = app.run;
  if (!run?.id) {
    app.abort?.abort();
    return;
  }
  try {
    await api('POST', `/threads/${enc(app.thread)}/runs/${enc(run.id)}/cancel`);
  } catch (e) {
    note(e.message, 'error');
  }
}

// inputOf turns a message into the agent's input: a JSON object as it is,
// else the text in the input schema's (first required) string field, or
// in "input" when the schema names none.
function inputOf(text) {
  const s = text.trim();
  if (s.startsWith('{')) {
    try {
      const v = JSON.parse(s);
      if (isObject(v)) return v;
    } catch { /* plain text */ }
  }
  const props = app.schema?.properties || {};
  const strings = Object.keys(props).filter((k) => props[k]?.type === 'string');
  const req = app.schema?.required || [];
  const field = strings.find((k) => req.includes(k)) || strings[0];
  if (field) return { [field]: s };
  if (props.messages?.type === 'array') return { messages: [{ role: 'user', content: s }] };
  return { input: s };
}

async function send() {
  const text = ui.message.value.trim();
  if (!text || app.busy) return;
  try {
    await ensureThread(text);
  } catch (e) {
    note(e.message, 'error');
    return;
  }
  ui.message.value = '';
  userMessage(text);
  // A message while a question waits answers it, read as the chat API
  // reads it (a yes, a no, or asked again).
  if (app.pendingCard) await replyToCard(app.pendingCard, text);
  else await runStream({ input: inputOf(text) });
}

// replyToCard answers the waiting card with a typed reply through
// /v1/chat/completions, which reads it as the agent reads a chat reply
// (Agent.Answer, by default the consent reader: "yes", "好的" accept,
// "no", "不要" reject). The run it starts streams as chat chunks; the
// first says how the reply was read, and the card shows it. A reply that
// answers nothing starts no run: the card stays and asks again.
async function replyToCard(card, text) {
  if (app.busy || !app.thread) return;
  const run = new Run(app.agent);
  app.run = run;
  app.abort = new AbortController();
  setBusy(true);
  let started = false;
  try {
    const res = await fetch('/v1/chat/completions?format=ndjson', {
      method: 'POST', headers: headers(true), signal: app.abort.signal,
      // The page's language goes with the reply, as with a run's body.
      body: JSON.stringify(withLocale({ model: app.agent, thread_id: app.thread, stream: true, messages: [{ role: 'user', content: text }] })),
    });
    if (!res.ok) throw await apiError(res);
    run.id = res.headers.get('X-Loom-Run') || '';
    started = run.id !== '';
    if (!started) {
      // Asked again: nothing ran; the card waits for a clearer answer.
      for await (const c of ndjson(res.body)) void c;
      run.li.remove();
      askAgain(card, text);
    } else {
      for await (const c of ndjson(res.body)) {
        if (c.ext?.kind === 'answer') understood(card, c.ext.data, text);
        else run.onChat(c);
      }
      run.endCurrent();
    }
  } catch (e) {
    if (e.name !== 'AbortError') run.fail(e.message);
  }
  run.close();
  app.abort = null;
  setBusy(false);
  if (started && card.dataset.state === 'pending') settleCard(card, 'replied', text);
  await refreshThread(started ? run : null);
  app.run = null;
  paint();
}

// understood shows on the card how a typed reply was read: a yes or a no
// (with the rest of the reply as its note), or, for an agent that reads
// replies its own way, the reply itself.
function understood(card, value, text) {
  // A no that carries the reply as text is an agent reading the text
  // itself (an answer to an open question), not a refusal.
  const consent = isObject(value) && typeof value.accept === 'boolean' && (value.accept || typeof value.text !== 'string');
  if (consent) {
    settleCard(card, value.accept ? 'accepted' : 'rejected', value.note || value.reason || '');
    const said = card.querySelector('.card-said');
    said.hidden = false;
    setMsg(said, value.accept ? 'card.readYes' : 'card.readNo', { text });
  } else {
    settleCard(card, 'replied', text);
  }
  card.dataset.via = 'chat';
}

// askAgain keeps the card waiting after a reply that answers nothing,
// and says so under the reply.
function askAgain(card, text) {
  push(el('li', { class: 'note again', role: 'alert', dataset: { interrupt: card.dataset.interrupt }, i18n: ['card.again', { text }] }));
  card.dataset.asked = String(Number(card.dataset.asked || 0) + 1);
  setStatus('waiting');
  ui.message.focus();
}

// ensureThread starts a thread, titled title, when none is open.
async function ensureThread(title) {
  if (app.thread) return;
  const th = await api('POST', '/threads', { metadata: { assistant_id: app.agent, title: title.slice(0, 60) } });
  addThreadOption(th);
  setThread(th.thread_id);
}

// ---- files: fetched with the key, offered as blobs ----

// fetchBlob GETs path with the page's key: a plain link or image would
// send none.
async function fetchBlob(path, accept = '*/*') {
  const h = headers(false);
  h.Accept = accept;
  const res = await fetch(path, { headers: h });
  if (!res.ok) throw await apiError(res);
  return res.blob();
}

// saveBlob offers blob as a download named file.
function saveBlob(blob, file) {
  const url = URL.createObjectURL(blob);
  const a = el('a', { href: url, download: file });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// ---- an agent's own panel ----

// uploadFile sends file through the agent's panel (which knows where its
// uploads go), then runs the turn that uses it, with the message typed,
// if any.
async function uploadFile(file) {
  const up = app.panel?.upload;
  if (!file || app.busy || !up) return;
  const text = ui.message.value.trim();
  let sent;
  try {
    await ensureThread(text || file.name);
    sent = await up.send(file);
  } catch (e) {
    note(e.message, 'error');
    return;
  }
  ui.message.value = '';
  const li = userMessage(text);
  li.querySelector('.bubble').append(el('span', { class: 'attachment', dataset: { kind: sent.kind || '' }, i18n: ['chat.attached', { name: file.name }] }));
  if (app.pendingCard) settleCard(app.pendingCard, 'replied', text || file.name);
  const input = { ...sent.input };
  if (text) input.message = text;
  await runStream({ input });
}

// panelHost is what the page offers an agent's panel: its element maker
// and messages, the API with the page's key, files as blobs, and the
// thread shown.
const panelHost = Object.freeze({
  el, t, lang, setMsg, enc, api, headers, apiError, fetchBlob, saveBlob,
  words: addMessages,
  thread: () => app.thread,
  agent: () => app.agent,
});

// A panel's files are the server's own, under /ui/panels/.
const PANEL_PATH = /^\/ui\/panels\/[A-Za-z0-9._-]+\/[A-Za-z0-9._-]+\.(js|css)$/;

// mountPanel shows the agent's own panel, when its metadata names one: a
// module whose default export makes it from panelHost, and its style.
async function mountPanel(name) {
  const seq = ++app.panelSeq;
  app.panel?.close?.();
  app.panel = null;
  ui.panelSlot.replaceChildren();
  ui.panelSlot.hidden = true;
  for (const l of document.querySelectorAll('link[data-panel]')) l.remove();
  ui.upload.hidden = true;
  const meta = app.agents.find((a) => a.assistant_id === name)?.metadata?.panel;
  if (!meta || !PANEL_PATH.test(meta.script || '')) return;
  if (meta.style && PANEL_PATH.test(meta.style)) document.head.append(el('link', { rel: 'stylesheet', href: meta.style, dataset: { panel: name } }));
  let made;
  try {
    const mod = await import(meta.script);
    if (seq !== app.panelSeq) return;
    made = mod.default(panelHost);
  } catch (e) {
    note('note.panelFailed', 'error', { error: e.message });
    return;
  }
  app.panel = made;
  if (made.element) {
    ui.panelSlot.append(made.element);
    ui.panelSlot.hidden = false;
  }
  if (made.upload) {
    ui.upload.hidden = false;
    ui.uploadFile.accept = made.upload.accept || '';
    if (made.upload.title) {
      ui.upload.dataset.i18nTitle = made.upload.title;
      ui.upload.title = t(made.upload.title);
    }
  }
}

// refreshPanels refreshes the open agent's own panel, if it has one.
function refreshPanels() {
  return app.panel?.refresh?.() ?? null;
}

// ---- thread state and history ----

// refreshThread reads the thread's state and history; run, if given, shows
// where the thread stands.
async function refreshThread(run) {
  if (!app.thread) {
    app.head = null;
    renderHistory([]);
    setStatus('idle');
    paint();
    await refreshPanels();
    return;
  }
  try {
    const [st, hist] = await Promise.all([
      api('GET', `/threads/${enc(app.thread)}/state`),
      api('GET', `/threads/${enc(app.thread)}/history?limit=${HISTORY_LIMIT}`),
    ]);
    app.head = st;
    renderHistory(hist);
    if (run) run.outcome(st);
    const q = pendingOf(st);
    if (run?.failed) setStatus('error');
    else if (q) setStatus('waiting');
    else if (st.next?.length) setStatus('stopped');
    else if (hist.length) setStatus('done');
    else setStatus('idle');
  } catch (e) {
    note(e.message, 'error');
  }
  paint();
  await refreshPanels();
}

// paint marks the graph's nodes: running, visited in this run, waiting,
// next.
function paint() {
  if (!app.graph) return;
  const q = app.busy ? null : pendingOf(app.head);
  // In the compact view a folded node shows what its members do.
  const g = (n) => app.groupOf?.get(n) ?? n;
  const set = (s) => new Set([...(s || [])].map(g));
  app.graph.highlight({
    running: set(app.run?.running),
    visited: set(app.run?.visited),
    waiting: q ? g(q.node) : null,
    next: app.busy ? [] : (app.head?.next || []).map(g),
  });
}

function renderHistory(list) {
  const seqOf = new Map(list.map((s) => [s.checkpoint?.checkpoint_id, s.metadata?.seq]));
  ui.history.replaceChildren(...list.map((s, i) => historyRow(s, i === 0, seqOf)));
  const n = `${list.length}${list.length === HISTORY_LIMIT ? '+' : ''}`;
  if (!app.thread) setMsg(ui.historyNote, 'history.none');
  else if (list.length) setMsg(ui.historyNote, 'history.count', { n });
  else setMsg(ui.historyNote, 'history.empty');
  ui.copyThread.disabled = app.busy || !app.thread;
}

function historyRow(s, head, seqOf) {
  const m = s.metadata || {};
  const id = s.checkpoint.checkpoint_id;
  const source = m.loom_source || m.source || '';
  const waiting = pendingOf(s);
  const from = m.from ? seqOf.get(m.from) : undefined;
  const when = s.created_at ? new Date(s.created_at).toLocaleTimeString(lang() === 'zh' ? 'zh-CN' : 'en') : '';
  const dot = () => el('span', { class: 'sep', text: ' · ' });
  const sub = [s.next?.length ? el('span', { i18n: 'history.more', title: s.next.join(', ') }) : el('span', { i18n: 'history.done' })];
  if (from !== undefined) sub.push(dot(), el('span', { i18n: ['history.copyOf', { seq: from }] }));
  else if (m.from) sub.push(dot(), el('span', { i18n: 'history.copyOfOlder' }));
  if (when) sub.push(dot(), el('span', { text: when }));
  return el('li', { class: head ? 'cp head' : 'cp', dataset: { checkpoint: id, seq: m.seq, source } },
    el('div', { class: 'cp-main' },
      el('span', { class: 'seq', text: `#${m.seq}` }),
      source ? el('span', { class: 'src', title: m.node || null, i18n: t('source.' + source) === 'source.' + source ? 'history.from' : 'source.' + source }) : null,
      head ? el('span', { class: 'tag head', i18n: 'history.head' }) : null,
      waiting ? el('span', { class: 'tag waiting', i18n: 'history.waiting' }) : null),
    el('div', { class: 'cp-sub muted small' }, sub),
    el('div', { class: 'cp-actions' },
      el('button', { type: 'button', class: 'undo', disabled: head || app.busy, i18nLabel: ['history.undo.label', { seq: m.seq }],
        i18n: 'history.undo', onclick: () => undoTo(s) }),
      el('button', { type: 'button', class: 'fork', disabled: app.busy, i18nLabel: ['history.fork.label', { seq: m.seq }],
        i18n: 'history.fork', onclick: () => openFork(s) })));
}

// undoTo makes checkpoint s the head again: POST /threads/{id}/state with
// no changes over it appends a copy of it (state and pending work).
async function undoTo(s) {
  if (app.busy) return;
  const seq = s.metadata?.seq;
  try {
    await api('POST', `/threads/${enc(app.thread)}/state`, { values: {}, checkpoint_id: s.checkpoint.checkpoint_id });
  } catch (e) {
    note(e.message, 'error');
    return;
  }
  if (app.pendingCard) settleCard(app.pendingCard, 'dismissed');
  await refreshThread(new Run(['run.undo', { seq }], 'undo'));
}

function openFork(s) {
  if (app.busy) return;
  app.forkFrom = s;
  setMsg(ui.forkH, 'fork.h', { seq: `#${s.metadata?.seq}` });
  ui.forkValues.value = JSON.stringify(s.values, null, 2);
  ui.forkRaw.checked = !isObject(s.values);
  showForkMode(s.values);
  ui.forkNew.checked = false;
  ui.forkError.textContent = '';
  ui.fork.showModal();
  (ui.forkRaw.checked ? ui.forkValues : ui.forkFields.querySelector('input, select, textarea') || ui.forkRaw).focus();
}

// schemaOf is the part of the agent's state schema that describes a
// field, with a local $ref followed.
function schemaOf(name) {
  let p = app.stateSchema?.properties?.[name] || {};
  const ref = p.$ref || p.allOf?.[0]?.$ref;
  if (typeof ref === 'string' && ref.startsWith('#/')) {
    p = ref.slice(2).split('/').reduce((o, k) => o?.[k], app.stateSchema) || {};
  }
  return p;
}

// typeOf is a field's JSON type: from its schema, else from its value.
function typeOf(schema, v) {
  const ty = Array.isArray(schema.type) ? schema.type.find((x) => x !== 'null') : schema.type;
  if (ty) return ty;
  if (typeof v === 'boolean') return 'boolean';
  if (typeof v === 'number') return 'number';
  if (typeof v === 'string') return 'string';
  return 'json';
}

// forkField is one field of the fork form, typed by the state schema:
// text, a number, a switch, a choice, or JSON for what has parts.
function forkField(name, v) {
  const schema = schemaOf(name);
  const ty = typeOf(schema, v);
  const id = 'fork-f-' + name.replace(/[^A-Za-z0-9_-]/g, '_');
  let input;
  if (Array.isArray(schema.enum)) {
    input = el('select', { id }, schema.enum.map((x) => el('option', { value: JSON.stringify(x), text: String(x) })));
    input.value = JSON.stringify(v ?? schema.enum[0]);
  } else if (ty === 'boolean') {
    input = el('input', { id, type: 'checkbox' });
    input.checked = !!v;
  } else if (ty === 'integer' || ty === 'number') {
    input = el('input', { id, type: 'number', step: ty === 'integer' ? '1' : 'any', value: v ?? '' });
  } else if (ty === 'string') {
    const long = typeof v === 'string' && (v.length > 60 || v.includes('\n'));
    input = long ? el('textarea', { id, rows: 3 }) : el('input', { id, type: 'text' });
    input.value = v ?? '';
  } else {
    input = el('textarea', { id, rows: 4, spellcheck: 'false', class: 'json' });
    input.value = v === undefined ? '' : JSON.stringify(v, null, 2);
  }
  input.dataset.field = name;
  input.dataset.type = Array.isArray(schema.enum) ? 'enum' : ty;
  const label = ['object', 'array', 'json'].includes(input.dataset.type)
    ? el('label', { for: id, i18n: ['fork.field.json', { name: fieldName(name) }] })
    : el('label', { for: id, field: name });
  if (schema.description) label.title = schema.description;
  return el('div', { class: 'fork-field', dataset: { type: input.dataset.type } }, label, input);
}

// showForkMode shows the fork's state as a form of its fields, or as
// raw JSON.
function showForkMode(values) {
  ui.forkRawBox.hidden = !ui.forkRaw.checked;
  ui.forkFields.hidden = ui.forkRaw.checked;
  if (ui.forkRaw.checked) return;
  const names = [...new Set([...Object.keys(app.stateSchema?.properties || {}), ...Object.keys(values || {})])];
  ui.forkFields.replaceChildren(...(names.length ? names.map((n) => forkField(n, values?.[n]))
    : [el('p', { class: 'muted small', i18n: 'fork.field.none' })]));
}

// formValues reads the fork form over base: each field as its type says.
function formValues(base) {
  const out = { ...base };
  for (const input of ui.forkFields.querySelectorAll('[data-field]')) {
    const name = input.dataset.field;
    switch (input.dataset.type) {
      case 'boolean': out[name] = input.checked; break;
      case 'integer': case 'number':
        if (input.value === '') delete out[name];
        else out[name] = Number(input.value);
        break;
      case 'enum': out[name] = JSON.parse(input.value); break;
      case 'string': out[name] = input.value; break;
      default:
        if (input.value.trim() === '') { delete out[name]; break; }
        try {
          out[name] = JSON.parse(input.value);
        } catch (err) {
          throw new Error(t('fork.field.bad', { name: fieldName(name), error: err.message }));
        }
    }
  }
  return out;
}

// forkModeChanged carries the edits across when the form switches
// between fields and raw JSON.
function forkModeChanged() {
  ui.forkError.textContent = '';
  if (ui.forkRaw.checked) {
    try {
      ui.forkValues.value = JSON.stringify(formValues(app.forkFrom.values), null, 2);
    } catch (err) {
      ui.forkRaw.checked = false;
      ui.forkError.textContent = err.message;
      return;
    }
    showForkMode();
    return;
  }
  let values;
  try {
    values = JSON.parse(ui.forkValues.value);
    if (!isObject(values)) throw new Error(t('fork.mustBeObject'));
  } catch (err) {
    ui.forkRaw.checked = true;
    ui.forkError.textContent = t('fork.notObject', { error: err.message });
    return;
  }
  showForkMode(values);
}

// fork writes the edited state over the chosen checkpoint as the new head:
// POST /threads/{id}/state with the values and the checkpoint; or, to a new
// thread, POST /threads/{id}/copy with them, and opens that thread.
async function fork(e) {
  e.preventDefault();
  const s = app.forkFrom;
  const seq = s.metadata?.seq;
  let values;
  try {
    if (!ui.forkRaw.checked) {
      values = formValues(s.values);
    } else {
      try {
        values = JSON.parse(ui.forkValues.value);
      } catch (err) {
        throw new Error(t('fork.notObject', { error: err.message }));
      }
      if (!isObject(values)) throw new Error(t('fork.notObject', { error: t('fork.mustBeObject') }));
    }
  } catch (err) {
    ui.forkError.textContent = err.message;
    return;
  }
  if (ui.forkNew.checked) {
    try {
      const th = await api('POST', `/threads/${enc(app.thread)}/copy`, { values, checkpoint_id: s.checkpoint.checkpoint_id });
      ui.fork.close();
      addThreadOption(th);
      await openThread(th.thread_id, ['note.forked', { seq, id: th.thread_id.slice(-8) }]);
    } catch (err) {
      ui.forkError.textContent = err.message;
    }
    return;
  }
  try {
    await api('POST', `/threads/${enc(app.thread)}/state`, { values, checkpoint_id: s.checkpoint.checkpoint_id });
  } catch (err) {
    ui.forkError.textContent = err.message;
    return;
  }
  ui.fork.close();
  if (app.pendingCard) settleCard(app.pendingCard, 'dismissed');
  await refreshThread(new Run(['run.fork', { seq }], 'fork'));
}

// copyThread copies the thread's head to a new thread and opens it.
async function copyThread() {
  if (app.busy || !app.thread) return;
  try {
    const th = await api('POST', `/threads/${enc(app.thread)}/copy`);
    addThreadOption(th);
    await openThread(th.thread_id, ['note.copied', { id: th.thread_id.slice(-8) }]);
  } catch (e) {
    note(e.message, 'error');
  }
}

// ---- agents and threads ----

// TITLE_KEYS are the fields of a state that name what a thread is about.
const TITLE_KEYS = ['title', 'question', 'goal', 'request', 'topic', 'input', 'message', 'query', 'prompt'];

// firstWords is text's first line, cut to n characters.
function firstWords(text, n = 48) {
  const line = String(text).trim().split('\n')[0].trim();
  return line.length > n ? line.slice(0, n - 1) + '…' : line;
}

// threadTitle is what a thread is about: the title the page gave it,
// else the first thing the person said in its messages (a chat, a
// session), else its state's title or question (a thread made over the
// API).
function threadTitle(th) {
  if (th.metadata?.title) return firstWords(th.metadata.title);
  const v = isObject(th.values) ? th.values : {};
  for (const m of Array.isArray(v.messages) ? v.messages : []) {
    const who = m?.role ?? m?.type;
    const text = typeof m?.content === 'string' ? m.content : Array.isArray(m?.content) ? m.content.map((c) => c?.text || '').join(' ') : '';
    if ((who === 'user' || who === 'human') && text.trim()) return firstWords(text);
  }
  for (const k of TITLE_KEYS) if (typeof v[k] === 'string' && v[k].trim()) return firstWords(v[k]);
  return '';
}

// threadLabel is a thread's line in the menu: its title and when it last
// changed (or, untitled, its id's end).
function threadLabel(th) {
  const title = threadTitle(th);
  const at = th.updated_at || th.created_at;
  const when = at ? new Date(at).toLocaleString(lang() === 'zh' ? 'zh-CN' : 'en', { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' }) : '';
  return t('thread.made', { title: title || `${t('thread.untitled')} ${th.thread_id.slice(-6)}`, when: when || th.thread_id.slice(-6) });
}

function threadOption(th) {
  const o = el('option', { value: th.thread_id, text: threadLabel(th), dataset: { title: threadTitle(th) } });
  o.thread = th;
  return o;
}

function addThreadOption(th) {
  if ([...ui.thread.options].some((o) => o.value === th.thread_id)) return;
  ui.thread.insertBefore(threadOption(th), ui.thread.options[1] || null);
}

function setThread(id) {
  app.thread = id;
  ui.thread.value = id;
  document.body.dataset.thread = id;
  localStorage.setItem('loom.thread.' + app.agent, id);
}

// openThread shows thread id (none: a new conversation), with message, a
// message key and its params, as the timeline's first line.
async function openThread(id, message) {
  setThread(id);
  ui.timeline.replaceChildren();
  app.pendingCard = null;
  if (!id) {
    note('note.newConversation', '', { agent: app.agent });
    await refreshThread(null);
    return;
  }
  const [key, params] = message || ['note.thread', { id: id.slice(-8) }];
  note(key, '', params);
  await refreshThread(new Run(['run.saved'], 'saved'));
}

// THREADS is how many of the key's threads, most recently changed
// first, the menu looks through.
const THREADS = 100;

// agentOf is the agent a thread's metadata names, if any.
const agentOf = (th) => th.metadata?.assistant_id ?? th.metadata?.graph_id ?? null;

// loadThreads lists the key's threads of the chosen agent, wherever they
// were made: the page names the agent in the metadata of the threads it
// starts; for the others (made over the API, by a chat, an upload or a
// session) the thread's runs say which agent ran on it.
async function loadThreads() {
  const agent = app.agent;
  ui.thread.replaceChildren(el('option', { value: '', i18n: 'bar.newThread' }));
  let list;
  try {
    list = await api('POST', '/threads/search', { limit: THREADS, sort_by: 'updated_at', sort_order: 'desc' });
  } catch (e) {
    note(e.message, 'error');
    return;
  }
  const ofAgent = await Promise.all(list.map(async (th) => {
    const named = agentOf(th);
    if (named) return named === agent;
    try {
      const runs = await api('GET', `/threads/${enc(th.thread_id)}/runs?limit=1`);
      return runs?.[0]?.assistant_id === agent;
    } catch {
      return false;
    }
  }));
  if (agent !== app.agent) return;
  for (const [i, th] of list.entries()) if (ofAgent[i]) ui.thread.append(threadOption(th));
}

// CJK is a character of Chinese, Japanese or Korean.
const CJK = /[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7a3]/;

// inPageLanguage says whether text an agent wrote reads in the page's
// language: English has no CJK characters; Chinese has them and no
// lowercase English words (names such as SQL or A123 may stay).
const inPageLanguage = (text) => (lang() === 'zh' ? CJK.test(text) && !/\b[a-z]{2,}\b/.test(text) : !CJK.test(text));

// ownWords is what an agent says of itself in the page's language: its
// metadata's description_zh or description_en (or descriptions.zh), else
// text when it is in that language, else null.
function ownWords(meta, key, text) {
  const own = meta?.[`${key}_${lang()}`] ?? meta?.[`${key}s`]?.[lang()];
  if (typeof own === 'string' && own) return own;
  return text && inPageLanguage(text) ? text : null;
}

// showDescription shows the agent's description in the page's language;
// one the agent gives only in the other language is shown marked as
// such (lang), so that it reads as the agent's words, not the page's.
function showDescription() {
  const a = app.agents.find((x) => x.assistant_id === app.agent);
  const text = a?.description || '';
  const own = ownWords(a?.metadata, 'description', text);
  ui.agentDesc.textContent = own ?? text;
  ui.agentDesc.title = own ?? text;
  if (own == null && text) {
    ui.agentDesc.lang = CJK.test(text) ? 'zh-CN' : 'en';
    ui.agentDesc.dataset.content = 'agent';
  } else {
    ui.agentDesc.removeAttribute('lang');
    delete ui.agentDesc.dataset.content;
  }
}

// showPlaceholder invites a message to the agent, with the hint its input
// schema gives when that hint is in the page's language.
function showPlaceholder() {
  const props = app.schema?.properties || {};
  const p = Object.values(props).find((x) => x?.description);
  const hint = p ? ownWords(p, 'x-description', p.description) : null;
  ui.message.dataset.i18nPlaceholder = hint ? 'chat.placeholderHint' : 'chat.placeholder';
  ui.message.dataset.i18nArgs = JSON.stringify({ agent: app.agent, hint });
  ui.message.placeholder = t(ui.message.dataset.i18nPlaceholder, { agent: app.agent, hint });
}

// drawn draws the agent's graph in the page's language.
function drawn() {
  if (!app.spec) return;
  const folded = ui.compactView.checked ? compact(app.spec) : null;
  app.groupOf = null;
  if (folded) {
    app.groupOf = new Map();
    for (const [g, members] of folded.groups) for (const m of members) app.groupOf.set(m, g);
  }
  app.graph = drawGraph(ui.svg, folded ? folded.spec : app.spec, t);
  ui.graphWrap.dataset.compact = folded ? 'true' : 'false';
  app.zoom.fit();
  paint();
}

async function selectAgent(name) {
  app.agent = name;
  ui.agent.value = name;
  localStorage.setItem('loom.agent', name);
  showDescription();
  await mountPanel(name);
  try {
    const [schemas, graph] = await Promise.all([
      api('GET', `/assistants/${enc(name)}/schemas`),
      api('GET', `/assistants/${enc(name)}/graph`),
    ]);
    app.schema = schemas.input_schema;
    app.configSchema = schemas.config_schema;
    app.stateSchema = schemas.state_schema;
    app.mermaid = graph.mermaid || '';
    ui.mermaid.textContent = app.mermaid;
    app.spec = { name, ...graph.spec };
    drawn();
  } catch (e) {
    note(e.message, 'error');
  }
  showPlaceholder();
  await loadThreads();
  const saved = localStorage.getItem('loom.thread.' + name) || '';
  const known = [...ui.thread.options].some((o) => o.value === saved);
  await openThread(known ? saved : '');
  document.body.dataset.agent = name;
}

async function copyMermaid() {
  try {
    await navigator.clipboard.writeText(app.mermaid);
    setMsg(ui.graphMsg, 'graph.copied');
  } catch {
    const d = ui.mermaid.closest('details');
    d.open = true;
    getSelection().selectAllChildren(ui.mermaid);
    setMsg(ui.graphMsg, 'graph.copyDenied');
  }
}

function downloadMermaid() {
  const file = `${app.agent || 'graph'}.mmd`;
  saveBlob(new Blob([app.mermaid], { type: 'text/plain' }), file);
  setMsg(ui.graphMsg, 'graph.downloaded', { file });
}

// switchLang turns the page to the other language and redraws the graph,
// whose labels are measured in it.
function switchLang() {
  setLang(lang() === 'zh' ? 'en' : 'zh');
  showDescription();
  showPlaceholder();
  for (const o of ui.thread.options) if (o.thread) o.textContent = threadLabel(o.thread);
  drawn();
}

async function init() {
  translate();
  ui.lang.addEventListener('click', switchLang);
  ui.composer.addEventListener('submit', (e) => { e.preventDefault(); send(); });
  ui.message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); send(); }
  });
  ui.stop.addEventListener('click', stopRun);
  ui.agent.addEventListener('change', () => selectAgent(ui.agent.value));
  ui.thread.addEventListener('change', () => openThread(ui.thread.value));
  ui.newThread.addEventListener('click', () => openThread(''));
  ui.copyThread.addEventListener('click', copyThread);
  ui.refresh.addEventListener('click', () => refreshThread(null));
  app.zoom = zoomable(ui.graphWrap, ui.svg);
  ui.zoomIn.addEventListener('click', () => app.zoom.zoom(1.25));
  ui.zoomOut.addEventListener('click', () => app.zoom.zoom(0.8));
  ui.zoomFit.addEventListener('click', () => app.zoom.fit());
  ui.compactView.checked = localStorage.getItem('loom.compact') === 'true';
  ui.compactView.addEventListener('change', () => {
    localStorage.setItem('loom.compact', ui.compactView.checked);
    drawn();
  });
  ui.mermaidCopy.addEventListener('click', copyMermaid);
  ui.mermaidDownload.addEventListener('click', downloadMermaid);
  ui.forkForm.addEventListener('submit', fork);
  ui.forkRaw.addEventListener('change', forkModeChanged);
  ui.forkCancel.addEventListener('click', () => ui.fork.close());
  ui.upload.addEventListener('click', () => ui.uploadFile.click());
  ui.uploadFile.addEventListener('change', () => {
    const f = ui.uploadFile.files[0];
    ui.uploadFile.value = '';
    uploadFile(f);
  });
  ui.key.value = app.key;
  ui.keyForm.addEventListener('submit', (e) => {
    e.preventDefault();
    app.key = ui.key.value.trim();
    if (app.key) localStorage.setItem('loom.apiKey', app.key);
    else localStorage.removeItem('loom.apiKey');
    ui.settings.open = false;
    load();
  });
  ui.keyClear.addEventListener('click', () => {
    app.key = '';
    ui.key.value = '';
    localStorage.removeItem('loom.apiKey');
  });
  await load();
}

// smallest is the agent with the smallest graph, to open on: a first
// look at a few steps, not the largest agent's.
async function smallest(agents) {
  const sizes = await Promise.all(agents.map((a) => api('GET', `/assistants/${enc(a.assistant_id)}/graph`)
    .then((g) => g.spec?.nodes?.length ?? Infinity, () => Infinity)));
  let best = 0;
  sizes.forEach((n, i) => { if (n < sizes[best]) best = i; });
  return agents[best]?.assistant_id;
}

async function load() {
  try {
    app.agents = await api('POST', '/assistants/search', { limit: 100 });
  } catch (e) {
    note('note.noAgents', 'error', { error: e.message });
    return;
  }
  ui.agent.replaceChildren(...app.agents.map((a) => el('option', { value: a.assistant_id, text: a.name })));
  const saved = localStorage.getItem('loom.agent');
  const name = app.agents.some((a) => a.assistant_id === saved) ? saved : await smallest(app.agents);
  if (name) await selectAgent(name);
  document.body.dataset.ready = 'true';
}

init();
