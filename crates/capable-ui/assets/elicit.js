// A server's request for input (elicitation, form mode) as a form in the page: the
// server's message, a form from its requestedSchema, and Accept, Decline or Cancel.
// The answer goes back with POST /api/elicit; the server's call goes on from there.

import { h, fill, post, errorText } from './dom.js';
import { schemaForm } from './form.js';

/** Requests waiting, by id: their card. */
const waiting = new Map();

function box() {
  return document.getElementById('asks');
}

function cardFor(d) {
  const p = d.params || {};
  const form = schemaForm(p.requestedSchema || { type: 'object', properties: {} });
  const out = h('div', {});
  const send = async (action) => {
    let content;
    if (action === 'accept') {
      const v = form.read();
      if (!v.ok) { fill(out, h('div', { class: 'errors', 'data-testid': 'form-errors' }, v.errors.join('; '))); return; }
      content = v.value;
    }
    const r = await post('/api/elicit', { server: d.server, id: d.id, action, content });
    if (!r.ok) fill(out, h('p', { class: 'errors' }, errorText(r)));
  };
  return h('form', {
    class: 'card', role: 'dialog', 'aria-label': 'Request for input from ' + d.server, 'data-testid': 'elicitation', 'data-id': d.id,
    onsubmit: (e) => { e.preventDefault(); send('accept'); },
  },
  h('h4', {}, d.server + ' asks for input'),
  h('pre', { 'data-testid': 'elicitation-message' }, String(p.message || '')),
  form.el,
  h('div', { class: 'row' },
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'elicit-accept' }, 'Accept'),
    h('button', { type: 'button', 'data-testid': 'elicit-decline', onclick: () => send('decline') }, 'Decline'),
    h('button', { type: 'button', 'data-testid': 'elicit-cancel', onclick: () => send('cancel') }, 'Cancel')),
  out);
}

/** An `elicit` event from the stream. */
export function elicitEvent(d) {
  if (d.state === 'pending') {
    if (waiting.has(d.id)) return;
    const card = cardFor(d);
    waiting.set(d.id, card);
    box().appendChild(card);
    const first = card.querySelector('input,select,textarea,button');
    if (first) first.focus();
  } else {
    const card = waiting.get(d.id);
    if (card) card.remove();
    waiting.delete(d.id);
  }
}
