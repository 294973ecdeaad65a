// The data analyst's panel on Loom's web page: its knowledge (list,
// filter, delete, add a term or an example, import a YAML file) and the
// data source a question uses; and its HTML report inline in the chat,
// in a sandboxed frame. The page imports this module and calls its
// default export with what it offers (host); the panel builds its markup
// with DOM calls only.

const words = {
  en: {
    'analyst.report': 'Analysis report',
    'analyst.loading': 'Loading the report…',
    'analyst.failed': 'Could not load the report: {error}',
    'analyst.download': 'Download',
    'analyst.asText': 'The report as text',
    'kn.h': 'Knowledge',
    'kn.import': 'Import YAML',
    'kn.import.title': 'Import a knowledge file (YAML) into this data source',
    'kn.source': 'Data source',
    'kn.count': 'Entries: {n}.',
    'kn.noSources': 'No knowledge yet.',
    'kn.imported': 'Imported {name}: {n} entries added or changed.',
    'kn.kind': 'What to add',
    'kn.filter': 'Show',
    'kn.filter.all': 'All',
    'kn.filter.term': 'Terms',
    'kn.filter.example': 'Examples',
    'kn.filter.document': 'Documents',
    'kn.filter.semantic': 'Columns',
    'kn.kind.term': 'Term',
    'kn.kind.example': 'Example',
    'kn.kind.document': 'Document',
    'kn.kind.semantic': 'Column',
    'kn.term': 'Term',
    'kn.description': 'What it means',
    'kn.question': 'Question',
    'kn.sql': 'SQL that answers it',
    'kn.add': 'Add',
    'kn.delete': 'Delete',
    'kn.delete.label': 'Delete {name}',
  },
  zh: {
    'analyst.report': '分析报告',
    'analyst.loading': '正在加载报告…',
    'analyst.failed': '报告加载失败：{error}',
    'analyst.download': '下载',
    'analyst.asText': '报告的文字版',
    'kn.h': '知识库',
    'kn.import': '导入 YAML',
    'kn.import.title': '把知识文件（YAML）导入这个数据源',
    'kn.source': '数据源',
    'kn.count': '共 {n} 条。',
    'kn.noSources': '还没有知识。',
    'kn.imported': '已导入 {name}：新增或更新 {n} 条。',
    'kn.kind': '添加什么',
    'kn.filter': '显示',
    'kn.filter.all': '全部',
    'kn.filter.term': '术语',
    'kn.filter.example': '示例',
    'kn.filter.document': '文档',
    'kn.filter.semantic': '字段',
    'kn.kind.term': '术语',
    'kn.kind.example': '示例',
    'kn.kind.document': '文档',
    'kn.kind.semantic': '字段',
    'kn.term': '术语',
    'kn.description': '含义',
    'kn.question': '问题',
    'kn.sql': '回答它的 SQL',
    'kn.add': '添加',
    'kn.delete': '删除',
    'kn.delete.label': '删除 {name}',
  },
};

// REPORT_PATH is where a reply names the analyst's HTML report.
const REPORT_PATH = /\/api\/v1\/dataagent\/reports\/[A-Za-z0-9._~%-]+/;
const BASE = '/api/v1/dataagent/knowledge/';
const SOURCE = 'loom.knSource';

const plural = (kind) => (kind === 'semantic' ? kind : kind + 's');

// entryText is an entry's title and what it says.
function entryText(e) {
  switch (e.kind) {
    case 'term': return [e.term, e.description || e.formula];
    case 'example': return [e.question, e.sql];
    case 'document': return [e.title, e.text];
    default: return [e.column ? `${e.table}.${e.column}` : e.table, e.name || e.description || (e.synonyms || []).join(', ')];
  }
}

// panel makes the panel; the page shows element beside the chat, calls
// refresh when the thread changes or a run ends, and reply with what a
// run said.
export default function panel(host) {
  const { el, setMsg, api, fetchBlob, saveBlob, enc } = host;
  host.words(words);
  let seq = 0;

  const source = el('select', { id: 'kn-source' });
  const filter = el('select', { id: 'kn-filter' },
    ['', 'term', 'example', 'document', 'semantic'].map((k) => el('option', { value: k, i18n: 'kn.filter.' + (k || 'all') })));
  const note = el('p', { id: 'kn-note', class: 'muted small', role: 'status' });
  const entries = el('ul', { id: 'kn-entries', class: 'kn-entries' });
  const importFile = el('input', { id: 'kn-import-file', type: 'file', hidden: true, accept: '.yaml,.yml,.json,text/yaml,application/json' });
  const aLabel = el('label', { for: 'kn-a', id: 'kn-a-label', i18n: 'kn.term' });
  const bLabel = el('label', { for: 'kn-b', id: 'kn-b-label', i18n: 'kn.description' });
  const a = el('input', { id: 'kn-a', type: 'text', required: true });
  const b = el('textarea', { id: 'kn-b', rows: 2, required: true });
  const kind = (k) => el('label', {}, el('input', { type: 'radio', name: 'kn-kind', value: k, checked: k === 'term', onchange: kindChanged }), ' ',
    el('span', { i18n: 'kn.kind.' + k }));
  const form = el('form', { id: 'kn-form', class: 'kn-form', onsubmit: add },
    el('div', { class: 'kn-kind', role: 'radiogroup', i18nLabel: 'kn.kind' }, kind('term'), kind('example')),
    aLabel, a, bLabel, b,
    el('div', { class: 'actions' }, el('button', { type: 'submit', class: 'primary', i18n: 'kn.add' })));
  const element = el('section', { id: 'knowledge-panel', class: 'panel agent-panel', 'aria-labelledby': 'knowledge-h' },
    el('div', { class: 'panel-head' },
      el('h2', { id: 'knowledge-h', i18n: 'kn.h' }),
      el('div', { class: 'tools' }, importFile,
        el('button', { id: 'kn-import', type: 'button', i18n: 'kn.import', i18nTitle: 'kn.import.title', onclick: () => importFile.click() }))),
    el('div', { class: 'kn-source' },
      el('label', { for: 'kn-source', i18n: 'kn.source' }), source,
      el('label', { for: 'kn-filter', class: 'visually-hidden', i18n: 'kn.filter' }), filter),
    note, entries, form);

  source.addEventListener('change', () => {
    localStorage.setItem(SOURCE, source.value);
    refresh();
  });
  filter.addEventListener('change', () => refresh());
  importFile.addEventListener('change', () => {
    const f = importFile.files[0];
    importFile.value = '';
    importYAML(f);
  });

  const kindNow = () => form.querySelector('input[name="kn-kind"]:checked').value;

  // kindChanged relabels the form's two fields for a term or an example.
  function kindChanged() {
    const ex = kindNow() === 'example';
    setMsg(aLabel, ex ? 'kn.question' : 'kn.term');
    setMsg(bLabel, ex ? 'kn.sql' : 'kn.description');
    b.spellcheck = !ex;
  }

  function row(e) {
    const [title, text] = entryText(e);
    return el('li', { class: 'kn-entry', dataset: { id: e.id, kind: e.kind } },
      el('div', { class: 'kn-main' },
        el('span', { class: 'tag', i18n: 'kn.kind.' + e.kind }), el('strong', { class: 'kn-title', text: title || '' }),
        text ? el('span', { class: 'kn-text muted small', text }) : null),
      el('button', { type: 'button', class: 'delete', i18n: 'kn.delete', i18nLabel: ['kn.delete.label', { name: title || '' }],
        onclick: async () => {
          try {
            await api('DELETE', `${BASE}${plural(e.kind)}/${enc(e.id)}`);
            await refresh();
          } catch (err) {
            note.textContent = err.message;
          }
        } }));
  }

  // refresh lists the sources, and the chosen source's entries (of the
  // chosen kind).
  async function refresh() {
    const mine = ++seq;
    try {
      const { sources } = await api('GET', `${BASE}sources`);
      const chosen = source.value || localStorage.getItem(SOURCE) || '';
      source.replaceChildren(...sources.map((s) => el('option', { value: s, text: s })));
      if (sources.includes(chosen)) source.value = chosen;
      const kind = filter.value ? `&kind=${enc(filter.value)}` : '';
      const got = source.value ? await api('GET', `${BASE}entries?source=${enc(source.value)}${kind}`) : { entries: [] };
      if (mine !== seq) return;
      entries.replaceChildren(...got.entries.map(row));
      setMsg(note, source.value ? 'kn.count' : 'kn.noSources', { n: got.entries.length });
    } catch (e) {
      if (mine === seq) note.textContent = e.message;
    }
  }

  async function add(e) {
    e.preventDefault();
    const k = kindNow();
    const x = a.value.trim();
    const y = b.value.trim();
    const entry = k === 'example' ? { question: x, sql: y } : { term: x, description: y };
    try {
      await api('POST', BASE + plural(k), { source: source.value, ...entry });
    } catch (err) {
      note.textContent = err.message;
      return;
    }
    a.value = '';
    b.value = '';
    await refresh();
  }

  async function importYAML(file) {
    if (!file) return;
    try {
      const res = await api('POST', `${BASE}import?source=${enc(source.value)}`, { yaml: await file.text() });
      await refresh();
      setMsg(note, 'kn.imported', { name: file.name, n: (res.created ?? 0) + (res.updated ?? 0) });
    } catch (err) {
      note.textContent = err.message;
    }
  }

  // reply shows the HTML report a reply names in a sandboxed frame (no
  // scripts, no requests: it is only srcdoc; the page's own origin, so
  // that browsers draw it in the page's process), with a download
  // button; null when the reply names none.
  function reply(said) {
    const path = said.match(REPORT_PATH)?.[0];
    if (!path) return null;
    const frame = el('iframe', { class: 'report-frame', sandbox: 'allow-same-origin', i18nTitle: 'analyst.report', referrerpolicy: 'no-referrer' });
    const msg = el('p', { class: 'muted small', role: 'status', i18n: 'analyst.loading' });
    let html = '';
    const save = el('button', { type: 'button', class: 'download', disabled: true, i18n: 'analyst.download',
      onclick: () => saveBlob(new Blob([html], { type: 'text/html' }), `report-${decodeURIComponent(path.split('/').pop())}.html`) });
    const card = el('div', { class: 'card analyst-report', dataset: { path } },
      el('div', { class: 'card-title' }, el('span', { i18n: 'analyst.report' }), save), msg, frame);
    fetchBlob(path, 'text/html').then((x) => x.text()).then((text) => {
      html = text;
      frame.srcdoc = text;
      save.disabled = false;
      msg.remove();
      card.dataset.state = 'loaded';
    }).catch((e) => {
      setMsg(msg, 'analyst.failed', { error: e.message });
      frame.remove();
    });
    return { card, asText: 'analyst.asText' };
  }

  return { element, refresh, reply };
}
