// A server's sampling request (`sampling/createMessage`) answered by the person: the
// conversation the server wants answered (its messages, system prompt, token limit,
// model preferences, as sent), and the answer to give back — written or edited here,
// then approved, or the request rejected. The answer goes back with POST /api/sample.

import { h, fill, json, post, errorText } from './dom.js';

/** Requests waiting, by id: their card. */
const waiting = new Map();

/** One content block of a message: text as text, anything else as its JSON. */
function block(c) {
  if (c && c.type === 'text') return h('pre', { 'data-testid': 'sampling-message-text' }, c.text);
  return json(c);
}

function messages(list) {
  return h('div', { class: 'list', 'data-testid': 'sampling-messages' }, (list || []).map((m) =>
    h('div', { class: 'item' }, h('strong', {}, m.role || '?'),
      h('div', { class: 'grow' }, Array.isArray(m.content) ? m.content.map(block) : block(m.content)))));
}

/** What else the server asked for, row by row. */
function settings(p) {
  const rows = [
    ['system prompt', p.systemPrompt],
    ['max tokens', p.maxTokens],
    ['temperature', p.temperature],
    ['stop sequences', p.stopSequences && p.stopSequences.join(', ')],
    ['include context', p.includeContext],
    ['model hints', p.modelPreferences && (p.modelPreferences.hints || []).map((x) => x.name).join(', ')],
  ].filter(([, v]) => v !== undefined && v !== null && v !== '');
  return h('table', {}, h('tbody', {}, rows.map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, String(v))))));
}

function cardFor(d) {
  const p = d.params || {};
  const text = h('textarea', { name: 'text', rows: 4, 'data-testid': 'sampling-text', 'aria-label': 'the answer' });
  const model = h('input', { type: 'text', name: 'model', value: 'capable-ui (a person)', 'aria-label': 'model' });
  const stop = h('select', { name: 'stopReason', 'aria-label': 'stop reason' },
    ['endTurn', 'stopSequence', 'maxTokens'].map((r) => h('option', { value: r }, r)));
  const out = h('div', {});
  const send = async (action) => {
    const body = { id: d.id, action };
    if (action === 'approve') {
      body.result = { role: 'assistant', content: { type: 'text', text: text.value }, model: model.value, stopReason: stop.value };
    }
    const r = await post('/api/sample', body);
    if (!r.ok) fill(out, h('p', { class: 'errors' }, errorText(r)));
  };
  return h('form', {
    class: 'card', role: 'dialog', 'aria-label': 'Sampling request from ' + d.server, 'data-testid': 'sampling', 'data-id': d.id,
    onsubmit: (e) => { e.preventDefault(); send('approve'); },
  },
  h('h4', {}, d.server + ' asks for a model\'s answer (sampling/createMessage)'),
  messages(p.messages), settings(p),
  h('details', {}, h('summary', {}, 'the request as sent'), json(p)),
  h('h3', {}, 'The answer'),
  h('div', { class: 'field' }, h('label', {}, 'text'), text),
  h('div', { class: 'field' }, h('label', {}, 'model'), model),
  h('div', { class: 'field' }, h('label', {}, 'stop reason'), stop),
  h('div', { class: 'row' },
    h('button', { type: 'submit', class: 'primary', 'data-testid': 'sampling-approve' }, 'Approve'),
    h('button', { type: 'button', 'data-testid': 'sampling-reject', onclick: () => send('reject') }, 'Reject')),
  out);
}

/** A `sample` event from the stream. */
export function sampleEvent(d) {
  if (d.state === 'pending') {
    if (waiting.has(d.id)) return;
    const card = cardFor(d);
    waiting.set(d.id, card);
    document.getElementById('asks').appendChild(card);
    card.querySelector('textarea').focus();
  } else {
    const card = waiting.get(d.id);
    if (card) card.remove();
    waiting.delete(d.id);
  }
}
