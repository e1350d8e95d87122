// What happened: the audit (capable::audit, on a session of its own) with its
// evidence and its Markdown report; every message sent and received, filterable by
// method and direction, each copyable as JSON, the server's log messages shown by
// level (and its level set, where it declared logging); the server's stderr.

import { h, fill, json, post, errorText, download, clock, badge } from './dom.js';

const MAX_LOG = 3000;
/** Per server: {rows: [...], methods: Map(id -> method), view: {el, method, dir} | null}. */
const logs = new Map();

function logOf(server) {
  let l = logs.get(server);
  if (!l) { l = { rows: [], methods: new Map(), view: null }; logs.set(server, l); }
  return l;
}

/** A `msg` event from the stream. */
export function logEvent(d) {
  const l = logOf(d.server);
  const m = d.message || {};
  // A response is shown under its request's method.
  let method = d.method;
  const key = d.dir === 'sent' ? 'sent:' + JSON.stringify(m.id) : 'received:' + JSON.stringify(m.id);
  if (method && m.id !== undefined) l.methods.set(key, method);
  if (!method && m.id !== undefined) {
    method = l.methods.get((d.dir === 'sent' ? 'received:' : 'sent:') + JSON.stringify(m.id));
    if (method) method = method + ' →';
  }
  const row = { at: d.at, dir: d.dir, method: method || '', tag: d.tag, message: m };
  l.rows.push(row);
  if (l.rows.length > MAX_LOG) l.rows.shift();
  if (l.view && matches(l.view, row)) {
    l.view.list.appendChild(rowEl(row));
    while (l.view.list.childElementCount > MAX_LOG) l.view.list.firstElementChild.remove();
    l.view.count.textContent = l.rows.length + ' messages';
  }
}

function matches(view, row) {
  const dir = view.dir.value;
  const q = view.method.value.trim().toLowerCase();
  return (dir === 'all' || dir === row.dir) && (!q || row.method.toLowerCase().includes(q));
}

/** A server's log message (`notifications/message`): its level, logger and data. */
function logLine(m) {
  const p = m.params || {};
  const data = typeof p.data === 'string' ? p.data : JSON.stringify(p.data);
  return h('div', { class: 'logline', 'data-testid': 'server-log', 'data-level': p.level || '' },
    badge(p.level || '?', /error|critical|alert|emergency/.test(p.level) ? 'failed' : p.level === 'warning' ? 'starting' : 'no'),
    p.logger ? h('span', { class: 'muted' }, ' ' + p.logger + ': ') : ' ', data);
}

function rowEl(row) {
  const copy = h('button', { type: 'button', 'aria-label': 'copy as JSON', onclick: () => navigator.clipboard && navigator.clipboard.writeText(JSON.stringify(row.message)) }, 'copy');
  return h('div', { class: 'msg ' + row.dir, 'data-testid': 'log-row', 'data-dir': row.dir, 'data-method': row.method },
    h('span', { class: 'muted mono' }, clock(row.at)),
    h('span', { class: 'dir', title: row.dir }, row.dir === 'sent' ? '→' : '←'),
    h('span', { class: 'mono' }, row.method || (row.message.error ? 'error' : ''), row.tag ? ' [' + row.tag + ']' : ''),
    h('div', {}, row.method === 'notifications/message' ? logLine(row.message) : null, h('pre', {}, JSON.stringify(row.message))),
    copy);
}

const LEVELS = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'];

/**
 * The server's log level, where it declared `logging` (else nothing is offered, and
 * nothing can be sent): `logging/setLevel`, or in 2026-07-28 the level each later
 * request carries.
 */
function levelControl(server, now) {
  const s = now();
  const logging = s && (s.matrix || []).find((m) => m.capability === 'logging');
  if (!logging || !logging.present) return h('span', { class: 'muted', 'data-testid': 'no-logging' }, 'no logging declared');
  const said = h('span', { class: 'muted', 'data-testid': 'log-level-set' });
  const select = h('select', { 'aria-label': 'server log level', 'data-testid': 'log-level' },
    h('option', { value: '' }, 'log level…'), LEVELS.map((l) => h('option', { value: l }, l)));
  select.addEventListener('change', async () => {
    if (!select.value) return;
    const r = await post('/api/log-level', { server, level: select.value });
    said.textContent = r.ok ? 'asked for ' + r.body.level + ' and above' : errorText(r);
  });
  return h('span', { class: 'row' }, select, said);
}

export function logPanel(el, server, now) {
  const l = logOf(server);
  const method = h('input', { type: 'search', placeholder: 'method contains…', 'aria-label': 'filter by method', 'data-testid': 'log-method' });
  const dir = h('select', { 'aria-label': 'direction', 'data-testid': 'log-dir' },
    h('option', { value: 'all' }, 'both ways'), h('option', { value: 'sent' }, 'sent →'), h('option', { value: 'received' }, 'received ←'));
  const list = h('div', { class: 'log', 'data-testid': 'log' });
  const count = h('span', { class: 'muted' });
  const view = { el, method, dir, list, count };
  const redraw = () => {
    fill(list, l.rows.filter((r) => matches(view, r)).map(rowEl));
    count.textContent = l.rows.length + ' messages';
  };
  method.addEventListener('input', redraw);
  dir.addEventListener('change', redraw);
  const copyAll = h('button', { type: 'button', onclick: () => navigator.clipboard && navigator.clipboard.writeText(JSON.stringify(l.rows.filter((r) => matches(view, r)).map((r) => r.message), null, 2)) }, 'copy shown as JSON');
  el.append(h('div', { class: 'row' }, method, dir, copyAll, count, h('span', { class: 'grow' }), levelControl(server, now)), list);
  l.view = view;
  redraw();
}

function outcome(o) {
  return badge(o, o === 'ok' ? 'yes' : o === 'violation' ? 'failed' : 'no');
}

function report(body) {
  const r = body.report;
  const counts = {};
  for (const c of r.checks) counts[c.outcome] = (counts[c.outcome] || 0) + 1;
  return h('div', { 'data-testid': 'audit-result' },
    h('div', { class: 'row' },
      h('strong', {}, r.server.name + ' ' + r.server.version), h('span', { class: 'muted' }, r.protocolVersion + ' (' + r.era + ' era)'),
      Object.entries(counts).map(([k, n]) => h('span', {}, outcome(k), ' ' + n)),
      h('span', { class: 'grow' }),
      h('button', { type: 'button', 'data-testid': 'audit-download', onclick: () => download('audit-' + r.server.name.replace(/[^A-Za-z0-9._-]/g, '_') + '.md', body.markdown, 'text/markdown') }, 'Download Markdown')),
    h('p', { 'data-testid': 'audit-verdict', class: r.violations.length ? 'bad' : 'ok' },
      r.violations.length ? r.violations.length + ' contract violation' + (r.violations.length === 1 ? '' : 's') : 'No contract violation.'),
    h('table', {},
      h('thead', {}, h('tr', {}, h('th', {}, 'capability'), h('th', {}, 'check'), h('th', {}, 'outcome'), h('th', {}, 'detail'))),
      h('tbody', {}, r.checks.map((c) => h('tr', { 'data-testid': 'audit-check', 'data-outcome': c.outcome },
        h('td', {}, c.capability), h('td', { class: 'mono' }, c.check), h('td', {}, outcome(c.outcome)), h('td', {}, c.detail))))),
    r.violations.map((f) => h('div', { class: 'card violation', 'data-testid': 'audit-finding' },
      h('h4', {}, f.kind + ': `' + f.capability + '` ' + f.method), h('p', {}, f.detail),
      h('div', { class: 'grid2' },
        h('div', {}, h('h3', {}, 'request (sent)'), json(f.request)),
        h('div', {}, h('h3', {}, 'response (received)'), json(f.response))))),
    r.notices.length ? h('div', { class: 'card' }, h('h3', {}, 'Notices'), json(r.notices)) : null);
}

export function auditPanel(el, server) {
  const out = h('div', {});
  const run = h('button', { type: 'button', class: 'primary', 'data-testid': 'run-audit' }, 'Run the audit');
  run.addEventListener('click', async () => {
    run.disabled = true;
    fill(out, h('p', { class: 'muted' }, 'Auditing on a session of its own…'));
    const r = await post('/api/audit', { server });
    run.disabled = false;
    fill(out, r.ok ? report(r.body) : h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r)));
  });
  el.append(
    h('p', { class: 'muted' }, 'Probes every declared capability with safe read-only requests and validates every result against the official schema of the negotiated version. Tools are never called.'),
    run, out);
}

export function stderrPanel(s, refresh) {
  return h('section', { class: 'panel', 'data-testid': 'panel-stderr' },
    h('div', { class: 'row' }, h('span', { class: 'muted' }, 'What the server wrote to stderr (stdio servers): its first lines and its last, followed live.'),
      h('button', { type: 'button', onclick: refresh }, 'Refresh')),
    h('pre', { 'data-testid': 'stderr' }, s.stderr || (s.reason || '(nothing)')));
}
