// Tools and prompts. A tool's form is made from its inputSchema (see form.js); the
// arguments are checked against the schema by capable before anything is sent. A
// call shows its progress as it comes, can be cancelled, and its result is shown
// with its structuredContent beside the check against the tool's outputSchema.

import { heldBack } from './pins.js';
import { h, fill, json, post, errorText } from './dom.js';
import { panel } from './app.js';
import { schemaForm } from './form.js';
import { mountApp } from './apps.js';
import { contents, read } from './resources.js';
import { completes } from './complete.js';

/** Progress bars of calls in flight, by call id. */
const bars = new Map();
let calls = 0;

/** A `task` event from the stream: the call became a task, or its status changed. */
export function taskEvent(d) {
  const bar = bars.get(d.call);
  if (!bar || !d.task) return;
  const t = d.task;
  bar.task = t.taskId;
  bar.status.textContent = 'task ' + t.taskId + ' ' + t.status + (t.statusMessage ? ': ' + t.statusMessage : '');
}

/** A `progress` event from the stream. */
export function progressEvent(d) {
  const bar = bars.get(d.call);
  if (!bar) return;
  const p = d.progress || {};
  if (typeof p.total === 'number' && p.total > 0) {
    bar.progress.max = p.total;
    bar.progress.value = p.progress;
  } else {
    bar.progress.removeAttribute('value');
  }
  bar.text.textContent = (p.progress ?? '') + (p.total ? ' / ' + p.total : '') + (p.message ? ' — ' + p.message : '');
}

/**
 * A result's content: text as text, an image previewed, a `resource_link` as the
 * resource it names (read on the server when asked), an embedded resource as its
 * contents; anything else as its JSON.
 */
function content(items, server) {
  return (items || []).map((c) => {
    if (c.type === 'text') return h('pre', { 'data-testid': 'content-text' }, c.text);
    if (c.type === 'image' && /^image\/(png|jpeg|gif|webp)$/.test(c.mimeType || '')) {
      return h('img', { class: 'preview', alt: 'image result', src: 'data:' + c.mimeType + ';base64,' + c.data });
    }
    if (c.type === 'resource_link' && typeof c.uri === 'string') {
      const out = h('div', {});
      return h('div', { class: 'card link', 'data-testid': 'resource-link', 'data-uri': c.uri },
        h('div', { class: 'row' }, h('span', {}, '↗'), h('strong', {}, c.title || c.name || ''), h('code', {}, c.uri),
          c.mimeType ? h('span', { class: 'muted' }, c.mimeType) : null, h('span', { class: 'grow' }),
          h('button', { type: 'button', 'data-testid': 'read-link', onclick: () => read(server, c.uri, out) }, 'Read')),
        c.description ? h('div', { class: 'muted' }, c.description) : null, out);
    }
    if (c.type === 'resource' && c.resource && typeof c.resource.uri === 'string') {
      return h('div', { class: 'card', 'data-testid': 'embedded-resource' },
        h('div', { class: 'row' }, h('code', {}, c.resource.uri), c.resource.mimeType ? h('span', { class: 'muted' }, c.resource.mimeType) : null),
        contents([c.resource]));
    }
    return json(c);
  });
}

function resultCard(body, server) {
  if (body.cancelled) {
    return h('div', { class: 'card', 'data-testid': 'call-result' },
      body.task ? 'Cancelled (tasks/cancel for task ' + body.task + ').' : 'Cancelled (notifications/cancelled was sent).');
  }
  const r = body.result || {};
  const check = body.outputCheck || {};
  let verdict = null;
  if (check.declared) {
    verdict = h('div', { class: 'card', 'data-testid': 'output-check' },
      h('h4', { class: check.ok === false ? 'bad' : 'ok' },
        check.ok === false ? 'structuredContent does not match the outputSchema' :
          check.ok === null ? 'the outputSchema could not be used' : 'structuredContent matches the outputSchema'),
      (check.errors || []).length ? h('ul', { class: 'errors' }, check.errors.map((e) => h('li', {}, e))) : null,
      h('details', {}, h('summary', {}, 'outputSchema'), json(check.schema)));
  }
  return h('div', { class: 'card', 'data-testid': 'call-result' },
    h('div', { class: 'row' }, h('h4', {}, 'Result'), r.isError ? h('span', { class: 'badge failed' }, 'isError') : null),
    content(r.content, server),
    r.structuredContent !== undefined ? h('div', { class: 'grid2' },
      h('div', {}, h('h3', {}, 'structuredContent'), json(r.structuredContent, { 'data-testid': 'structured' })), verdict) : verdict,
    h('details', {}, h('summary', {}, 'raw result'), json(r)));
}

function toolView(s, tool) {
  const server = s.name;
  let schema = tool.inputSchema;
  const form = schemaForm(schema);
  const out = h('div', {});
  const progress = h('progress', { 'aria-label': 'progress' });
  const ptext = h('span', { class: 'muted' });
  const cancel = h('button', { type: 'button', 'data-testid': 'cancel', disabled: true }, 'Cancel');
  const support = tool.execution && tool.execution.taskSupport;
  const asTask = support === 'optional' || support === 'required'
    ? h('input', { type: 'checkbox', 'data-testid': 'as-task', checked: support === 'required', disabled: support === 'required' })
    : null;
  const status = h('div', { class: 'muted', 'data-testid': 'task-status' });
  const callButton = h('button', { type: 'submit', class: 'primary', 'data-testid': 'call' }, 'Call');
  const submit = async (e) => {
    e.preventDefault();
    const args = form.read();
    if (!args.ok) { fill(out, h('div', { class: 'errors', 'data-testid': 'form-errors' }, args.errors.join('; '))); return; }
    const id = 'c' + (++calls) + '-' + Date.now();
    bars.set(id, { progress, text: ptext, status });
    status.textContent = '';
    fill(out, h('div', { class: 'row' }, progress, ptext), status);
    callButton.disabled = true;
    cancel.disabled = false;
    cancel.onclick = () => post('/api/cancel', { server, call: id });
    const r = await post('/api/call', { server, tool: tool.name, arguments: args.value, call: id, task: !!(asTask && asTask.checked) });
    bars.delete(id);
    callButton.disabled = false;
    cancel.disabled = true;
    const seen = ptext.textContent ? h('p', { class: 'muted', 'data-testid': 'final-progress' }, 'progress ' + ptext.textContent) : null;
    const task = status.textContent ? status : null;
    if (r.ok) {
      const view = h('div', {});
      fill(out, task, resultCard(r.body, server), seen, view);
      if (r.body.result) mountApp(server, tool, args.value, r.body.result, view);
    } else if (r.body && r.body.invalid) {
      fill(out, h('div', { class: 'errors', 'data-testid': 'form-errors' }, errorText(r),
        h('ul', {}, r.body.invalid.map((p) => h('li', {}, h('code', {}, p.path || '/'), ' ', p.message)))));
    } else fill(out, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r)));
  };
  return h('form', { class: 'card', 'data-testid': 'tool-form', 'data-tool': tool.name, onsubmit: submit },
    h('h4', {}, tool.title || tool.name),
    tool.description ? h('p', { class: 'muted' }, tool.description) : null,
    form.el,
    h('details', {}, h('summary', {}, 'inputSchema'), json(schema)),
    h('div', { class: 'row' }, callButton, cancel, asTask ? h('label', {}, asTask, ' run as a task') : null),
    out);
}

/** What a tool's annotations hint, in words (`readOnlyHint` → read-only, …). */
const HINTS = [
  ['readOnlyHint', true, 'read-only'], ['destructiveHint', true, 'destructive'],
  ['idempotentHint', true, 'idempotent'], ['openWorldHint', true, 'open world'], ['openWorldHint', false, 'closed world'],
];

/** A tool's or prompt's chip: its title (its name beside it when they differ), its
 * description (two lines; all of it on hover) and its annotations' hints. */
function chip(t) {
  const a = t.annotations || {};
  const title = t.title || a.title || t.name;
  const hints = HINTS.filter(([k, v]) => a[k] === v).map(([, , word]) => word);
  return [
    h('span', {}, h('strong', { 'data-testid': 'chip-title' }, title), title !== t.name ? h('code', { class: 'muted' }, ' ' + t.name) : null),
    t.description ? h('span', { class: 'desc', 'data-testid': 'chip-description' }, t.description) : null,
    hints.length ? h('span', { class: 'hints', 'data-testid': 'chip-hints' }, hints.map((w) => h('span', { class: 'hint-badge ' + w.replace(' ', '-') }, w))) : null,
  ];
}

/** Shows the chips the search matches (every word, in name, title or description). */
function filter(el) {
  const words = (el.search ? el.search.value : '').toLowerCase().split(/\s+/).filter(Boolean);
  for (const b of el.nav.querySelectorAll('button[data-search]')) {
    b.hidden = !words.every((w) => b.dataset.search.includes(w));
  }
}

/**
 * A list of named items (tools, prompts) with the view of the one picked. A new list
 * from the server (a list change) redraws the buttons only: the open view — what was
 * typed, the last result — stays; if its item changed or went away, a note says so.
 */
function picker(s, key, items, label, view) {
  const el = panel(s.name, key, (root) => {
    root.nav = h('div', { class: 'row', role: 'list' });
    root.search = h('input', {
      type: 'search', 'data-testid': key + '-search', 'aria-label': 'search ' + key,
      placeholder: 'Search ' + key + ' by name, title or description',
      oninput: () => filter(root),
    });
    root.note = h('div', {});
    root.view = h('div', {});
    root.append(h('div', { class: 'row' }, root.search), root.nav, root.note, root.view);
  });
  const capability = (s.matrix || []).find((m) => m.capability === key);
  if (!s.inspect) { fill(el.nav, h('p', { class: 'muted' }, 'Not connected.')); return el; }
  if (capability && !capability.present) { fill(el.nav, h('p', { class: 'muted' }, 'The server declared no ' + key + '.')); return el; }
  const listed = JSON.stringify(items);
  if (el.listed === listed) return el; // the same list: nothing to redraw
  el.listed = listed;
  const pick = (t) => {
    el.picked = { name: t.name, json: JSON.stringify(t) };
    fill(el.note);
    mark();
    fill(el.view, view(s, t));
  };
  const mark = () => {
    for (const b of el.nav.querySelectorAll('button')) b.setAttribute('aria-pressed', String(!!el.picked && b.dataset.name === el.picked.name));
  };
  fill(el.nav, items.length ? items.map((t) => h('button', {
    type: 'button', class: 'chip', 'data-testid': label, 'data-name': t.name, 'aria-pressed': 'false', onclick: () => pick(t),
    'data-search': [t.name, t.title, t.annotations && t.annotations.title, t.description].filter(Boolean).join(' ').toLowerCase(),
    title: t.description || null,
  }, chip(t))) : h('p', { class: 'muted' }, 'None listed.'));
  filter(el);
  mark();
  if (el.picked) {
    const now = items.find((t) => t.name === el.picked.name);
    const again = now ? h('button', { type: 'button', 'data-testid': 'reload-view', onclick: () => pick(now) }, 'Use the new definition') : null;
    fill(el.note, !now ? h('p', { class: 'notice', 'data-testid': 'picked-gone' }, 'The server no longer lists ' + el.picked.name + '; its form and last result stay below.')
      : JSON.stringify(now) !== el.picked.json ? h('p', { class: 'notice row', 'data-testid': 'picked-changed' }, 'The server changed ' + el.picked.name + '\'s definition. ', again) : null);
  }
  return el;
}

export function toolsPanel(s) {
  const el = picker(s, 'tools', s.tools || [], 'tool', toolView);
  const hidden = s.appOnlyTools || [];
  if (!el.appOnly) { el.appOnly = h('p', { class: 'muted', 'data-testid': 'app-only-tools' }); el.prepend(el.appOnly); }
  fill(el.appOnly, hidden.length ? 'Visible only to apps (their views call them), not listed: ' + hidden.join(', ') : '');
  const held = heldBack(s, 'tool');
  if (!el.held) { el.held = h('p', { class: 'notice', 'data-testid': 'held-tools' }); el.prepend(el.held); }
  fill(el.held, held.length ? 'Withheld by the pins (their definitions changed or are new; see the Overview to accept): ' + held.join(', ') : '');
  el.held.hidden = !held.length;
  return el;
}

function promptView(s, prompt) {
  const server = s.name;
  const args = prompt.arguments || [];
  const schema = {
    type: 'object',
    properties: Object.fromEntries(args.map((a) => [a.name, { type: 'string', title: a.name, description: a.description }])),
    required: args.filter((a) => a.required).map((a) => a.name),
  };
  const form = schemaForm(schema);
  // Each argument completed as it is typed, the others as context.
  const field = (name) => form.el.querySelector('input[name="' + CSS.escape(name) + '"]');
  const given = () => Object.fromEntries(args.map((a) => [a.name, field(a.name) ? field(a.name).value : '']));
  for (const a of args) {
    if (field(a.name)) completes(s, field(a.name), { type: 'ref/prompt', name: prompt.name }, a.name, given);
  }
  const out = h('div', {});
  const submit = async (e) => {
    e.preventDefault();
    const v = form.read();
    if (!v.ok) { fill(out, h('div', { class: 'errors' }, v.errors.join('; '))); return; }
    const r = await post('/api/prompt', { server, name: prompt.name, arguments: v.value });
    if (!r.ok) { fill(out, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); return; }
    fill(out, h('div', { class: 'card', 'data-testid': 'prompt-result' },
      r.body.description ? h('p', { class: 'muted' }, r.body.description) : null,
      (r.body.messages || []).map((m) => h('div', { class: 'item' }, h('strong', {}, m.role),
        h('div', { class: 'grow' }, m.content && m.content.type === 'text' ? h('pre', {}, m.content.text) : json(m.content))))));
  };
  return h('form', { class: 'card', 'data-testid': 'prompt-form', onsubmit: submit },
    h('h4', {}, prompt.title || prompt.name),
    prompt.description ? h('p', { class: 'muted' }, prompt.description) : null,
    form.el, h('button', { type: 'submit', class: 'primary', 'data-testid': 'get-prompt' }, 'Get'), out);
}

export function promptsPanel(s) {
  return picker(s, 'prompts', s.prompts || [], 'prompt', promptView);
}
