// A server's roots: the `file://` directories the client offers it (`roots/list`),
// edited here. Saving gives the server the new list: a legacy server is told at once
// (`notifications/roots/list_changed`) and asks again; a modern one gets it with its
// next request that asks for roots.

import { h, fill, post, errorText } from './dom.js';

function row(list, root) {
  const uri = h('input', { type: 'text', class: 'grow', 'data-testid': 'root-uri', 'aria-label': 'root URI', placeholder: 'file:///path', value: root.uri || '' });
  const name = h('input', { type: 'text', 'data-testid': 'root-name', 'aria-label': 'root name', placeholder: 'name', value: root.name || '' });
  const el = h('div', { class: 'row', 'data-testid': 'root' }, uri, name,
    h('button', { type: 'button', 'aria-label': 'remove root', onclick: () => el.remove() }, '−'));
  el.read = () => (uri.value.trim() ? { uri: uri.value.trim(), name: name.value.trim() || undefined } : null);
  list.appendChild(el);
}

export function rootsPanel(el, server) {
  const list = h('div', { class: 'list' });
  const out = h('div', {});
  const show = (roots) => { fill(list); for (const r of roots) row(list, r); };
  const save = async () => {
    const roots = [...list.children].map((r) => r.read()).filter(Boolean);
    const r = await post('/api/roots', { server, roots });
    if (!r.ok) { fill(out, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); return; }
    show(r.body.roots);
    fill(out, h('p', { class: 'ok', 'data-testid': 'roots-saved' }, r.body.roots.length + ' root(s) given to ' + server + '.'));
  };
  el.append(
    h('p', { class: 'muted' }, 'The directories this inspector offers ' + server + ' as roots. A legacy server is told when they change (notifications/roots/list_changed); a modern one gets them with its next request that asks.'),
    list,
    h('div', { class: 'row' },
      h('button', { type: 'button', 'data-testid': 'add-root', onclick: () => row(list, {}) }, '+ root'),
      h('button', { type: 'button', class: 'primary', 'data-testid': 'save-roots', onclick: save }, 'Save')),
    out);
  post('/api/roots', { server }).then((r) => { if (r.ok) show(r.body.roots); });
}
