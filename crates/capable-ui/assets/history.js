// The history of the calls the page made to a server (tools/call, resources/read,
// prompts/get, ping, …): when, how long, how it ended, what was sent — each one
// sent again, as it was, with Replay. It comes from the inspector (GET /api/history,
// then `history` events), so a reload keeps it.

import { h, fill, json, get, apiHeaders, errorText, badge, clock } from './dom.js';

/** Every entry seen, by id. */
const seen = new Map();
/** The open panels, by server. */
const views = new Map();

/** What a call was about, in a few words: the tool, the URI, the prompt. */
function about(e) {
  const b = e.body || {};
  return b.tool || b.name || b.uri || (b.argument ? b.argument + ' = ' + (b.value || '') : '') || b.level || b.id || '';
}

/** How a call ended at the server, in words: a result, the tool's own error, a
 * JSON-RPC error with its code, cancelled, timed out, refused by capable (nothing
 * sent) — never the HTTP status of capable's own API. */
function shown(e) {
  const rpc = e.response && e.response.error;
  switch (e.outcome) {
    case 'result': return 'result';
    case 'tool_error': return 'tool error';
    case 'rpc_error': return 'JSON-RPC error' + (rpc ? ' ' + rpc.code + ': ' + rpc.message : ': ' + (e.error || ''));
    case 'cancelled': return 'cancelled';
    case 'timeout': return 'timed out';
    case 'refused': return 'refused, not sent: ' + (e.error || '');
    default: return (e.outcome || 'failed') + ': ' + (e.error || '');
  }
}

/** Replays by the id of the entry they made: the entry replayed and the answer. */
const replays = new Map();

function rowEl(e, out) {
  const replay = async () => {
    const body = Object.assign({}, e.body);
    delete body.call; // a new call gets its own id
    const r = await fetch(e.path, {
      method: 'POST', headers: apiHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify(body), credentials: 'same-origin',
    });
    const made = Number(r.headers.get('X-Capable-Entry'));
    let answer = null;
    try { answer = await r.json(); } catch (_) { answer = null; }
    const said = { of: e, ok: r.ok, status: r.status, body: answer };
    if (!made) { fill(out, h('p', { class: 'errors', 'data-testid': 'replayed' }, errorText(said))); return; }
    replays.set(made, said);
    const row = document.querySelector('[data-testid=history-entry][data-id="' + made + '"]');
    if (row) row.replaceWith(rowEl(seen.get(made), out));
    const drawn = document.querySelector('[data-testid=history-entry][data-id="' + made + '"]');
    if (drawn) drawn.scrollIntoView({ block: 'nearest' });
  };
  const again = replays.get(e.id);
  const outcomeKind = e.ok ? 'yes' : (e.outcome === 'cancelled' ? 'warn' : 'failed');
  return h('div', { class: 'item', 'data-testid': 'history-entry', 'data-id': e.id, 'data-n': e.n, 'data-method': e.method, 'data-ok': String(e.ok), 'data-outcome': e.outcome, 'data-replay-of': again ? again.of.n : null },
    h('span', { class: 'muted mono', 'data-testid': 'history-n' }, '#' + (e.n || e.id)), h('span', { class: 'muted mono' }, clock(e.at)),
    h('code', {}, e.method), h('span', {}, about(e)),
    h('span', { class: 'mono', 'data-testid': 'history-ms' }, e.ms + ' ms'),
    badge(shown(e), outcomeKind, { 'data-testid': 'history-outcome' }),
    h('span', { class: 'grow' }),
    e.replayable ? h('button', { type: 'button', 'data-testid': 'replay', onclick: replay }, 'Replay') : null,
    again ? h('div', { class: 'card full', 'data-testid': 'replayed' },
      h('h4', {}, 'Replay of #' + again.of.n + ' (' + e.method + ' ' + about(e) + ')'),
      again.ok ? json(again.body) : h('p', { class: 'errors' }, errorText(again))) : null,
    h('details', { class: 'full' }, h('summary', {}, 'request (sent)'), json(e.request === null ? { none: 'refused by capable; nothing was sent' } : (e.request || e.body))),
    h('details', { class: 'full', 'data-testid': 'history-response' }, h('summary', {}, 'response (received)'), json(e.response)));
}

/** Draws a panel's entries again, oldest first. */
function redraw(v, server) {
  const mine = [...seen.values()].filter((e) => e.server === server).sort((a, b) => a.id - b.id);
  fill(v.list, mine.map((e) => rowEl(e, v.out)));
  v.last = mine.length ? mine[mine.length - 1].id : 0;
}

/** A `history` event from the stream (or an entry of GET /api/history). */
export function historyEvent(e) {
  if (seen.has(e.id)) return;
  seen.set(e.id, e);
  const v = views.get(e.server);
  if (!v) return;
  if (e.id > v.last) { v.list.appendChild(rowEl(e, v.out)); v.last = e.id; } else redraw(v, e.server);
}

export function historyPanel(el, server) {
  const v = { list: h('div', { class: 'list', 'data-testid': 'history' }), out: h('div', {}), last: 0 };
  views.set(server, v);
  el.append(h('p', { class: 'muted' }, 'Every call this page made to ' + server + ', oldest first: how long it took, how it ended at the server, the JSON-RPC request and response; Replay sends one again as it was (its result comes with its new entry).'), v.out, v.list);
  redraw(v, server);
  get('/api/history?server=' + encodeURIComponent(server)).then((r) => {
    if (r.ok) for (const e of r.body) historyEvent(e);
  });
}
