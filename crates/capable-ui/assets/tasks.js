// The server's tasks (2025-11-25 `tasks/list` where declared, or a modern server's
// tasks extension): each with its status, read again with `tasks/get` or cancelled
// with `tasks/cancel`. A call run as a task shows its statuses under its form too.

import { h, fill, json, post, errorText } from './dom.js';

function row(server, t, refreshList) {
  const out = h('div', {});
  const act = async (action) => {
    const r = await post('/api/task', { server, id: t.taskId, action });
    fill(out, r.ok ? json(r.body) : h('p', { class: 'errors' }, errorText(r)));
    if (action === 'cancel') refreshList();
  };
  const done = ['completed', 'failed', 'cancelled'].includes(t.status);
  return h('div', { class: 'item', 'data-testid': 'task', 'data-status': t.status },
    h('code', {}, t.taskId), h('span', { class: 'badge ' + (t.status === 'failed' ? 'failed' : t.status === 'completed' ? 'ready' : 'starting') }, t.status),
    h('span', { class: 'grow muted' }, t.statusMessage || ''),
    h('button', { type: 'button', onclick: () => act('get') }, 'Get'),
    h('button', { type: 'button', disabled: done, onclick: () => act('cancel') }, 'Cancel'),
    out);
}

export function tasksPanel(el, server) {
  const list = h('div', { class: 'list' });
  const refreshList = async () => {
    const r = await post('/api/tasks', { server });
    if (!r.ok) { fill(list, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); return; }
    fill(list, r.body.length ? r.body.map((t) => row(server, t, refreshList)) : h('p', { class: 'muted' }, 'No tasks.'));
  };
  el.append(
    h('p', { class: 'muted' }, 'Tasks are listed only where the server declares it (tasks/list); a call run as a task shows its statuses in the Tools tab.'),
    h('button', { type: 'button', 'data-testid': 'list-tasks', onclick: refreshList }, 'List tasks'),
    list);
}
