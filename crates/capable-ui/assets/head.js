// A server's head: its name, state, era and version, what it runs, why it is down;
// connect and disconnect; a login from the page for an HTTP server refused for want
// of authorization (the same flow as `capable auth login`, the token in the same
// store); the server as an `mcpServers` entry or a `capable` command, to copy; and
// the session's report, one HTML file to attach to a bug report.

import { h, fill, badge, post, errorText, apiHeaders, download } from './dom.js';

/** What each server's head shows below its buttons, kept across re-renders. */
const extras = new Map();

function extra(server) {
  let e = extras.get(server);
  if (!e) {
    e = { login: h('div', {}), export: h('div', {}), report: h('div', {}) };
    e.el = h('div', {}, e.login, e.export, e.report);
    extras.set(server, e);
  }
  return e;
}

async function login(server) {
  const e = extra(server);
  fill(e.login, h('p', { class: 'muted' }, 'Starting the login…'));
  const r = await post('/api/login', { server });
  if (!r.ok) { fill(e.login, h('p', { class: 'errors', 'data-testid': 'login-error' }, errorText(r))); return; }
  if (r.body.done) { fill(e.login, h('p', { class: 'ok', 'data-testid': 'login-state' }, 'Authorized; connecting again…')); return; }
  fill(e.login, h('p', { class: 'row', 'data-testid': 'login-state' },
    'Authorize capable in the page of ' + server + '\'s authorization server, then come back here: ',
    h('a', { href: r.body.url, target: '_blank', rel: 'noopener noreferrer', 'data-testid': 'login-link' }, 'open the authorization page')));
}

/** A `login` event from the stream: how a login started here ended. */
export function loginEvent(d) {
  const e = extra(d.server);
  const words = d.state === 'done' ? 'Logged in; the token is stored, and the server connects with it.'
    : d.state === 'not_required' ? 'The server asks for no authorization.'
      : 'The login failed: ' + (d.reason || '');
  fill(e.login, h('p', { class: d.state === 'failed' ? 'errors' : 'ok', 'data-testid': 'login-state' }, words));
}

async function exportServer(server) {
  const e = extra(server);
  const r = await post('/api/export', { server });
  if (!r.ok) { fill(e.export, h('p', { class: 'errors' }, errorText(r))); return; }
  const entry = JSON.stringify({ mcpServers: r.body.mcpServers }, null, 2);
  const copy = (text) => () => navigator.clipboard && navigator.clipboard.writeText(text);
  fill(e.export, h('details', { open: true, 'data-testid': 'export' }, h('summary', {}, 'Export (secret values show as ***: put yours back)'),
    h('div', { class: 'row' }, h('strong', {}, 'mcpServers entry'), h('button', { type: 'button', 'data-testid': 'copy-entry', onclick: copy(entry) }, 'Copy')),
    h('pre', { 'data-testid': 'export-entry' }, entry),
    h('div', { class: 'row' }, h('strong', {}, 'capable command'), h('button', { type: 'button', 'data-testid': 'copy-command', onclick: copy(r.body.command) }, 'Copy')),
    h('pre', { 'data-testid': 'export-command' }, r.body.command)));
}

async function report(server) {
  const e = extra(server);
  const r = await fetch('/api/report', {
    method: 'POST', credentials: 'same-origin', body: JSON.stringify({ server }),
    headers: apiHeaders({ 'Content-Type': 'application/json' }),
  });
  if (!r.ok) { fill(e.report, h('p', { class: 'errors' }, 'HTTP ' + r.status)); return; }
  const html = await r.text();
  download('capable-report-' + server.replace(/[^A-Za-z0-9._-]/g, '_') + '.html', html, 'text/html');
  fill(e.report, h('p', { class: 'muted', 'data-testid': 'report-done' }, 'Report downloaded (' + html.length + ' characters).'));
}

/** The head of server `s`; `command(path, server)` connects or disconnects. */
export function serverHead(s, command) {
  const info = s.inspect ? s.inspect.serverInfo : null;
  return h('div', { class: 'card', 'data-testid': 'server-head' },
    h('div', { class: 'row' },
      h('h2', {}, s.name),
      badge(s.state, s.state, { 'data-testid': 'state' }),
      s.inspect ? badge(s.inspect.era + ' · ' + s.inspect.protocolVersion, 'era', { 'data-testid': 'version' }) : null,
      info ? h('span', { class: 'muted' }, info.name + ' ' + info.version) : null,
      h('span', { class: 'grow' }),
      s.login ? h('button', { type: 'button', class: 'primary', 'data-testid': 'login', onclick: () => login(s.name) }, 'Log in') : null,
      h('button', { type: 'button', 'data-testid': 'connect', onclick: () => command('/api/connect', s.name) },
        s.state === 'disconnected' ? 'Connect' : 'Reconnect'),
      h('button', { type: 'button', 'data-testid': 'disconnect', disabled: s.state === 'disconnected', onclick: () => command('/api/disconnect', s.name) }, 'Disconnect'),
      h('button', { type: 'button', 'data-testid': 'export-open', onclick: () => exportServer(s.name) }, 'Export'),
      h('button', { type: 'button', 'data-testid': 'report', onclick: () => report(s.name) }, 'Report')),
    h('div', { class: 'muted mono' }, s.target),
    s.reason ? h('div', { class: 'reason', 'data-testid': 'reason' }, s.reason) : null,
    extra(s.name).el);
}
