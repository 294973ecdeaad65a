// The report designer's panel on Loom's web page: the thread's current
// preview and every version's JRXML, PNG and PDF, and uploads of a form
// or a template from the chat. The page imports this module and calls
// its default export with what it offers (host); the panel builds its
// markup with DOM calls only.

const words = {
  en: {
    'report.upload.title': 'Upload a form or template to design from: PNG, JPEG, XLSX, PDF or JRXML',
    'report.h': 'Report',
    'report.none': 'No design yet: upload a form or a template, or describe the report.',
    'report.empty': 'No versions yet.',
    'report.count': 'Versions: {n}, newest first.',
    'report.failed': 'Could not load the report: {error}',
    'report.preview': 'Preview of the current template',
    'report.versions': 'Versions, newest first',
    'report.version': 'v{n}',
    'report.download': 'Download version {n} as {ext}',
    'report.pass': 'passed checks',
    'report.fail': 'has problems',
    'report.intent.initial_generation': 'new design',
    'report.intent.modify_report': 'change',
    'report.intent.preview_report': 'preview',
    'report.intent.export_pdf': 'PDF export',
    'report.intent.export_jrxml': 'template export',
    'report.intent.consult_question': 'question',
    'report.intent.undo_modification': 'undo',
    'report.intent.reset_session': 'reset',
    'report.intent.other': 'change',
  },
  zh: {
    'report.upload.title': '上传表单或模板来设计报表：PNG、JPEG、XLSX、PDF 或 JRXML',
    'report.h': '报表',
    'report.none': '还没有设计：上传表单或模板，或者描述想要的报表。',
    'report.empty': '还没有版本。',
    'report.count': '共 {n} 个版本，最新的在前。',
    'report.failed': '报表加载失败：{error}',
    'report.preview': '当前模板的预览',
    'report.versions': '版本，最新的在前',
    'report.version': '第 {n} 版',
    'report.download': '下载第 {n} 版的 {ext}',
    'report.pass': '检查通过',
    'report.fail': '有问题',
    'report.intent.initial_generation': '新建',
    'report.intent.modify_report': '修改',
    'report.intent.preview_report': '预览',
    'report.intent.export_pdf': '导出 PDF',
    'report.intent.export_jrxml': '导出模板',
    'report.intent.consult_question': '咨询',
    'report.intent.undo_modification': '撤销',
    'report.intent.reset_session': '重置',
    'report.intent.other': '修改',
  },
};

// panel makes the panel; the page shows element beside the chat and calls
// refresh when the thread changes or a run ends.
export default function panel(host) {
  const { el, t, lang, setMsg, api, fetchBlob, saveBlob, enc } = host;
  host.words(words);
  const base = () => `/api/v1/report/threads/${enc(host.thread())}`;
  let previewURL = '';
  let seq = 0;

  const note = el('p', { id: 'report-note', class: 'muted small', role: 'status', i18n: 'report.none' });
  const img = el('img', { id: 'report-preview', i18nLabel: 'report.preview', alt: '' });
  const fig = el('figure', { class: 'preview', hidden: true }, img);
  const list = el('ol', { id: 'report-versions', class: 'versions', i18nLabel: 'report.versions' });
  const element = el('section', { id: 'report-panel', class: 'panel agent-panel', 'aria-labelledby': 'report-h' },
    el('div', { class: 'panel-head' },
      el('h2', { id: 'report-h', i18n: 'report.h' }),
      el('div', { class: 'tools' }, el('button', { type: 'button', i18n: 'history.refresh', onclick: () => refresh() }))),
    note, fig, list);

  // label is what a person reads of a version's intent and status.
  function label(v) {
    const key = 'report.intent.' + v.intent;
    const dot = () => el('span', { class: 'sep', text: ' · ' });
    return el('span', { class: 'muted small' }, el('span', { i18n: t(key) === key ? 'report.intent.other' : key }), dot(),
      el('span', { i18n: v.status === 'pass' ? 'report.pass' : 'report.fail' }), v.ssim ? [dot(), el('span', { text: `SSIM ${v.ssim.toFixed(2)}` })] : null);
  }

  function row(v) {
    const when = v.created_at ? new Date(v.created_at).toLocaleTimeString(lang() === 'zh' ? 'zh-CN' : 'en') : '';
    const get = (ext) => el('button', {
      type: 'button', class: 'dl', dataset: { ext }, i18nLabel: ['report.download', { n: v.version, ext: ext.toUpperCase() }], text: ext.toUpperCase(),
      onclick: async () => {
        try {
          saveBlob(await fetchBlob(`${base()}/versions/${v.version}.${ext}`), `report-v${v.version}.${ext}`);
        } catch (e) {
          setMsg(note, 'report.failed', { error: e.message });
        }
      },
    });
    return el('li', { class: 'version', dataset: { version: v.version, status: v.status } },
      el('div', { class: 'v-main' }, el('span', { class: 'seq', i18n: ['report.version', { n: v.version }] }),
        label(v), when ? el('span', { class: 'muted small', text: when }) : null),
      el('div', { class: 'v-actions' }, ['jrxml', 'png', 'pdf'].map(get)));
  }

  // refresh shows the thread's current preview and its versions, newest
  // first.
  async function refresh() {
    const mine = ++seq;
    if (!host.thread()) {
      fig.hidden = true;
      list.replaceChildren();
      setMsg(note, 'report.none');
      return;
    }
    let versions = [];
    let preview = null;
    try {
      versions = (await api('GET', `${base()}/versions`)).versions || [];
      if (versions.length) preview = await fetchBlob(`${base()}/preview.png`, 'image/png');
    } catch (e) {
      // A thread with nothing in it yet has no versions and no preview.
      if (e.status !== 404) setMsg(note, 'report.failed', { error: e.message });
      if (e.status !== 404 || mine !== seq) return;
    }
    if (mine !== seq) return;
    if (previewURL) URL.revokeObjectURL(previewURL);
    previewURL = preview ? URL.createObjectURL(preview) : '';
    if (preview) img.src = previewURL;
    else img.removeAttribute('src');
    fig.hidden = !preview;
    list.replaceChildren(...versions.slice().reverse().map(row));
    if (versions.length) setMsg(note, 'report.count', { n: versions.length });
    else setMsg(note, 'report.empty');
  }

  // upload sends a file to the thread (multipart, field "file") and
  // gives the input of the turn that uses it.
  async function send(file) {
    const body = new FormData();
    body.append('file', file, file.name);
    const res = await fetch(`${base()}/uploads`, { method: 'POST', headers: host.headers(false), body });
    if (!res.ok) throw await host.apiError(res);
    const up = await res.json();
    return { kind: up.kind, input: { upload: up.id } };
  }

  return {
    element, refresh,
    upload: { accept: '.png,.jpg,.jpeg,.xlsx,.pdf,.jrxml,.xml,image/png,image/jpeg,application/pdf', title: 'report.upload.title', send },
    close: () => { if (previewURL) URL.revokeObjectURL(previewURL); },
  };
}
