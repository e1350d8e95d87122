// capable ui: the page. State comes from GET /api/servers (the same JSON as
// `capable inspect --json` per server) and one event stream (/api/events); commands
// go up as JSON POSTs. Plain modules, no build step, nothing fetched from elsewhere.

import { h, fill, badge, get, post, errorText, startSession, timeoutField } from './dom.js';
import { follow } from './stream.js';
import { overview } from './overview.js';
import { resourcesPanel, watchEvent, watchRead } from './resources.js';
import { toolsPanel, promptsPanel, progressEvent, taskEvent } from './tools.js';
import { tasksPanel } from './tasks.js';
import { skillsPanel } from './skills.js';
import { auditPanel, logPanel, logEvent, stderrPanel } from './monitor.js';
import { elicitEvent } from './elicit.js';
import { sampleEvent } from './sampling.js';
import { serverHead, loginEvent } from './head.js';
import { rootsPanel } from './roots.js';
import { historyPanel, historyEvent } from './history.js';

const TABS = [
  ['overview', 'Overview'], ['resources', 'Resources'], ['tools', 'Tools'], ['prompts', 'Prompts'],
  ['tasks', 'Tasks'], ['skills', 'Skills'], ['roots', 'Roots'], ['audit', 'Audit'], ['history', 'History'],
  ['log', 'Messages'], ['stderr', 'Stderr'],
];

/** The whole page's state. */
export const app = {
  servers: [],        // from /api/servers
  selected: null,     // a server's name
  tab: 'overview',
  panels: new Map(),  // "server/tab" -> element, kept across re-renders
};

export function current() {
  return app.servers.find((s) => s.name === app.selected) || null;
}

/** The panel element of a tab of a server, made once. */
export function panel(server, tab, make) {
  const key = server + '\u0000' + tab;
  let el = app.panels.get(key);
  if (!el) {
    el = h('section', { class: 'panel', 'data-testid': 'panel-' + tab, role: 'tabpanel' });
    app.panels.set(key, el);
    make(el);
  }
  return el;
}

let refreshing = null;
let again = false;

/** Reads /api/servers again and re-renders (coalesced). */
export async function refresh() {
  if (refreshing) { again = true; return refreshing; }
  refreshing = (async () => {
    do {
      again = false;
      try {
        const r = await get('/api/servers');
        if (r.ok) app.servers = r.body;
      } catch (_) { /* the stream's state shows it */ }
      render();
    } while (again);
    refreshing = null;
  })();
  return refreshing;
}

/** What has the focus, so a re-render can give it back (keyboard users keep their place). */
function focusKey() {
  const el = document.activeElement;
  if (!el || !el.dataset || !el.dataset.testid) return null;
  const row = el.parentElement && el.parentElement.closest('[data-uri]');
  return (row ? '[data-uri="' + CSS.escape(row.dataset.uri) + '"] ' : '') +
    '[data-testid="' + el.dataset.testid + '"]' +
    (el.dataset.name !== undefined ? '[data-name="' + CSS.escape(el.dataset.name) + '"]' : '') +
    (el.dataset.tab !== undefined ? '[data-tab="' + el.dataset.tab + '"]' : '');
}

/** Gives the focus back to the element that had it — only when it is unambiguous. */
function restoreFocus(key) {
  if (!key || (document.activeElement && document.activeElement !== document.body)) return;
  const found = document.querySelectorAll(key);
  if (found.length === 1) found[0].focus();
}

function render() {
  // The config read anew may have removed the server shown: the first one instead.
  if (!app.servers.some((s) => s.name === app.selected)) app.selected = app.servers.length ? app.servers[0].name : null;
  const key = focusKey();
  renderNav();
  renderMain();
  restoreFocus(key);
}

function renderNav() {
  const nav = document.getElementById('servers');
  fill(nav, app.servers.map((s) => h('button', {
    type: 'button', 'data-testid': 'server', 'data-name': s.name,
    'aria-current': s.name === app.selected ? 'true' : 'false',
    onclick: () => { app.selected = s.name; render(); },
  }, h('span', {}, s.name),
  (s.pins || []).length ? badge('held ' + s.pins.length, 'failed', { 'data-testid': 'server-held', title: 'definitions held back by the pins: see its Overview' }) : null,
  badge(s.state, s.state, { 'data-testid': 'server-state' }))));
}

/**
 * The tabs of what the server did not declare (resources, tools, prompts, tasks),
 * once it said what it declares: shown, but marked (their panels say so too).
 */
function undeclared(s) {
  const out = new Set();
  if (!s.inspect) return out;
  for (const m of s.matrix || []) if (!m.present && ['resources', 'tools', 'prompts'].includes(m.capability)) out.add(m.capability);
  const caps = s.inspect.capabilities;
  if (caps && typeof caps === 'object' && !caps.tasks) out.add('tasks');
  return out;
}

function renderMain() {
  const main = document.getElementById('main');
  const s = current();
  if (!s) { main.head = null; fill(main, h('p', { class: 'muted' }, 'No servers.')); return; }
  const head = serverHead(s, command);
  const absent = undeclared(s);
  const tabs = h('div', { class: 'tabs', role: 'tablist', 'aria-label': 'Server views', onkeydown: tabKeys },
    TABS.map(([id, label]) => h('button', {
      type: 'button', role: 'tab', 'data-testid': 'tab-' + id, 'data-tab': id,
      'aria-selected': app.tab === id ? 'true' : 'false', tabindex: app.tab === id ? '0' : '-1',
      class: absent.has(id) ? 'absent' : null, 'data-declared': absent.has(id) ? 'false' : null,
      title: absent.has(id) ? s.name + ' declared no ' + id : null,
      onclick: () => selectTab(id),
    }, label, absent.has(id) ? h('span', { class: 'sr-only' }, ' (not declared)') : null)));
  // The panel is swapped only when it is another one: a form being filled in keeps
  // its focus and what was typed across live updates.
  if (!main.head) {
    main.head = h('div', {});
    main.tabs = h('div', {});
    main.content = h('div', {});
    fill(main, main.head, main.tabs, main.content);
  }
  fill(main.head, head);
  fill(main.tabs, tabs);
  const content = tabContent(s);
  if (main.content.firstChild !== content) fill(main.content, content);
}

/** Shows tab `id`; the stderr panel reads the server's tail afresh as it opens. */
function selectTab(id) {
  app.tab = id;
  renderMain();
  if (id === 'stderr') refresh();
}

function tabKeys(e) {
  const i = TABS.findIndex(([id]) => id === app.tab);
  let j = i;
  if (e.key === 'ArrowRight') j = (i + 1) % TABS.length;
  else if (e.key === 'ArrowLeft') j = (i - 1 + TABS.length) % TABS.length;
  else if (e.key === 'Home') j = 0;
  else if (e.key === 'End') j = TABS.length - 1;
  else return;
  e.preventDefault();
  selectTab(TABS[j][0]);
  const b = document.querySelector('[data-tab="' + app.tab + '"]');
  if (b) b.focus();
}

function tabContent(s) {
  switch (app.tab) {
    case 'overview': return overview(s);
    case 'resources': return resourcesPanel(s);
    case 'tools': return toolsPanel(s);
    case 'prompts': return promptsPanel(s);
    case 'tasks': return panel(s.name, 'tasks', (el) => tasksPanel(el, s.name));
    case 'skills': return panel(s.name, 'skills', (el) => skillsPanel(el, s.name));
    case 'roots': return panel(s.name, 'roots', (el) => rootsPanel(el, s.name));
    case 'audit': return panel(s.name, 'audit', (el) => auditPanel(el, s.name));
    case 'history': return panel(s.name, 'history', (el) => historyPanel(el, s.name));
    case 'log': return panel(s.name, 'log', (el) => logPanel(el, s.name, () => app.servers.find((x) => x.name === s.name)));
    case 'stderr': return stderrPanel(s, refresh);
  }
  return h('div', {});
}

async function command(path, server) {
  const r = await post(path, { server });
  if (!r.ok) alert(errorText(r));
  refresh();
}

/**
 * The config read anew: a file that cannot be used is said in a banner (the servers
 * shown stay as they were) until a read succeeds.
 */
function configBanner(why) {
  const el = document.getElementById('config');
  el.textContent = why ? 'The config was read anew but cannot be used, so nothing changed: ' + why : '';
  el.hidden = !why;
}

/** The event stream: each kind of event to the panel that shows it. */
function listen() {
  const live = document.getElementById('live');
  const changed = () => refresh();
  follow({
    msg: (d) => { logEvent(d); watchRead(d); }, watch: watchEvent, progress: progressEvent, task: taskEvent,
    elicit: elicitEvent, sample: sampleEvent, history: historyEvent, login: (d) => { loginEvent(d); refresh(); },
    // A server's stderr is followed while its panel is shown (each line re-reads the
    // tail, coalesced); another panel reads it when it is opened.
    stderr: (d) => { if (d.server === app.selected && app.tab === 'stderr') refresh(); },
    state: changed, lists: changed, violation: changed, notice: changed, pins: changed,
    reloaded: () => { configBanner(null); refresh(); }, reload_failed: (d) => configBanner(d.why),
  }, (text, on) => { live.textContent = text; live.className = on ? 'live on' : 'live'; });
}

timeoutField(document.getElementById('timeout'));
if (await startSession()) {
  listen();
  refresh();
} else {
  document.getElementById('live').textContent = 'no session';
  fill(document.getElementById('main'), h('p', { class: 'reason', 'data-testid': 'no-session' },
    'This tab has no session with capable ui: open the URL it printed (with its token).'));
}
