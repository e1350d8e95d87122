// Resources and templates: Read (the text or a preview by MIME type, the revision,
// the read time) and Watch (the mode and why, each revision as it arrives; a contract
// violation with both messages, then the fallback's mode; any two revisions compared
// line by line) — the lines of `capable watch --json`, as they come over the event
// stream. A template's variables are completed as they are typed, where the server
// allows completion/complete.

import { h, fill, post, errorText, clock, apiHeaders } from './dom.js';
import { panel } from './app.js';
import { violationCard } from './overview.js';
import { completes } from './complete.js';
import { textOf, diffView } from './diff.js';

/** Open watches' cards, by watch id (an event may come before the POST's answer). */
const cards = new Map();
/** Each server's box of watch cards. */
const boxes = new Map();

function watchBox(server) {
  let box = boxes.get(server);
  if (!box) {
    box = h('div', { 'data-testid': 'watches' });
    boxes.set(server, box);
  }
  return box;
}

/** RFC 6570 expansion of the operators people use: {x} {+x} {#x} {/x} {.x} {?x,y} {&x}. */
export function expand(template, values) {
  return template.replace(/\{([+#./;?&]?)([^}]*)\}/g, (_, op, names) => {
    const vars = names.split(',').map((n) => n.replace(/\*$|:\d+$/, '').trim()).filter(Boolean);
    const enc = op === '+' || op === '#' ? encodeURI : encodeURIComponent;
    const set = vars.filter((v) => values[v] !== undefined && values[v] !== '');
    if (!set.length) return '';
    switch (op) {
      case '?': case '&': return op + set.map((v) => v + '=' + enc(values[v])).join('&');
      case ';': return set.map((v) => ';' + v + '=' + enc(values[v])).join('');
      case '/': case '.': return set.map((v) => op + enc(values[v])).join('');
      case '#': return '#' + set.map((v) => enc(values[v])).join(',');
      default: return set.map((v) => enc(values[v])).join(',');
    }
  });
}

function variables(template) {
  const out = [];
  for (const m of template.matchAll(/\{[+#./;?&]?([^}]*)\}/g)) {
    for (const n of m[1].split(',')) {
      const v = n.replace(/\*$|:\d+$/, '').trim();
      if (v && !out.includes(v)) out.push(v);
    }
  }
  return out;
}

/** The contents of a read: text as text, images previewed, other bytes described. */
export function contents(list) {
  return (list || []).map((c) => {
    const mime = c.mimeType || '';
    if (typeof c.text === 'string') return h('pre', { 'data-testid': 'text' }, c.text);
    if (typeof c.blob === 'string' && /^image\/(png|jpeg|gif|webp|bmp)$/.test(mime)) {
      return h('img', { class: 'preview', alt: c.uri || 'image', src: 'data:' + mime + ';base64,' + c.blob });
    }
    if (typeof c.blob === 'string') return h('p', { class: 'muted' }, '[binary ' + (mime || 'content') + ', ' + c.blob.length + ' base64 characters]');
    return h('p', { class: 'muted' }, '[empty]');
  });
}

function readCard(read) {
  return h('div', { class: 'card', 'data-testid': 'read-result' },
    h('div', { class: 'row' }, h('strong', {}, read.uri),
      h('span', {}, 'revision ', h('code', { 'data-testid': 'revision' }, read.revision)),
      h('span', { class: 'muted' }, 'read at ', h('span', { 'data-testid': 'read-at' }, read.readAt)),
      read.ttlMs !== undefined ? h('span', { class: 'muted' }, 'fresh for ' + read.ttlMs + ' ms') : null),
    contents(read.contents));
}

/** Reads `uri` on `server` into `out`: its contents, revision and read time, or why not. */
export async function read(server, uri, out) {
  fill(out, h('p', { class: 'muted' }, 'Reading ' + uri + '…'));
  const r = await post('/api/read', { server, uri });
  fill(out, r.ok ? readCard(r.body) : h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r)));
  // Where the eye is: the result, however long the list above it.
  out.scrollIntoView({ block: 'nearest' });
}

function card(id, server, uri) {
  let c = cards.get(id);
  if (c) return c;
  const list = h('div', { class: 'list' });
  const alive = h('span', { class: 'alive', 'data-testid': 'watch-alive', hidden: true });
  const diff = h('div', {});
  const stop = h('button', { type: 'button', 'data-testid': 'unwatch', onclick: () => post('/api/unwatch', { server, watch: id }) }, 'Stop');
  const el = h('div', { class: 'card', 'data-testid': 'watch-card', 'data-watch': id, 'data-uri': uri },
    h('div', { class: 'row' }, h('h4', {}, 'Watching ' + uri), alive, h('span', { class: 'grow' }), stop),
    h('p', { class: 'muted' }, 'Tick two revisions to see what changed between them.'), diff, list);
  c = { el, list, stop, alive, diff, server, uri, revisions: 0, poll: null, kept: [], picked: [] };
  cards.set(id, c);
  watchBox(server).prepend(el);
  return c;
}

/** How many revisions of each watch are kept to compare. */
const KEPT_REVISIONS = 200;

/** Shows the diff of revisions `a` and `b` (by number) of card `c`, on top of its list. */
function showDiff(c, a, b) {
  const [older, newer] = [Math.min(a, b), Math.max(a, b)].map((n) => c.kept.find((r) => r.n === n));
  if (!older || !newer) { fill(c.diff, h('p', { class: 'muted' }, 'That revision is no longer kept.')); return; }
  fill(c.diff, diffView(older, newer), h('button', { type: 'button', onclick: () => fill(c.diff) }, 'Close the diff'));
}

/** Two revisions picked (their boxes ticked): their diff. */
function compare(c, rev, on) {
  c.picked = c.picked.filter((n) => n !== rev.n);
  if (on) c.picked.push(rev.n);
  if (c.picked.length > 2) {
    const dropped = c.picked.shift();
    const box = c.list.querySelector('[data-testid=watch-revision][data-n="' + dropped + '"] [data-testid=pick-revision]');
    if (box) box.checked = false;
  }
  if (c.picked.length === 2) showDiff(c, c.picked[0], c.picked[1]);
}

/**
 * A polling watch shows that it still runs: each `resources/read` of its resource
 * that goes out on its server (seen in the message log's stream) counts, with the
 * time of the last; when none went out for three intervals, it says so.
 */
function showAlive(c) {
  const p = c.poll;
  if (!p) return;
  const ago = p.last ? Date.now() - p.last : null;
  const late = ago !== null && ago > 3 * p.interval + 1000;
  c.alive.hidden = false;
  c.alive.className = 'alive' + (late ? ' late' : ' on');
  c.alive.dataset.reads = String(p.reads);
  c.alive.textContent = 'polling every ' + p.interval + ' ms · ' +
    (p.reads ? 'read ' + p.reads + (p.reads === 1 ? ' time' : ' times') + ', last ' + clock(new Date(p.last).toISOString()) : 'no read yet') +
    (late ? ' · no read for ' + Math.round(ago / 1000) + ' s' : '');
}

setInterval(() => { for (const c of cards.values()) if (c.poll) showAlive(c); }, 1000);

/** A `msg` event from the stream: a read of a polled resource counts for its watches. */
export function watchRead(d) {
  const m = d.message || {};
  if (d.dir !== 'sent' || d.method !== 'resources/read' || d.tag || !m.params) return;
  for (const c of cards.values()) {
    if (c.poll && c.server === d.server && c.uri === m.params.uri) {
      c.poll.reads += 1;
      c.poll.last = Date.parse(d.at) || Date.now();
      showAlive(c);
    }
  }
}

/** A `watch` event from the stream. */
export function watchEvent(event) {
  const d = event.line || {};
  const c = card(event.watch, event.server, d.uri || '');
  switch (d.event) {
    case 'mode':
      c.list.appendChild(h('div', { class: 'modeline', 'data-testid': 'mode-line', 'data-mode': d.mode },
        h('strong', {}, d.mode), d.intervalMs ? ' every ' + d.intervalMs + ' ms' : '', ' — ', d.reason || ''));
      c.poll = d.mode === 'poll' ? { interval: d.intervalMs || 0, reads: 0, last: null } : null;
      c.alive.hidden = !c.poll;
      showAlive(c);
      break;
    case 'revision': {
      c.revisions += 1;
      const rev = { n: c.revisions, revision: d.revision, text: textOf(d.contents) };
      c.kept.push(rev);
      if (c.kept.length > KEPT_REVISIONS) c.kept.shift();
      const pick = h('input', { type: 'checkbox', 'data-testid': 'pick-revision', 'aria-label': 'compare revision ' + rev.n, onchange: () => compare(c, rev, pick.checked) });
      c.list.appendChild(h('div', { class: 'item', 'data-testid': 'watch-revision', 'data-n': c.revisions },
        h('label', { class: 'muted mono' }, pick, ' #' + c.revisions + ' ' + clock(d.readAt)),
        h('code', {}, d.revision),
        c.revisions > 1 ? h('button', { type: 'button', 'data-testid': 'diff-previous', onclick: () => showDiff(c, rev.n - 1, rev.n) }, 'diff with #' + (rev.n - 1)) : null,
        h('div', { class: 'grow' }, contents(d.contents))));
      break;
    }
    case 'violation':
      c.list.appendChild(violationCard(d, h('p', {}, 'The method is not sent again in this session; the watch falls back as the next mode says.')));
      break;
    case 'end': {
      c.poll = null;
      c.ended = true;
      c.alive.hidden = true;
      // Stopped: its card can go (its revisions with it).
      const remove = h('button', { type: 'button', 'data-testid': 'remove-watch', onclick: () => { c.el.remove(); cards.delete(event.watch); } }, 'Remove');
      c.stop.replaceWith(remove);
      c.list.appendChild(h('p', { class: d.error ? 'errors' : 'muted', 'data-testid': 'watch-end' }, d.error ? 'ended: ' + d.error : 'stopped'));
      break;
    }
  }
}

/** The watches this page started and has not seen end: stopped when the page goes
 * (closed, reloaded, navigated away), so that none polls for a page no one sees. */
const mine = new Map();

window.addEventListener('pagehide', () => {
  for (const [watch, server] of mine) {
    if (cards.get(watch) && cards.get(watch).ended) continue;
    // keepalive: the request outlives the page.
    fetch('/api/unwatch', {
      method: 'POST', keepalive: true, credentials: 'same-origin',
      headers: apiHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ server, watch }),
    }).catch(() => {});
  }
});

async function watch(server, uri, pollInput, out) {
  const ms = Number(pollInput.value);
  const body = { server, uri };
  if (ms > 0) body.pollMs = ms;
  const r = await post('/api/watch', body);
  if (!r.ok) { fill(out, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); return; }
  card(r.body.watch, server, uri);
  mine.set(r.body.watch, server);
}

export function resourcesPanel(s) {
  const el = panel(s.name, 'resources', (root) => {
    root.list = h('div', {});
    root.out = h('div', { 'data-testid': 'resource-output' });
    root.poll = h('input', { type: 'number', min: '0', step: '100', value: '2000', 'data-testid': 'poll-ms', 'aria-label': 'poll interval in ms', class: 'narrow' });
    root.append(
      h('div', { class: 'row muted' }, h('label', {}, 'When the server offers no subscription, or breaks it, re-read every ', root.poll, ' ms (0: never).')),
      root.list, root.out, h('h3', {}, 'Watches'), watchBox(s.name));
  });
  // Drawn again only when the lists changed: a template being filled in keeps what
  // was typed across live updates.
  const listed = JSON.stringify([!!s.inspect, s.matrix, s.resources, s.templates]);
  if (el.listed === listed) return el;
  el.listed = listed;
  const rows = (s.resources || []).map((r) => h('div', { class: 'item', 'data-testid': 'resource', 'data-uri': r.uri },
    h('span', { class: 'grow' }, h('span', { class: 'name' }, r.title || r.name || ''), ' ', h('code', {}, r.uri),
      r.mimeType ? h('span', { class: 'muted' }, ' ' + r.mimeType) : null,
      r.description ? h('div', { class: 'muted' }, r.description) : null),
    h('button', { type: 'button', 'data-testid': 'read', onclick: () => read(s.name, r.uri, el.out) }, 'Read'),
    h('button', { type: 'button', 'data-testid': 'watch', onclick: () => watch(s.name, r.uri, el.poll, el.out) }, 'Watch')));
  const templates = (s.templates || []).map((t) => {
    const inputs = {};
    const fields = variables(t.uriTemplate || '').map((v) => {
      inputs[v] = h('input', { type: 'text', name: v, 'aria-label': v, placeholder: v });
      return h('label', {}, v + ' ', inputs[v]);
    });
    const values = () => Object.fromEntries(Object.entries(inputs).map(([k, i]) => [k, i.value]));
    const uri = () => expand(t.uriTemplate || '', values());
    for (const [v, input] of Object.entries(inputs)) completes(s, input, { type: 'ref/resource', uri: t.uriTemplate }, v, values);
    return h('div', { class: 'item', 'data-testid': 'template', 'data-template': t.uriTemplate },
      h('span', { class: 'grow' }, h('span', { class: 'name' }, t.title || t.name || ''), ' ', h('code', {}, t.uriTemplate),
        t.description ? h('div', { class: 'muted' }, t.description) : null),
      fields,
      h('button', { type: 'button', 'data-testid': 'read', onclick: () => read(s.name, uri(), el.out) }, 'Read'),
      h('button', { type: 'button', 'data-testid': 'watch', onclick: () => watch(s.name, uri(), el.poll, el.out) }, 'Watch'));
  });
  const declared = (s.matrix || []).find((m) => m.capability === 'resources');
  fill(el.list,
    !s.inspect ? h('p', { class: 'muted' }, 'Not connected.') :
      declared && !declared.present ? h('p', { class: 'muted' }, 'The server declared no resources: nothing is listed, read or watched.') : null,
    rows.length ? [h('h3', {}, 'Resources'), rows] : null,
    templates.length ? [h('h3', {}, 'Templates'), templates] : null);
  return el;
}

