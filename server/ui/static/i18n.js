// i18n.js is the page's one message catalogue, in English and Chinese, and
// what applies it. The language follows the browser's (navigator.languages)
// until the user picks one with the switch; the choice is kept in local
// storage. Elements carry their message key (data-i18n, and
// data-i18n-title, -placeholder, -aria-label for attributes, with
// data-i18n-args for parameters), so a switch re-translates the whole
// page, what the runs drew included.

const en = {
  'lang.switch': '中文',
  'lang.switch.title': 'Switch the page to Chinese',
  'bar.agent': 'Agent',
  'bar.thread': 'Thread',
  'bar.newThread': 'New thread',
  'bar.apiKey': 'API key',
  'key.placeholder': 'not needed on loopback',
  'key.help': 'Kept in this browser\'s local storage and sent as an Authorization: Bearer header.',
  'key.forget': 'Forget',
  'key.save': 'Save',
  'key.ask': ' — paste an API key under "API key".',
  'chat.label': 'Conversation',
  'chat.message': 'Message',
  'chat.placeholder': 'Message {agent}',
  'chat.placeholderHint': 'Message {agent} — {hint}',
  'chat.send': 'Send',
  'chat.stop': 'Stop',
  'chat.you': 'You',
  'chat.upload': 'Upload',
  'chat.attached': 'Attached: {name}',
  'note.panelFailed': 'The agent\'s own panel could not be loaded: {error}',
  'run.asText': 'As text',
  'graph.view': 'Graph view',
  'graph.zoomIn': '+',
  'graph.zoomIn.title': 'Zoom in',
  'graph.zoomOut': '−',
  'graph.zoomOut.title': 'Zoom out',
  'graph.fit': 'Fit',
  'graph.fit.title': 'Show the whole graph at a readable size',
  'graph.compact': 'Compact',
  'graph.compact.title': 'Fold loops and steps that run one after another into one box each',
  'graph.hint': 'Drag to pan; Ctrl + wheel or pinch to zoom.',
  'graph.h': 'Graph',
  'graph.copy': 'Copy Mermaid',
  'graph.copy.title': 'Copy the graph as Mermaid text',
  'graph.download': 'Download .mmd',
  'graph.download.title': 'Download the graph as a Mermaid file',
  'graph.legend.running': 'running',
  'graph.legend.waiting': 'waiting for you',
  'graph.legend.next': 'next',
  'graph.legend.dashed': 'route or loop exit',
  'graph.mermaidText': 'Mermaid text',
  'graph.copied': 'Mermaid text copied.',
  'graph.copyDenied': 'The browser did not allow copying: the text is selected below.',
  'graph.downloaded': 'Downloaded {file}.',
  'graph.title': 'Graph of {name}: {nodes}',
  'graph.node': 'node {name}',
  'graph.start': 'start',
  'graph.end': 'end',
  'graph.max': 'max {n}×',
  'graph.after': 'after {n}×',
  'history.h': 'History',
  'history.copy': 'Copy thread',
  'history.copy.title': 'Copy the thread\'s latest state to a new thread',
  'history.refresh': 'Refresh',
  'history.none': 'No thread yet: send a message to start one.',
  'history.empty': 'No checkpoints yet.',
  'history.count': '{n} checkpoints, newest first. Undo makes an older one the head again (as a new checkpoint); fork does so with edits.',
  'history.list': 'Checkpoints, newest first',
  'history.head': 'head',
  'history.waiting': 'waiting',
  'history.next': 'next: {nodes}',
  'history.done': 'done',
  'history.copyOf': 'copy of #{seq}',
  'history.copyOfOlder': 'copy of an older checkpoint',
  'history.undo': 'Undo to here',
  'history.undo.label': 'Undo to checkpoint #{seq}',
  'history.fork': 'Fork…',
  'history.fork.label': 'Fork from checkpoint #{seq}',
  'fork.h': 'Fork from checkpoint {seq}',
  'fork.help': 'The fork becomes the thread\'s new head: the checkpoint\'s state with your changes set over it, and its pending work. Nothing before it is lost.',
  'fork.values': 'State (JSON object)',
  'fork.raw': 'Edit as raw JSON',
  'fork.field.json': '{name} (JSON)',
  'fork.field.bad': '{name}: not valid JSON: {error}',
  'fork.field.none': 'This state has no fields to edit here: edit it as raw JSON.',
  'fork.new': 'Fork to a new thread (this one stays as it is)',
  'fork.cancel': 'Cancel',
  'fork.submit': 'Fork',
  'fork.notObject': 'Not a JSON object: {error}',
  'fork.mustBeObject': 'the state must be a JSON object',
  'status.idle': 'idle',
  'status.running': 'running',
  'status.waiting': 'waiting for you',
  'status.stopped': 'stopped',
  'status.done': 'finished',
  'status.error': 'failed',
  'status.restored': 'restored',
  'status.noState': 'no state yet',
  'run.steps': 'Steps',
  'run.reasoning': 'Reasoning',
  'run.toolCall': 'Tool call',
  'run.toolResult': 'Tool result',
  'run.noArgs': 'no arguments',
  'run.raw': 'Raw JSON',
  'run.details': 'Details',
  'run.inAnswer': 'Shown in the answer below',
  'kind.draft': 'Draft',
  'run.node': 'step {node}',
  'run.error': 'Error',
  'run.finished': 'Finished',
  'run.state': 'State',
  'run.goesOn': 'The thread goes on from {nodes}.',
  'run.continue': 'Continue',
  'run.saved': 'Saved state',
  'run.undo': 'Undo to checkpoint #{seq}',
  'run.fork': 'Fork from checkpoint #{seq}',
  'card.label': 'Question',
  'card.waiting': 'Waiting for you',
  'card.answered': 'You answered',
  'card.accept': 'Accept',
  'card.reject': 'Reject',
  'card.note': 'Note',
  'card.optional': 'optional',
  'card.accepted': 'Accepted',
  'card.rejected': 'Rejected',
  'card.replied': 'Answered in the chat: {text}',
  'card.readYes': 'Your reply “{text}” was read as a yes.',
  'card.readNo': 'Your reply “{text}” was read as a no.',
  'card.again': '“{text}” reads as neither a yes nor a no. Please answer the question above again: for example “yes” or “no”, or use its buttons.',
  'card.dismissed': 'No longer pending',
  'count.words': (p) => `${p.n} word${p.n === 1 ? '' : 's'}`,
  'count.chars': (p) => `${p.n} character${p.n === 1 ? '' : 's'}`,
  'bool.yes': 'yes',
  'bool.no': 'no',
  'note.newConversation': 'New conversation with {agent}.',
  'note.thread': 'Thread {id}.',
  'note.forked': 'Forked checkpoint #{seq} to a new thread {id}.',
  'note.copied': 'Copied to a new thread {id}.',
  'note.noAgents': 'Could not list the agents: {error}',
  'thread.untitled': 'thread',
  'thread.made': '{title} · {when}',
  'run.stepsCount': 'Steps: {n}',
  'run.stepsNow': 'Working: step {n}',
  'run.tool': 'Tool',
  'run.goesOnPlain': 'The run stopped part way; it can go on from here.',
  'history.more': 'more to do',
  'history.from': 'step',
  'source.input': 'your message',
  'source.step': 'step',
  'source.loop': 'step',
  'source.resume': 'your answer',
  'source.undo': 'undo',
  'source.fork': 'fork',
  'source.update': 'edit',
  'source.copy': 'copy',
  'link.preview': 'Open the preview',
  'link.pdf': 'Open the PDF',
  'link.report': 'Open the report',
  'link.file': 'Open the file',
  'link.failed': 'Could not open it: {error}',
};

const zh = {
  'lang.switch': 'English',
  'lang.switch.title': '把页面切换成英文',
  'bar.agent': '智能体',
  'bar.thread': '会话',
  'bar.newThread': '新会话',
  'bar.apiKey': 'API 密钥',
  'key.placeholder': '本机访问无需密钥',
  'key.help': '保存在本浏览器的本地存储里，以 Authorization: Bearer 请求头发送。',
  'key.forget': '清除',
  'key.save': '保存',
  'key.ask': '——请在“API 密钥”里填入密钥。',
  'chat.label': '对话',
  'chat.message': '消息',
  'chat.placeholder': '给 {agent} 发消息',
  'chat.placeholderHint': '给 {agent} 发消息——{hint}',
  'chat.send': '发送',
  'chat.stop': '停止',
  'chat.you': '你',
  'chat.upload': '上传',
  'chat.attached': '附件：{name}',
  'note.panelFailed': '智能体自己的面板加载失败：{error}',
  'run.asText': '文字版',
  'graph.view': '流程图视图',
  'graph.zoomIn': '+',
  'graph.zoomIn.title': '放大',
  'graph.zoomOut': '−',
  'graph.zoomOut.title': '缩小',
  'graph.fit': '适合',
  'graph.fit.title': '以看得清的大小显示整张流程图',
  'graph.compact': '紧凑',
  'graph.compact.title': '把循环和依次执行的步骤各折叠成一个方框',
  'graph.hint': '拖动可平移；按住 Ctrl 滚动或双指捏合可缩放。',
  'graph.h': '流程图',
  'graph.copy': '复制 Mermaid',
  'graph.copy.title': '把流程图复制为 Mermaid 文本',
  'graph.download': '下载 .mmd',
  'graph.download.title': '把流程图下载为 Mermaid 文件',
  'graph.legend.running': '运行中',
  'graph.legend.waiting': '等你确认',
  'graph.legend.next': '下一步',
  'graph.legend.dashed': '分支或循环出口',
  'graph.mermaidText': 'Mermaid 文本',
  'graph.copied': '已复制 Mermaid 文本。',
  'graph.copyDenied': '浏览器不允许复制：文本已在下方选中。',
  'graph.downloaded': '已下载 {file}。',
  'graph.title': '{name} 的流程图：{nodes}',
  'graph.node': '节点 {name}',
  'graph.start': '开始',
  'graph.end': '结束',
  'graph.max': '最多 {n} 次',
  'graph.after': '{n} 次后',
  'history.h': '历史',
  'history.copy': '复制会话',
  'history.copy.title': '把会话的最新状态复制到一个新会话',
  'history.refresh': '刷新',
  'history.none': '还没有会话：发一条消息就会开始。',
  'history.empty': '还没有检查点。',
  'history.count': '共 {n} 个检查点，最新的在前。“回到这里”让较早的检查点重新成为最新（另存为新检查点）；“分叉”在此基础上修改。',
  'history.list': '检查点，最新的在前',
  'history.head': '最新',
  'history.waiting': '等待中',
  'history.next': '下一步：{nodes}',
  'history.done': '已结束',
  'history.copyOf': '复制自 #{seq}',
  'history.copyOfOlder': '复制自较早的检查点',
  'history.undo': '回到这里',
  'history.undo.label': '回到检查点 #{seq}',
  'history.fork': '分叉…',
  'history.fork.label': '从检查点 #{seq} 分叉',
  'fork.h': '从检查点 {seq} 分叉',
  'fork.help': '分叉会成为会话新的最新状态：检查点的状态加上你的修改，以及它待办的工作。之前的内容都不会丢失。',
  'fork.values': '状态（JSON 对象）',
  'fork.raw': '以原始 JSON 编辑',
  'fork.field.json': '{name}（JSON）',
  'fork.field.bad': '{name}：不是有效的 JSON：{error}',
  'fork.field.none': '这个状态没有可在这里编辑的字段，请以原始 JSON 编辑。',
  'fork.new': '分叉到新会话（当前会话保持不变）',
  'fork.cancel': '取消',
  'fork.submit': '分叉',
  'fork.notObject': '不是 JSON 对象：{error}',
  'fork.mustBeObject': '状态必须是 JSON 对象',
  'status.idle': '空闲',
  'status.running': '运行中',
  'status.waiting': '等你确认',
  'status.stopped': '已暂停',
  'status.done': '已完成',
  'status.error': '失败',
  'status.restored': '已恢复',
  'status.noState': '尚无状态',
  'run.steps': '步骤',
  'run.reasoning': '推理过程',
  'run.toolCall': '调用工具',
  'run.toolResult': '工具结果',
  'run.noArgs': '无参数',
  'run.raw': '原始 JSON',
  'run.details': '详情',
  'run.inAnswer': '内容见下方的回答',
  'kind.draft': '草稿',
  'run.node': '步骤 {node}',
  'run.error': '出错了',
  'run.finished': '已完成',
  'run.state': '状态',
  'run.goesOn': '会话将从 {nodes} 继续。',
  'run.continue': '继续',
  'run.saved': '已保存的状态',
  'run.undo': '回到检查点 #{seq}',
  'run.fork': '从检查点 #{seq} 分叉',
  'card.label': '问题',
  'card.waiting': '等你确认',
  'card.answered': '你已回答',
  'card.accept': '同意',
  'card.reject': '拒绝',
  'card.note': '备注',
  'card.optional': '可不填',
  'card.accepted': '已同意',
  'card.rejected': '已拒绝',
  'card.replied': '已在对话中回答：{text}',
  'card.readYes': '你的回复“{text}”已理解为同意。',
  'card.readNo': '你的回复“{text}”已理解为不同意。',
  'card.again': '没看懂“{text}”是同意还是不同意。请再回答一次上面的问题：比如“好的”或“不要”，也可以点它的按钮。',
  'card.dismissed': '已不再等待',
  'count.words': '{n} 个词',
  'count.chars': '{n} 字',
  'bool.yes': '是',
  'bool.no': '否',
  'note.newConversation': '与 {agent} 的新对话。',
  'note.thread': '会话 {id}。',
  'note.forked': '已把检查点 #{seq} 分叉到新会话 {id}。',
  'note.copied': '已复制到新会话 {id}。',
  'note.noAgents': '无法列出智能体：{error}',
  'thread.untitled': '会话',
  'thread.made': '{title} · {when}',
  'run.stepsCount': '步骤：{n} 步',
  'run.stepsNow': '正在进行第 {n} 步',
  'run.tool': '工具',
  'run.goesOnPlain': '这次运行停在中途，可以从这里继续。',
  'history.more': '还有后续步骤',
  'history.from': '步骤',
  'source.input': '你的消息',
  'source.step': '步骤',
  'source.loop': '步骤',
  'source.resume': '你的回答',
  'source.undo': '撤销',
  'source.fork': '分叉',
  'source.update': '修改',
  'source.copy': '复制',
  'link.preview': '打开预览图',
  'link.pdf': '打开 PDF 文件',
  'link.report': '打开报告',
  'link.file': '打开文件',
  'link.failed': '打开失败：{error}',
};

// fields are the names the page shows for common fields of states,
// questions and tool results; other fields show their key.
const fields = {
  en: {
    done_when: 'done when', revision: 'revision', metrics: 'measures', rhythm: 'rhythm', tightness: 'tightness',
    stagnation: 'stalled', truncated: 'cut short', rows: 'rows', columns: 'columns',
    forced_imperfection: 'unavoidable flaw', can_embed: 'can fit in', daily_max: 'most a day',
  },
  zh: {
    content: '内容', done_when: '完成标准', summary: '摘要', question: '问题', answer: '回答', note: '备注',
    title: '标题', items: '条目', approved: '已批准', sent: '已发送', result: '结果', results: '结果',
    message: '消息', text: '文本', steps: '步骤', goal: '目标', status: '状态', name: '名称', reply: '回复',
    health: '健康度', issues: '问题', candidates: '候选', gain: '提升', verdict: '结论', day: '日',
    done: '已完成', error: '错误', rounds: '轮数', rows: '行', columns: '列', count: '数量', sql: 'SQL', source: '来源',
    revision: '修订次数', metrics: '指标', rhythm: '节奏', tightness: '紧凑度', stagnation: '停滞', truncated: '已截断',
    plan: '计划', week: '一周', days: '日程', date: '日期', time: '时间', start: '开始', end: '结束', duration: '时长',
    reason: '原因', description: '说明', priority: '优先级', score: '得分', total: '合计', value: '数值', table: '表',
    tables: '表', query: '查询', data: '数据', tasks: '任务', task: '任务', session: '会话', state: '状态',
    profile: '概况', feasibility: '可行性', pending: '待处理', index: '序号', op: '操作', forced: '强制', imperfection: '不足之处',
    forced_imperfection: '不得不留的缺憾', accept: '同意', action: '动作', applied: '已应用', avoid: '避开', can_embed: '可穿插',
    choices: '选项', class: '类别', class_id: '课程编号', classes: '课程', current: '当前', daily_max: '每日上限', day_of_week: '星期',
    delta: '变化', difficulty: '难度', embeddable_slots: '可穿插时段', entries: '条目', events: '事件', exec: '执行',
    free_slots: '空闲时段', health_after: '调整后健康度', health_before: '调整前健康度', locked: '已锁定', moves: '调整',
    outcome: '结果', owner: '所有者', prefer: '偏好', rejected: '已拒绝', slots: '时段', start_day: '开始日', start_week: '开始周',
    strategy: '策略', subject: '科目', task_a: '任务 A', task_b: '任务 B', task_id: '任务编号', task_slots: '任务时段',
    order: '订单', id: '编号', order_id: '订单号', success: '成功', amount: '金额', item: '商品', currency: '币种', refund: '退款',
    tracking_no: '运单号', carrier: '承运商', eta_minutes: '预计分钟数', destination: '目的地', location: '位置', speed: '速度',
    volume: '音量', windows: '车窗', sunroof: '天窗', lights: '车灯', doors_locked: '车门已锁', fan: '风量', ac: '空调',
    seat_heat: '座椅加热', wipers: '雨刷', track: '曲目', playing: '正在播放', muted: '静音', logistics: '物流',
    created_at: '创建时间', updated_at: '更新时间', label: '名称', channel: '频道', media: '媒体', user: '用户', at: '时间',
    paid: '已付款', shipped: '已发货', cancelled: '已取消', reported: '已上报',
    types: '类型', type: '类型', ms: '耗时（毫秒）',
    pending_shipment: '待发货', delivered: '已送达', refunded: '已退款', in_transit: '运输中', placed: '已安排',
    course_slots: '课程时段', window: '窗口', temperature: '温度', seat: '座椅', level: '档位', position: '位置', mode: '模式', on: '开启',
  },
};

/** The catalogue: messages[lang][key] is a string with {name} parameters or a function of them. */
export const messages = { en, zh };

/**
 * addMessages adds an agent panel's own messages ({en: {...}, zh: {...}})
 * to the catalogue; a key the page has already is kept.
 */
export function addMessages(more) {
  for (const l of Object.keys(messages)) {
    for (const [k, v] of Object.entries(more?.[l] || {})) if (!(k in messages[l])) messages[l][k] = v;
  }
}

/** The languages the page speaks, with the tag each sets on <html>. */
export const languages = { en: 'en', zh: 'zh-CN' };

const STORE = 'loom.lang';

// fromBrowser is the first of the browser's languages the page speaks.
function fromBrowser() {
  for (const l of navigator.languages || [navigator.language || '']) {
    const base = String(l).toLowerCase().split('-')[0];
    if (base in messages) return base;
  }
  return 'en';
}

let current = (() => {
  const saved = localStorage.getItem(STORE);
  return saved in messages ? saved : fromBrowser();
})();

/** lang is the page's language: "en" or "zh". */
export function lang() {
  return current;
}

/** t returns the message for key with params filled in, in the page's language (English when the catalogue lacks it). */
export function t(key, params = {}) {
  const m = messages[current][key] ?? en[key];
  if (m === undefined) return key;
  if (typeof m === 'function') return m(params);
  return m.replace(/\{(\w+)\}/g, (s, name) => (name in params ? String(params[name]) : s));
}

/**
 * wordFor is a machine word an agent gives as a value (cancelled,
 * pending_shipment) in the page's language, or null when the catalogue
 * has none.
 */
export function wordFor(value) {
  if (!/^[a-z]+(?:_[a-z]+)*$/.test(value)) return null;
  return fields[current][value] ?? fields.en[value] ?? null;
}

/** fieldName is the name shown for a field key. */
export function fieldName(key) {
  const own = fields[current][key] ?? fields.en[key];
  if (own) return own;
  // A key of known words (order_status) is their names, one after another.
  const parts = String(key).split('_');
  if (current !== 'en' && parts.length > 1 && parts.every((p) => fields[current][p])) return parts.map((p) => fields[current][p]).join('');
  return String(key).replaceAll('_', ' ');
}

// The attributes a key can translate, beside the text.
const attrs = { i18nTitle: 'title', i18nPlaceholder: 'placeholder', i18nLabel: 'aria-label' };

/** translate applies the catalogue to root and everything in it. */
export function translate(root = document) {
  const args = (e) => (e.dataset.i18nArgs ? JSON.parse(e.dataset.i18nArgs) : {});
  for (const e of root.querySelectorAll('[data-i18n]')) e.textContent = t(e.dataset.i18n, args(e));
  for (const e of root.querySelectorAll('[data-i18n-field]')) e.textContent = fieldName(e.dataset.i18nField);
  for (const [k, attr] of Object.entries(attrs)) {
    const sel = '[data-' + k.replace(/[A-Z]/g, (c) => '-' + c.toLowerCase()) + ']';
    for (const e of root.querySelectorAll(sel)) e.setAttribute(attr, t(e.dataset[k], args(e)));
  }
}

/** setLang switches the page's language, keeps the choice and re-translates the page. */
export function setLang(l) {
  if (!(l in messages)) return;
  current = l;
  localStorage.setItem(STORE, l);
  document.documentElement.lang = languages[l];
  translate();
  document.dispatchEvent(new CustomEvent('loom:lang', { detail: l }));
}

// A CJK character: Han, kana and Hangul.
const wideChar = /[\u1100-\u115f\u2e80-\u2fdf\u3041-\u33ff\u3400-\u4dbf\u4e00-\u9fff\ua960-\ua97f\uac00-\ud7a3\uf900-\ufaff]/gu;
const word = /[\p{L}\p{N}]+(?:['’.-][\p{L}\p{N}]+)*/gu;

/**
 * countText counts a text as a reader would: each CJK character is one,
 * each run of other letters or digits is one word (punctuation counts
 * for nothing). It returns {n, unit}: unit "chars" when CJK characters
 * are most of it, else "words".
 */
export function countText(text) {
  const cjk = (text.match(wideChar) || []).length;
  const rest = text.replace(wideChar, ' ');
  const words = (rest.match(word) || []).length;
  return { n: cjk + words, unit: cjk > words ? 'chars' : 'words' };
}

document.documentElement.lang = languages[current];
