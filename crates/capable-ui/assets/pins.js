// Definitions the pins hold back: a tool or prompt whose definition differs from the
// one pinned when it was first seen (its name, title, description, schemas or
// annotations changed — what the model reads), or one never seen that the policy
// holds. Each is shown with both sides, line by line, and an Accept button that pins it
// as it is now; until then the server's list leaves it out and its call is refused.

import { h, fill, post, errorText } from './dom.js';
import { lineDiff } from './diff.js';

function text(definition) {
  return JSON.stringify(definition || {}, null, 2);
}

function lines(pinned, now) {
  const diff = lineDiff(text(pinned), text(now));
  if (!diff) return h('p', {}, 'Too long to compare line by line.');
  return h('pre', { class: 'diff', 'data-testid': 'pin-diff' }, diff.map((l) =>
    h('div', { class: 'd' + (l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same'), 'data-op': l.op }, l.op + ' ' + l.line)));
}

function one(s, p) {
  const out = h('div', {});
  const accept = async (button) => {
    button.disabled = true;
    const r = await post('/api/pins/accept', { server: s.name, name: p.name });
    // Accepted: the list read again comes as an event, and the page with it.
    if (!r.ok) { button.disabled = false; fill(out, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); }
  };
  const changed = p.state === 'changed';
  return h('div', { class: 'item', 'data-testid': 'pin', 'data-name': p.name, 'data-state': p.state },
    h('div', { class: 'row' },
      h('strong', {}, p.kind + ' ' + p.name),
      h('span', { class: 'grow muted' }, changed
        ? 'its definition differs from the one pinned: withheld'
        : 'new, held until accepted'),
      h('button', { type: 'button', 'data-testid': 'accept-pin', onclick: (e) => accept(e.currentTarget) }, 'Accept')),
    changed ? lines(p.pinned.definition, p.now.definition) : h('pre', { class: 'diff' }, text(p.now.definition)),
    out);
}

/** The card of what server `s`'s pins hold back (null when nothing is). */
export function pinsCard(s) {
  if (!(s.pins || []).length) return null;
  return h('div', { class: 'card warning', 'data-testid': 'pins' },
    h('h3', {}, 'Definitions held back'),
    h('p', { class: 'muted' }, 'Pinned definitions are what was reviewed; accept one only if its new definition is what you want the model to read.'),
    s.pins.map((p) => one(s, p)));
}

/** The names of `kind` that server `s`'s pins hold back. */
export function heldBack(s, kind) {
  return (s.pins || []).filter((p) => p.kind === kind).map((p) => p.name);
}
