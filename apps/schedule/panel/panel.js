// The scheduler's panel on Loom's web page: the week as a timetable, a
// column a day and a row a class period, courses and study tasks where
// they are (GET /api/v1/schedule/week), the tasks still without a place
// and the times kept free. The page imports this module and calls its
// default export with what it offers (host); the panel builds its markup
// with DOM calls only.

const words = {
  en: {
    'week.h': 'Week',
    'week.none': 'No timetable yet.',
    'week.failed': 'Could not load the week: {error}',
    'week.summary': 'Week {week} · health {health}',
    'week.summaryWeeks': 'Weeks {from}–{to} · health {health}',
    'week.day': '{day}',
    'week.dayWeek': '{day}, week {week}',
    'week.slot': 'Period {n}',
    'week.pending': 'Not placed yet: {names}',
    'week.avoid': 'Kept free: {text}',
    'week.course': 'course',
    'week.task': 'study task',
    'week.avoided': 'on a time kept free',
    'week.entry': '{name}, {kind}, {time}',
    'week.dow.1': 'Mon', 'week.dow.2': 'Tue', 'week.dow.3': 'Wed', 'week.dow.4': 'Thu',
    'week.dow.5': 'Fri', 'week.dow.6': 'Sat', 'week.dow.7': 'Sun',
    'week.label': 'Timetable of the week',
  },
  zh: {
    'week.h': '本周',
    'week.none': '还没有课表。',
    'week.failed': '课表加载失败：{error}',
    'week.summary': '第 {week} 周 · 健康度 {health}',
    'week.summaryWeeks': '第 {from}–{to} 周 · 健康度 {health}',
    'week.day': '{day}',
    'week.dayWeek': '{day}（第 {week} 周）',
    'week.slot': '第 {n} 节',
    'week.pending': '还没排上：{names}',
    'week.avoid': '保持空闲：{text}',
    'week.course': '课程',
    'week.task': '学习任务',
    'week.avoided': '排在了要保持空闲的时间',
    'week.entry': '{name}，{kind}，{time}',
    'week.dow.1': '周一', 'week.dow.2': '周二', 'week.dow.3': '周三', 'week.dow.4': '周四',
    'week.dow.5': '周五', 'week.dow.6': '周六', 'week.dow.7': '周日',
    'week.label': '本周课表',
  },
};

// SLOTS is the number of class periods in a day.
const SLOTS = 12;

// panel makes the panel; the page shows element beside the chat and calls
// refresh when the thread changes or a run ends.
export default function panel(host) {
  const { el, t, setMsg, api } = host;
  host.words(words);
  let seq = 0;
  let last = null; // the week drawn, drawn again in the other language

  const note = el('p', { id: 'week-note', class: 'muted small', role: 'status', i18n: 'week.none' });
  const grid = el('div', { id: 'week-grid', class: 'week-grid', role: 'table', i18nLabel: 'week.label' });
  const scroller = el('div', { class: 'week-scroll', tabindex: 0 }, grid);
  const extra = el('div', { class: 'week-extra muted small' });
  const element = el('section', { id: 'week-panel', class: 'panel agent-panel', 'aria-labelledby': 'week-h' },
    el('div', { class: 'panel-head' },
      el('h2', { id: 'week-h', i18n: 'week.h' }),
      el('div', { class: 'tools' }, el('button', { type: 'button', i18n: 'history.refresh', onclick: () => refresh() }))),
    note, scroller, extra);

  // dayHead names a day: its day of the week, and its week when the
  // window spans more than one.
  function dayHead(d, weeks) {
    const day = t('week.dow.' + d.day_of_week);
    return el('div', { class: 'wk-day', role: 'columnheader', dataset: { day: d.day, dow: d.day_of_week },
      text: weeks ? t('week.dayWeek', { day, week: d.week }) : t('week.day', { day }) });
  }

  function entry(e, col) {
    const kind = e.kind === 'course' ? 'week.course' : 'week.task';
    const cell = el('div', {
      class: `wk-entry ${e.kind}` + (e.avoided ? ' avoided' : ''), role: 'cell',
      dataset: { id: e.id, kind: e.kind, from: e.from_slot, to: e.to_slot },
      title: e.time ? `${e.name} · ${e.time}` : e.name,
      style: `grid-column: ${col}; grid-row: ${e.from_slot + 1} / ${e.to_slot + 2}`,
    }, el('span', { class: 'wk-name', text: e.name }), e.time ? el('span', { class: 'wk-time', text: e.time }) : null,
    e.avoided ? el('span', { class: 'wk-flag', i18n: 'week.avoided' }) : null);
    cell.setAttribute('aria-label', t('week.entry', { name: e.name, kind: t(kind), time: e.time || '' }));
    return cell;
  }

  function draw(w) {
    const weeks = new Set(w.days.map((d) => d.week));
    const kids = [el('div', { class: 'wk-corner' })];
    w.days.forEach((d, i) => {
      const h = dayHead(d, weeks.size > 1);
      h.style.gridColumn = String(i + 2);
      kids.push(h);
    });
    for (let n = 1; n <= SLOTS; n++) {
      const s = el('div', { class: 'wk-slot', role: 'rowheader', text: String(n), i18nTitle: ['week.slot', { n }] });
      s.style.gridRow = String(n + 1);
      kids.push(s);
      w.days.forEach((_, i) => {
        const c = el('div', { class: 'wk-cell' + (n % 2 ? '' : ' even') });
        c.style.gridColumn = String(i + 2);
        c.style.gridRow = String(n + 1);
        kids.push(c);
      });
    }
    w.days.forEach((d, i) => { for (const e of d.entries) kids.push(entry(e, i + 2)); });
    grid.style.gridTemplateColumns = `2rem repeat(${w.days.length}, minmax(4.6rem, 1fr))`;
    grid.replaceChildren(...kids);
    const lines = [];
    if (w.pending.length) lines.push(el('p', { class: 'wk-pending', i18n: ['week.pending', { names: w.pending.map((e) => e.name).join('、') }] }));
    if (w.avoid_text) lines.push(el('p', { class: 'wk-avoid', i18n: ['week.avoid', { text: w.avoid_text }] }));
    extra.replaceChildren(...lines);
    const ws = [...weeks].sort((a, b) => a - b);
    if (ws.length > 1) setMsg(note, 'week.summaryWeeks', { from: ws[0], to: ws[ws.length - 1], health: w.health });
    else setMsg(note, 'week.summary', { week: ws[0] ?? '', health: w.health });
  }

  // refresh draws the caller's week as it is now.
  async function refresh() {
    const mine = ++seq;
    try {
      const w = await api('GET', '/api/v1/schedule/week');
      if (mine !== seq) return;
      if (!w?.days?.length) {
        grid.replaceChildren();
        setMsg(note, 'week.none');
        return;
      }
      last = w;
      draw(w);
    } catch (e) {
      if (mine === seq) setMsg(note, 'week.failed', { error: e.message });
    }
  }

  const redraw = () => { if (last) draw(last); };
  document.addEventListener('loom:lang', redraw);
  return { element, refresh, close: () => document.removeEventListener('loom:lang', redraw) };
}
