// A server at a glance: who it is, what it declared (the capability matrix exactly
// as declared, the raw JSON one click away), what a host may therefore call (the
// gating table's actions), its instructions, the definitions its pins hold back, and
// the violations and notices so far.

import { h, json, badge } from './dom.js';
import { pinsCard } from './pins.js';

function yesNo(v) {
  if (v === null || v === undefined) return h('td', { class: 'muted' }, '');
  return h('td', {}, badge(v ? 'yes' : 'no', v ? 'yes' : 'no'));
}

/** One violation: what was declared, both messages, the server's name and version. */
export function violationCard(v, extra) {
  const server = v.server || {};
  return h('div', { class: 'card violation', 'data-testid': 'violation' },
    h('h4', {}, 'Contract violation: ' + (server.name || '?') + ' ' + (server.version || '')),
    h('div', {}, 'declared ', h('code', {}, String(v.capability || '')), ' but answered ',
      h('code', {}, String(v.method || '')), ' with -32601 (method not found)',
      v.protocolVersion ? ' · protocol ' + v.protocolVersion : ''),
    h('div', { class: 'grid2' },
      h('div', {}, h('h3', {}, 'request (sent)'), json(v.request, { 'data-testid': 'violation-request' })),
      h('div', {}, h('h3', {}, 'response (received)'), json(v.response, { 'data-testid': 'violation-response' }))),
    extra || null);
}

export function overview(s) {
  const out = h('section', { class: 'panel', 'data-testid': 'panel-overview' });
  if (!s.inspect) {
    out.appendChild(h('p', { class: 'muted' }, s.state === 'starting' ? 'Connecting…' : 'Not connected.'));
    if (s.listErrors && s.listErrors.length) out.appendChild(json(s.listErrors));
    return out;
  }
  // First: a definition that changed under the user matters more than the rest.
  const held = pinsCard(s);
  if (held) out.appendChild(held);
  const i = s.inspect;
  const info = i.serverInfo || {};
  out.appendChild(h('div', { class: 'grid2' },
    h('div', { class: 'card' },
      h('h3', {}, 'Server'),
      h('table', {}, h('tbody', {},
        h('tr', {}, h('th', {}, 'name'), h('td', { 'data-testid': 'server-name' }, info.name || '')),
        h('tr', {}, h('th', {}, 'version'), h('td', {}, info.version || '')),
        info.title ? h('tr', {}, h('th', {}, 'title'), h('td', {}, info.title)) : null,
        h('tr', {}, h('th', {}, 'era'), h('td', { 'data-testid': 'era' }, i.era)),
        h('tr', {}, h('th', {}, 'protocol'), h('td', { 'data-testid': 'protocol' }, i.protocolVersion)),
        (s.connection || []).length ? h('tr', {}, h('th', {}, 'connected'),
          h('td', { class: 'muted', 'data-testid': 'connection' }, s.connection.join('; '))) : null,
        s.handshakeMs !== undefined ? h('tr', {}, h('th', {}, 'handshake'), h('td', {}, s.handshakeMs + ' ms')) : null))),
    h('div', { class: 'card' },
      h('h3', {}, 'Capabilities as declared'),
      h('div', { class: 'scroll-x' }, h('table', { 'data-testid': 'matrix' },
        h('thead', {}, h('tr', {}, h('th', {}, 'capability'), h('th', {}, 'present'), h('th', {}, 'subscribe'), h('th', {}, 'listChanged'))),
        h('tbody', {}, (s.matrix || []).map((m) => h('tr', { 'data-capability': m.capability },
          h('td', {}, m.capability), yesNo(m.present), yesNo(m.subscribe), yesNo(m.listChanged)))))),
      h('details', { 'data-testid': 'raw-capabilities' }, h('summary', {}, 'raw JSON'), json(i.capabilities),
        Object.keys(i.extensions || {}).length ? [h('h3', {}, 'extensions'), json(i.extensions)] : null))));
  out.appendChild(h('div', { class: 'card' },
    h('h3', {}, 'A host may call'),
    h('div', { class: 'row', 'data-testid': 'actions' },
      (i.actions || []).length ? i.actions.map((a) => badge(a, 'yes mono')) : h('span', { class: 'muted' }, 'nothing')),
    h('p', { class: 'muted' }, 'From the gating table: the negotiated version and these capabilities alone. Anything else is refused here, and nothing is sent.')));
  if (i.instructions) {
    out.appendChild(h('div', { class: 'card' }, h('h3', {}, 'Instructions'), h('pre', { 'data-testid': 'instructions' }, i.instructions)));
  }
  for (const v of s.violations || []) out.appendChild(violationCard(v));
  if ((s.notices || []).length) {
    out.appendChild(h('div', { class: 'card warning', 'data-testid': 'notices' }, h('h3', {}, 'Notices'),
      h('ul', {}, s.notices.map((n) => h('li', {}, n)))));
  }
  if ((s.listErrors || []).length) {
    out.appendChild(h('div', { class: 'card' }, h('h3', {}, 'Lists that failed'),
      h('ul', {}, s.listErrors.map((e) => h('li', {}, e.list + ': ' + e.error)))));
  }
  return out;
}
