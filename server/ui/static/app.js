// app.js is Loom's web page. It uses the server's LangGraph-compatible API
// (see server/README.md): /assistants for agents and graphs, /threads for
// threads, state and history, and /threads/{id}/runs/stream (NDJSON) for
// runs, with the stream modes events (nodes starting and ending, model
// text and reasoning), custom (status lines, tool calls and results, the
// agent's own events), updates (interrupts) and values (states).

import { drawGraph } from './graph.js';

const MODES = ['events', 'custom', 'updates', 'values'];
const HISTORY_LIMIT = 50;

const $ = (sel) => document.querySelector(sel);
const ui = {
  agent: $('#agent'), agentDesc: $('#agent-desc'), thread: $('#thread'), newThread: $('#new-thread'),
  status: $('#run-status'), settings: $('#settings'), keyForm: $('#key-form'), key: $('#api-key'),
  keyClear: $('#key-clear'), timeline: $('#timeline'), composer: $('#composer'), message: $('#message'),
  send: $('#send'), stop: $('#stop'), svg: $('#graph-svg'), mermaid: $('#mermaid'),
  mermaidCopy: $('#mermaid-copy'), mermaidDownload: $('#mermaid-download'), graphMsg: $('#graph-msg'),
  history: $('#history'), historyNote: $('#history-note'), copyThread: $('#copy-thread'), refresh: $('#refresh'),
  fork: $('#fork-dialog'), forkForm: $('#fork-form'), forkSeq: $('#fork-seq'), forkValues: $('#fork-values'),
  forkError: $('#fork-error'), forkCancel: $('#fork-cancel'), forkNew: $('#fork-new'),
};

const app = {
  key: localStorage.getItem('loom.apiKey') || '',
  agents: [],
  agent: '',          // assistant id
  schema: null,       // the agent's input schema
  graph: null,        // {highlight} of the drawn graph
  mermaid: '',
  thread: '',         // thread id
  head: null,         // the thread's state
  busy: false,
  run: null,          // the Run being streamed
  abort: null,        // its AbortController
  pendingCard: null,  // the confirm card that waits for an answer
  forkFrom: null,     // the checkpoint the fork dialog edits
};

// ---- small helpers ----

function el(tag, attrs = {}, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null || v === false) continue;
    if (k === 'class') e.className = v;
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
    message += ' — paste an API key under "API key".';
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

function note(text, cls = '') {
  return push(el('li', { class: 'note ' + cls, text }));
}

function userMessage(text) {
  return push(el('li', { class: 'msg user' }, el('div', { class: 'who', text: 'You' }), el('div', { class: 'bubble', text })));
}

function setStatus(kind, text) {
  document.body.dataset.run = kind;
  ui.status.dataset.status = kind;
  ui.status.textContent = text;
}

// valueView shows one value of a state or question.
function valueView(v) {
  if (typeof v === 'boolean') return el('span', { class: 'bool ' + (v ? 'yes' : 'no'), text: v ? 'yes' : 'no' });
  if (Array.isArray(v) && v.every((x) => x === null || typeof x !== 'object')) {
    return el('ul', { class: 'list' }, v.map((x) => el('li', { text: String(x) })));
  }
  if (v !== null && typeof v === 'object') return el('pre', { class: 'json', text: JSON.stringify(v, null, 2) });
  return el('span', { class: 'value', text: String(v) });
}

function isEmpty(v) {
  return v == null || v === '' || (Array.isArray(v) && !v.length) || (isObject(v) && !Object.keys(v).length);
}

// fieldsView shows an object's fields as a definition list.
function fieldsView(obj, skip = []) {
  const dl = el('dl', { class: 'kv' });
  for (const [k, v] of Object.entries(obj)) {
    if (skip.includes(k) || isEmpty(v)) continue;
    dl.append(el('dt', { text: k.replaceAll('_', ' ') }), el('dd', {}, valueView(v)));
  }
  return dl;
}

// ---- a run in the timeline ----

// Run shows one run (or one restored state) in the timeline: the nodes it
// went through, reasoning, text, status, tool calls and results, confirm
// cards, and how it ended.
class Run {
  constructor(title, kind = 'run') {
    this.kind = kind;
    this.badge = el('span', { class: 'badge', text: kind === 'run' ? 'running' : '' });
    this.body = el('div', { class: 'run-body' });
    this.li = push(el('li', { class: 'run', dataset: { status: kind === 'run' ? 'running' : 'restored', kind } },
      el('div', { class: 'run-head' }, el('span', { class: 'who', text: title }), this.badge), this.body));
    this.trail = null;        // the list of node chips being filled
    this.chips = new Map();   // node:step → chip
    this.reasoning = new Map(); // node:step → <details>
    this.texts = new Map();   // message id → bubble
    this.statusLine = null;
    this.running = new Set();
    this.visited = new Set();
    this.interrupts = new Set();
    this.failed = false;
    this.id = '';
  }

  add(node) {
    this.trail = null;
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
      this.trail = el('ol', { class: 'trail', 'aria-label': 'Steps' });
      this.body.append(this.trail);
    }
    const chip = el('li', { class: 'chip', dataset: { node, state: 'running' }, text: node });
    this.trail.append(chip);
    this.chips.set(key, chip);
    this.running.add(node);
    this.lastNode = node;
    paint();
    scrollDown();
  }

  nodeEnd(node, key, ms) {
    const chip = this.chips.get(key);
    if (chip) {
      chip.dataset.state = 'done';
      if (ms != null) chip.title = `${node}: ${ms} ms`;
    }
    this.fold(key);
    this.running.delete(node);
    this.visited.add(node);
    paint();
  }

  reason(key, node, text) {
    let d = this.reasoning.get(key);
    if (!d) {
      d = el('details', { class: 'reasoning', open: true, dataset: { state: 'streaming' } },
        el('summary', { text: `Reasoning · ${node}` }), el('div', { class: 'reasoning-text' }));
      this.reasoning.set(key, d);
      this.add(d);
    }
    d.lastChild.textContent += text;
    scrollDown();
  }

  fold(key) {
    const d = this.reasoning.get(key);
    if (!d || d.dataset.state === 'done') return;
    d.open = false;
    d.dataset.state = 'done';
    const words = d.lastChild.textContent.trim().split(/\s+/).filter(Boolean).length;
    d.firstChild.textContent += ` · ${words} word${words === 1 ? '' : 's'}`;
  }

  text(id, piece) {
    let b = this.texts.get(id);
    if (!b) {
      b = el('div', { class: 'bubble assistant' });
      this.texts.set(id, b);
      this.add(b);
    }
    b.textContent += piece;
    scrollDown();
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
      case 'tool_result': {
        const call = d.kind === 'tool_call';
        const name = isObject(data) ? (data.name || data.tool || '') : '';
        let shown = data;
        if (isObject(data)) {
          const k = call ? ['arguments', 'args', 'input'] : ['result', 'output', 'content'];
          const found = k.find((x) => x in data);
          if (found) shown = data[found];
        }
        this.add(el('div', { class: `card tool ${call ? 'tool-call' : 'tool-result'}`, dataset: { node: d.node } },
          el('div', { class: 'card-title' }, el('span', { class: 'icon', 'aria-hidden': 'true', text: call ? '→' : '←' }),
            call ? 'Tool call ' : 'Tool result ', name ? el('code', { text: name }) : null),
          typeof shown === 'string' ? el('p', { class: 'tool-text', text: shown })
            : el('pre', { class: 'json', text: JSON.stringify(shown, null, 2) })));
        break;
      }
      default:
        this.add(el('div', { class: 'card event', dataset: { kind: d.kind } },
          el('div', { class: 'card-title', text: String(d.kind).replaceAll('_', ' ') }),
          typeof data === 'string' ? el('p', { text: data }) : el('pre', { class: 'json', text: JSON.stringify(data, null, 2) })));
    }
  }

  // confirm shows a card for question q ({id, value}) asked by node.
  confirm(q, node) {
    if (this.interrupts.has(q.id)) return;
    this.interrupts.add(q.id);
    for (const chip of this.chips.values()) {
      if (chip.dataset.node === node && chip.dataset.state === 'running') chip.dataset.state = 'waiting';
    }
    this.add(confirmCard(q, node));
    this.setBadge('interrupted', 'waiting for you');
  }

  fail(message) {
    this.failed = true;
    this.add(el('div', { class: 'card error', role: 'alert' }, el('div', { class: 'card-title', text: 'Error' }),
      el('p', { text: message })));
    this.setBadge('error', 'failed');
  }

  // close ends the stream's part: reasoning folds, unfinished steps stop.
  close() {
    for (const key of this.reasoning.keys()) this.fold(key);
    for (const chip of this.chips.values()) if (chip.dataset.state === 'running') chip.dataset.state = 'stopped';
    this.running.clear();
    if (this.statusLine) this.statusLine.classList.add('done');
  }

  setBadge(status, text) {
    this.li.dataset.status = status;
    this.badge.textContent = text;
  }

  // outcome shows where the thread stands after the run: a question, the
  // final state, or work left to continue.
  outcome(st) {
    const q = pendingOf(st);
    if (this.failed) return;
    if (!st.checkpoint) {
      this.setBadge('idle', 'no state yet');
    } else if (q) {
      this.confirm(q, q.node);
      this.setBadge('interrupted', 'waiting for you');
    } else if (!st.next?.length) {
      const title = this.kind === 'run' ? 'Finished' : 'State';
      const view = isObject(st.values) ? fieldsView(st.values) : valueView(st.values);
      // An agent that says what it did (loom_reply) says it in a bubble,
      // unless it streamed its text already; its state folds away.
      if (st.loom_reply && !this.texts.size) this.add(el('div', { class: 'bubble assistant reply', text: st.loom_reply }));
      this.add(el('div', { class: 'card result', dataset: { status: 'done' } },
        el('div', { class: 'card-title', text: title }),
        st.loom_reply ? el('details', { class: 'state' }, el('summary', { text: 'State' }), view) : view));
      this.setBadge('done', this.kind === 'run' ? 'finished' : 'restored');
    } else {
      this.add(el('div', { class: 'card next' },
        el('p', { text: `The thread goes on from ${st.next.join(', ')}.` }),
        el('button', { type: 'button', class: 'primary continue', onclick: (e) => { e.target.disabled = true; runStream({}); } }, 'Continue')));
      this.setBadge('stopped', this.kind === 'run' ? 'stopped' : 'restored');
    }
  }
}

// confirmCard is a question with accept and reject.
function confirmCard(q, node) {
  const v = q.value;
  const parts = [];
  let skip = [];
  if (typeof v === 'string') {
    parts.push(el('p', { class: 'question', text: v }));
  } else if (isObject(v)) {
    const qk = ['summary', 'question', 'message', 'prompt'].find((k) => typeof v[k] === 'string');
    if (qk) {
      parts.push(el('p', { class: 'question', text: v[qk] }));
      skip = [qk];
    }
    parts.push(fieldsView(v, skip));
  } else {
    parts.push(el('pre', { class: 'json', text: JSON.stringify(v, null, 2) }));
  }
  const noteInput = el('input', { type: 'text', class: 'note-input', placeholder: 'optional', 'aria-label': 'Note' });
  const accept = el('button', { type: 'button', class: 'primary accept', disabled: app.busy, text: 'Accept' });
  const reject = el('button', { type: 'button', class: 'reject', disabled: app.busy, text: 'Reject' });
  const state = el('span', { class: 'card-state', text: '' });
  const card = el('div', { class: 'card confirm', role: 'group', 'aria-label': 'Confirm', dataset: { state: 'pending', interrupt: q.id, node: node || '' } },
    el('div', { class: 'card-title' }, el('span', { text: 'Waiting for you' }), node ? el('code', { text: node }) : null, state),
    parts,
    el('div', { class: 'confirm-actions' }, el('label', { class: 'note-label' }, 'Note ', noteInput), reject, accept));
  const answer = (ok) => {
    if (app.busy || card.dataset.state !== 'pending') return;
    const text = noteInput.value.trim();
    settleCard(card, ok ? 'accepted' : 'rejected');
    userMessage((ok ? 'Accepted' : 'Rejected') + (text ? ` — ${text}` : ''));
    const value = { accept: ok };
    if (text) value.note = text;
    runStream({ command: { resume: value } });
  };
  accept.addEventListener('click', () => answer(true));
  reject.addEventListener('click', () => answer(false));
  if (app.pendingCard && app.pendingCard !== card) settleCard(app.pendingCard, 'dismissed');
  app.pendingCard = card;
  return card;
}

const cardStates = { accepted: 'Accepted', rejected: 'Rejected', dismissed: 'No longer pending' };

function settleCard(card, state) {
  card.dataset.state = state;
  card.querySelector('.card-state').textContent = cardStates[state] || state;
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
  if (busy) setStatus('running', 'running');
}

// runStream starts a run on the thread with body's input, resume or
// nothing (continue), and shows it as it streams.
async function runStream(body, title) {
  if (app.busy || !app.thread) return;
  if (!body.command && app.pendingCard) settleCard(app.pendingCard, 'dismissed');
  const run = new Run(title || app.agent);
  app.run = run;
  app.abort = new AbortController();
  setBusy(true);
  try {
    const res = await fetch(`/threads/${enc(app.thread)}/runs/stream?format=ndjson`, {
      method: 'POST', headers: headers(true), signal: app.abort.signal,
      body: JSON.stringify({ assistant_id: app.agent, stream_mode: MODES, ...body }),
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
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t);
      if (isObject(v)) return v;
    } catch { /* plain text */ }
  }
  const props = app.schema?.properties || {};
  const strings = Object.keys(props).filter((k) => props[k]?.type === 'string');
  const req = app.schema?.required || [];
  const field = strings.find((k) => req.includes(k)) || strings[0];
  if (field) return { [field]: t };
  if (props.messages?.type === 'array') return { messages: [{ role: 'user', content: t }] };
  return { input: t };
}

async function send() {
  const text = ui.message.value;
  if (!text.trim() || app.busy) return;
  try {
    if (!app.thread) {
      const t = await api('POST', '/threads', { metadata: { assistant_id: app.agent, title: text.trim().slice(0, 60) } });
      addThreadOption(t);
      setThread(t.thread_id);
    }
  } catch (e) {
    note(e.message, 'error');
    return;
  }
  ui.message.value = '';
  userMessage(text.trim());
  await runStream({ input: inputOf(text) });
}

// ---- thread state and history ----

// refreshThread reads the thread's state and history; run, if given, shows
// where the thread stands.
async function refreshThread(run) {
  if (!app.thread) {
    app.head = null;
    renderHistory([]);
    setStatus('idle', 'idle');
    paint();
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
    if (run?.failed) setStatus('error', 'failed');
    else if (q) setStatus('waiting', 'waiting for you');
    else if (st.next?.length) setStatus('stopped', 'stopped');
    else if (hist.length) setStatus('done', 'finished');
    else setStatus('idle', 'idle');
  } catch (e) {
    note(e.message, 'error');
  }
  paint();
}

// paint marks the graph's nodes: running, visited in this run, waiting,
// next.
function paint() {
  if (!app.graph) return;
  const q = app.busy ? null : pendingOf(app.head);
  app.graph.highlight({
    running: app.run ? app.run.running : new Set(),
    visited: app.run ? app.run.visited : new Set(),
    waiting: q ? q.node : null,
    next: app.busy ? [] : app.head?.next || [],
  });
}

function renderHistory(list) {
  const seqOf = new Map(list.map((s) => [s.checkpoint?.checkpoint_id, s.metadata?.seq]));
  ui.history.replaceChildren(...list.map((s, i) => historyRow(s, i === 0, seqOf)));
  ui.historyNote.textContent = !app.thread ? 'No thread yet: send a message to start one.'
    : list.length ? `${list.length}${list.length === HISTORY_LIMIT ? '+' : ''} checkpoints, newest first. Undo makes an older one the head again (as a new checkpoint); fork does so with edits.`
      : 'No checkpoints yet.';
  ui.copyThread.disabled = app.busy || !app.thread;
}

function historyRow(s, head, seqOf) {
  const m = s.metadata || {};
  const id = s.checkpoint.checkpoint_id;
  const source = m.loom_source || m.source || '';
  const waiting = pendingOf(s);
  const from = m.from ? seqOf.get(m.from) : undefined;
  const when = s.created_at ? new Date(s.created_at).toLocaleTimeString() : '';
  const next = s.next?.length ? `next: ${s.next.join(', ')}` : 'done';
  return el('li', { class: head ? 'cp head' : 'cp', dataset: { checkpoint: id, seq: m.seq, source } },
    el('div', { class: 'cp-main' },
      el('span', { class: 'seq', text: `#${m.seq}` }),
      el('span', { class: 'src', text: source }),
      m.node ? el('code', { text: m.node }) : null,
      head ? el('span', { class: 'tag head', text: 'head' }) : null,
      waiting ? el('span', { class: 'tag waiting', text: 'waiting' }) : null),
    el('div', { class: 'cp-sub muted small',
      text: [next, from !== undefined ? `copy of #${from}` : m.from ? 'copy of an older checkpoint' : '', when].filter(Boolean).join(' · ') }),
    el('div', { class: 'cp-actions' },
      el('button', { type: 'button', class: 'undo', disabled: head || app.busy, 'aria-label': `Undo to checkpoint #${m.seq}`,
        onclick: () => undoTo(s) }, 'Undo to here'),
      el('button', { type: 'button', class: 'fork', disabled: app.busy, 'aria-label': `Fork from checkpoint #${m.seq}`,
        onclick: () => openFork(s) }, 'Fork…')));
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
  await refreshThread(new Run(`Undo to checkpoint #${seq}`, 'undo'));
}

function openFork(s) {
  if (app.busy) return;
  app.forkFrom = s;
  ui.forkSeq.textContent = `#${s.metadata?.seq}`;
  ui.forkValues.value = JSON.stringify(s.values, null, 2);
  ui.forkNew.checked = false;
  ui.forkError.textContent = '';
  ui.fork.showModal();
  ui.forkValues.focus();
}

// fork writes the edited state over the chosen checkpoint as the new head:
// POST /threads/{id}/state with the values and the checkpoint; or, to a new
// thread, POST /threads/{id}/copy with them, and opens that thread.
async function fork(e) {
  e.preventDefault();
  const s = app.forkFrom;
  let values;
  try {
    values = JSON.parse(ui.forkValues.value);
    if (!isObject(values)) throw new Error('the state must be a JSON object');
  } catch (err) {
    ui.forkError.textContent = `Not a JSON object: ${err.message}`;
    return;
  }
  if (ui.forkNew.checked) {
    try {
      const t = await api('POST', `/threads/${enc(app.thread)}/copy`, { values, checkpoint_id: s.checkpoint.checkpoint_id });
      ui.fork.close();
      addThreadOption(t);
      await openThread(t.thread_id, `Forked checkpoint #${s.metadata?.seq} to a new thread ${t.thread_id.slice(-8)}.`);
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
  await refreshThread(new Run(`Fork from checkpoint #${s.metadata?.seq}`, 'fork'));
}

// copyThread copies the thread's head to a new thread and opens it.
async function copyThread() {
  if (app.busy || !app.thread) return;
  try {
    const t = await api('POST', `/threads/${enc(app.thread)}/copy`);
    addThreadOption(t);
    await openThread(t.thread_id, `Copied to a new thread ${t.thread_id.slice(-8)}.`);
  } catch (e) {
    note(e.message, 'error');
  }
}

// ---- agents and threads ----

function threadLabel(t) {
  const title = t.metadata?.title || 'thread';
  return `${title} · ${t.thread_id.slice(-6)}`;
}

function addThreadOption(t) {
  if ([...ui.thread.options].some((o) => o.value === t.thread_id)) return;
  ui.thread.insertBefore(el('option', { value: t.thread_id, text: threadLabel(t) }), ui.thread.options[1] || null);
}

function setThread(id) {
  app.thread = id;
  ui.thread.value = id;
  document.body.dataset.thread = id;
  localStorage.setItem('loom.thread.' + app.agent, id);
}

async function openThread(id, message) {
  setThread(id);
  ui.timeline.replaceChildren();
  app.pendingCard = null;
  if (!id) {
    note(`New conversation with ${app.agent}.`);
    await refreshThread(null);
    return;
  }
  note(message || `Thread ${id.slice(-8)}.`);
  await refreshThread(new Run('Saved state', 'saved'));
}

async function loadThreads() {
  ui.thread.replaceChildren(el('option', { value: '', text: 'New thread' }));
  try {
    const list = await api('POST', '/threads/search', { metadata: { assistant_id: app.agent }, limit: 30 });
    for (const t of list) ui.thread.append(el('option', { value: t.thread_id, text: threadLabel(t) }));
  } catch (e) {
    note(e.message, 'error');
  }
}

async function selectAgent(name) {
  app.agent = name;
  ui.agent.value = name;
  localStorage.setItem('loom.agent', name);
  const a = app.agents.find((x) => x.assistant_id === name);
  ui.agentDesc.textContent = a?.description || '';
  ui.agentDesc.title = a?.description || '';
  try {
    const [schemas, graph] = await Promise.all([
      api('GET', `/assistants/${enc(name)}/schemas`),
      api('GET', `/assistants/${enc(name)}/graph`),
    ]);
    app.schema = schemas.input_schema;
    app.mermaid = graph.mermaid || '';
    ui.mermaid.textContent = app.mermaid;
    app.graph = drawGraph(ui.svg, { name, ...graph.spec });
  } catch (e) {
    note(e.message, 'error');
  }
  const props = app.schema?.properties || {};
  const hint = Object.values(props).find((p) => p?.description)?.description;
  ui.message.placeholder = `Message ${name}` + (hint ? ` — ${hint}` : '');
  await loadThreads();
  const saved = localStorage.getItem('loom.thread.' + name) || '';
  const known = [...ui.thread.options].some((o) => o.value === saved);
  await openThread(known ? saved : '');
  document.body.dataset.agent = name;
}

async function copyMermaid() {
  try {
    await navigator.clipboard.writeText(app.mermaid);
    ui.graphMsg.textContent = 'Mermaid text copied.';
  } catch {
    const d = ui.mermaid.closest('details');
    d.open = true;
    getSelection().selectAllChildren(ui.mermaid);
    ui.graphMsg.textContent = 'The browser did not allow copying: the text is selected below.';
  }
}

function downloadMermaid() {
  const url = URL.createObjectURL(new Blob([app.mermaid], { type: 'text/plain' }));
  const a = el('a', { href: url, download: `${app.agent || 'graph'}.mmd` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
  ui.graphMsg.textContent = `Downloaded ${app.agent}.mmd.`;
}

async function init() {
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
  ui.mermaidCopy.addEventListener('click', copyMermaid);
  ui.mermaidDownload.addEventListener('click', downloadMermaid);
  ui.forkForm.addEventListener('submit', fork);
  ui.forkCancel.addEventListener('click', () => ui.fork.close());
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

async function load() {
  try {
    app.agents = await api('POST', '/assistants/search', { limit: 100 });
  } catch (e) {
    note(`Could not list the agents: ${e.message}`, 'error');
    return;
  }
  ui.agent.replaceChildren(...app.agents.map((a) => el('option', { value: a.assistant_id, text: a.name })));
  const saved = localStorage.getItem('loom.agent');
  const name = app.agents.some((a) => a.assistant_id === saved) ? saved : app.agents[0]?.assistant_id;
  if (name) await selectAgent(name);
  document.body.dataset.ready = 'true';
}

init();
