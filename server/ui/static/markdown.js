// markdown.js renders the Markdown an agent writes (headings, emphasis,
// lists, tables, quotes, inline code and fenced code, SQL highlighted)
// as elements, with DOM calls only: every piece of the text becomes a
// text node, so HTML in it shows as text and can run nothing. Links are
// kept only to http(s) addresses and to paths on this server.

// SQL words highlighted in ```sql blocks (and in blocks with no language
// that read as SQL).
const SQL_WORDS = new Set(`select from where and or not in is null as on join left right inner outer full cross
group by order having limit offset union all distinct case when then else end asc desc with insert into values
update set delete create table view index drop alter add column primary key foreign references between like
ilike exists count sum avg min max coalesce cast over partition filter returning true false`.split(/\s+/));

// block types a line may start.
const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)\s*$/;
const HEADING = /^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$/;
const RULE = /^ {0,3}([-*_])(?:\s*\1){2,}\s*$/;
const QUOTE = /^ {0,3}>\s?(.*)$/;
const ITEM = /^(\s*)([-*+]|\d{1,9}[.)])\s+(.*)$/;
const TABLE_SEP = /^\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*$/;

/**
 * renderMarkdown returns a <div class="md"> holding text rendered from
 * Markdown. opts.link(href) may turn a kept link's address into another
 * (or return null to show the text alone).
 */
export function renderMarkdown(text, opts = {}) {
  const root = document.createElement('div');
  root.className = 'md';
  blocks(String(text ?? '').replace(/\r\n?/g, '\n').split('\n'), root, opts);
  return root;
}

/** looksLikeMarkdown says whether text uses Markdown a reader would see raw. */
export function looksLikeMarkdown(text) {
  return /(^|\n) {0,3}(#{1,6}\s|```|~~~|[-*+]\s|\d+[.)]\s|>\s?)|\*\*\S|`[^`\n]+`|\[[^\]\n]+\]\([^)\s]+\)|(^|\n)\s*\|.*\|\s*\n\s*\|?\s*:?-+/.test(String(text ?? ''));
}

function make(tag, cls, ...kids) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

// blocks renders lines into parent.
function blocks(lines, parent, opts) {
  let i = 0;
  let para = [];
  const flush = () => {
    if (!para.length) return;
    const p = make('p');
    para.forEach((l, n) => {
      if (n) p.append(document.createElement('br'));
      inline(l.trim(), p, opts);
    });
    parent.append(p);
    para = [];
  };
  while (i < lines.length) {
    const line = lines[i];
    let m;
    if (!line.trim()) {
      flush();
      i++;
    } else if ((m = line.match(FENCE))) {
      flush();
      const close = new RegExp('^ {0,3}' + m[1][0] + '{' + m[1].length + ',}\\s*$');
      const body = [];
      for (i++; i < lines.length && !close.test(lines[i]); i++) body.push(lines[i]);
      i++; // the closing fence (or the end)
      parent.append(codeBlock(body.join('\n'), m[2].toLowerCase()));
    } else if ((m = line.match(HEADING))) {
      flush();
      const h = make('h' + Math.min(6, m[1].length + 2), 'md-h');
      inline(m[2], h, opts);
      parent.append(h);
      i++;
    } else if (RULE.test(line)) {
      flush();
      parent.append(document.createElement('hr'));
      i++;
    } else if (line.includes('|') && i + 1 < lines.length && TABLE_SEP.test(lines[i + 1]) && lines[i + 1].includes('-')) {
      flush();
      const rows = [line];
      for (i += 2; i < lines.length && lines[i].includes('|') && lines[i].trim(); i++) rows.push(lines[i]);
      parent.append(table(rows, lines, opts));
    } else if (QUOTE.test(line)) {
      flush();
      const body = [];
      for (; i < lines.length && (m = lines[i].match(QUOTE)); i++) body.push(m[1]);
      const q = make('blockquote');
      blocks(body, q, opts);
      parent.append(q);
    } else if (ITEM.test(line) && (para.length === 0 || !/^\s/.test(line))) {
      flush();
      i = list(lines, i, parent, opts);
    } else {
      para.push(line);
      i++;
    }
  }
  flush();
}

// list renders the list that starts at lines[i] and returns the line
// after it. Items indented deeper than the list's own make a nested list.
function list(lines, i, parent, opts) {
  const first = lines[i].match(ITEM);
  const indent = first[1].length;
  const ordered = /\d/.test(first[2]);
  const l = make(ordered ? 'ol' : 'ul');
  if (ordered && parseInt(first[2], 10) !== 1) l.start = parseInt(first[2], 10);
  let li = null;
  let body = [];
  const end = () => {
    if (!li) return;
    const [head, ...rest] = body;
    inline(head.trim(), li, opts);
    if (rest.length) blocks(rest.map((r) => r.slice(Math.min(r.search(/\S|$/), indent + 2))), li, opts);
    l.append(li);
  };
  while (i < lines.length) {
    const line = lines[i];
    const m = line.match(ITEM);
    if (m && m[1].length <= indent + 1 && /\d/.test(m[2]) === ordered) {
      end();
      li = make('li');
      body = [m[3]];
      i++;
    } else if (m && m[1].length <= indent + 1) {
      break; // a list of the other kind
    } else if (line.trim() && (/^\s/.test(line) || !body.length)) {
      body.push(line);
      i++;
    } else if (!line.trim() && i + 1 < lines.length && /^\s+\S/.test(lines[i + 1])) {
      i++; // a blank line inside an item
    } else {
      break;
    }
  }
  end();
  parent.append(l);
  return i;
}

// cells splits a table row on pipes that are not escaped.
function cells(row) {
  let s = row.trim();
  if (s.startsWith('|')) s = s.slice(1);
  if (s.endsWith('|') && !s.endsWith('\\|')) s = s.slice(0, -1);
  return s.split(/(?<!\\)\|/).map((c) => c.trim().replaceAll('\\|', '|'));
}

function table(rows, _lines, opts) {
  const [head, ...body] = rows;
  const names = cells(head);
  const t = make('table', 'data md-table');
  const tr = make('tr');
  for (const n of names) {
    const th = make('th');
    th.scope = 'col';
    inline(n, th, opts);
    tr.append(th);
  }
  const tbody = make('tbody');
  for (const r of body) {
    const row = make('tr');
    const cs = cells(r);
    for (let c = 0; c < names.length; c++) {
      const td = make('td');
      inline(cs[c] ?? '', td, opts);
      if (/^-?[\d,]+(\.\d+)?%?$/.test(cs[c] ?? '')) td.className = 'num';
      row.append(td);
    }
    tbody.append(row);
  }
  t.append(make('thead', '', tr), tbody);
  return make('div', 'table-wrap', t);
}

// codeBlock is a fenced block; SQL gets its words, strings, numbers and
// comments marked.
function codeBlock(text, lang) {
  const code = make('code');
  if (lang) code.className = 'lang-' + lang.replace(/[^\w-]/g, '');
  const sql = lang === 'sql' || (!lang && /^\s*(select|with|insert|update|delete|create)\b/i.test(text));
  if (sql) highlightSQL(text, code);
  else code.textContent = text;
  return make('pre', 'md-code' + (sql ? ' sql' : ''), code);
}

const SQL_TOKEN = /(--[^\n]*|\/\*[\s\S]*?\*\/)|('(?:[^']|'')*'?)|("(?:[^"]|"")*"?)|\b(\d+(?:\.\d+)?)\b|([A-Za-z_][A-Za-z0-9_]*)/g;

function highlightSQL(text, code) {
  let at = 0;
  const span = (cls, s) => {
    const e = make('span', cls);
    e.textContent = s;
    code.append(e);
  };
  for (const m of text.matchAll(SQL_TOKEN)) {
    let cls = '';
    if (m[1]) cls = 'com';
    else if (m[2]) cls = 'str';
    else if (m[4]) cls = 'num';
    else if (m[5] && SQL_WORDS.has(m[5].toLowerCase())) cls = 'kw';
    if (!cls) continue;
    if (m.index > at) code.append(text.slice(at, m.index));
    span(cls, m[0]);
    at = m.index + m[0].length;
  }
  if (at < text.length) code.append(text.slice(at));
}

// INLINE finds the next inline element: `code`, **strong**, __strong__,
// ~~struck~~, *em*, _em_, [text](href), a bare http(s) address, a bare
// path of this server's API (/api/…, /v1/…, /threads/…).
const INLINE = new RegExp([
  /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/.source,
  /\*\*(?=\S)([\s\S]*?\S)\*\*/.source,
  /(?<![\p{L}\p{N}])__(?=\S)([\s\S]*?\S)__(?![\p{L}\p{N}])/.source,
  /~~(?=\S)([\s\S]*?\S)~~/.source,
  /\*(?=[^\s*])([\s\S]*?[^\s*])\*/.source,
  /(?<![\p{L}\p{N}_])_(?=[^\s_])([\s\S]*?[^\s_])_(?![\p{L}\p{N}_])/.source,
  /\[([^\]\n]+)\]\(\s*([^()\s]+)\s*\)/.source,
  /(https?:\/\/[^\s<>"'`]*[^\s<>"'`.,;:!?)\]}，。；：！？）])/.source,
  /(?<![\p{L}\p{N}_\/.:])(\/(?:api|v1|threads)\/[\w.~%!$&*+,;=:@\/?#-]*[\w~%$&*+=@\/#-])/.source,
].join('|'), 'gu');

// inline renders text's inline Markdown into parent.
function inline(text, parent, opts) {
  let at = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > at) parent.append(text.slice(at, m.index));
    at = m.index + m[0].length;
    if (m[1] !== undefined) {
      parent.append(make('code', '', m[2].replace(/^ (.*) $/, '$1')));
    } else if (m[3] !== undefined || m[4] !== undefined) {
      const e = make('strong');
      inline(m[3] ?? m[4], e, opts);
      parent.append(e);
    } else if (m[5] !== undefined) {
      const e = make('s');
      inline(m[5], e, opts);
      parent.append(e);
    } else if (m[6] !== undefined || m[7] !== undefined) {
      const e = make('em');
      inline(m[6] ?? m[7], e, opts);
      parent.append(e);
    } else if (m[8] !== undefined) {
      const a = link(m[9], opts);
      if (a) {
        inline(m[8], a, opts);
        parent.append(a);
      } else {
        parent.append(m[8]);
      }
    } else {
      // A bare address, or a bare path on this server.
      const href = m[10] ?? m[11];
      const a = link(href, opts);
      if (a) {
        a.textContent = href;
        parent.append(a);
      } else {
        parent.append(href);
      }
    }
  }
  if (at < text.length) parent.append(text.slice(at));
}

// safeHref is href when it is an http(s) address or a path on this
// server, else null (javascript:, data:, another scheme, //host).
export function safeHref(href) {
  const h = String(href).trim();
  if (/^\/(?!\/)/.test(h)) return h;
  try {
    const u = new URL(h);
    if (/^https?:$/.test(u.protocol)) return u.href;
  } catch { /* not an absolute URL */ }
  return null;
}

function link(href, opts) {
  let h = safeHref(href);
  if (h && opts.link) h = opts.link(h);
  if (!h) return null;
  const a = make('a');
  a.href = h;
  if (!h.startsWith('/')) {
    a.target = '_blank';
    a.rel = 'noopener noreferrer';
  }
  return a;
}
