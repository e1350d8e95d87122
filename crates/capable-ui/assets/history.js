// The history of the calls the page made to a server (tools/call, resources/read,
// prompts/get, ping, …): when, how long, how it ended, what was sent — each one
// sent again, as it was, with Replay. It comes from the inspector (GET /api/history,
// then `history` events), so a reload keeps it.

import { h, fill, json, get, post, errorText, badge, clock } from './dom.js';

/** Every entry seen, by id. */
const seen = new Map();
/** The open panels, by server. */
const views = new Map();

/** What a call was about, in a few words: the tool, the URI, the prompt. */
function about(e) {
  const b = e.body || {};
  return b.tool || b.name || b.uri || (b.argument ? b.argument + ' = ' + (b.value || '') : '') || b.level || b.id || '';
}

/** How a call ended, as the server had it: a result, the tool's own error (HTTP
 * 200 all the same), or the error it was answered with. */
function shown(e) {
  if (e.outcome === 'tool_error') return 'tool error';
  return e.ok ? String(e.status) : e.status + ' ' + (e.error || '');
}

function rowEl(e, out) {
  const replay = async () => {
    const body = Object.assign({}, e.body);
    delete body.call; // a new call gets its own id
    const r = await post(e.path, body);
    fill(out, h('div', { class: 'card', 'data-testid': 'replayed' },
      h('h4', {}, 'Replayed #' + e.id + ' (' + e.method + ' ' + about(e) + ')'),
      r.ok ? json(r.body) : h('p', { class: 'errors' }, errorText(r))));
  };
  return h('div', { class: 'item', 'data-testid': 'history-entry', 'data-method': e.method, 'data-ok': String(e.ok), 'data-outcome': e.outcome },
    h('span', { class: 'muted mono' }, '#' + e.id + ' ' + clock(e.at)),
    h('code', {}, e.method), h('span', {}, about(e)),
    h('span', { class: 'mono', 'data-testid': 'history-ms' }, e.ms + ' ms'),
    badge(shown(e), e.ok ? 'yes' : 'failed', { 'data-testid': 'history-outcome' }),
    h('span', { class: 'grow' }),
    e.replayable ? h('button', { type: 'button', 'data-testid': 'replay', onclick: replay }, 'Replay') : null,
    h('details', { class: 'full' }, h('summary', {}, 'sent'), json(e.body)));
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
  el.append(h('p', { class: 'muted' }, 'Every call this page made to ' + server + ', oldest first, with how long it took; Replay sends one again as it was.'), v.out, v.list);
  redraw(v, server);
  get('/api/history?server=' + encodeURIComponent(server)).then((r) => {
    if (r.ok) for (const e of r.body) historyEvent(e);
  });
}
