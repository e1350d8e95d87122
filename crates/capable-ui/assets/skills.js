// Skills (the skills extension): the entries as listed (no file is read), and one
// skill loaded — capable verifies its SKILL.md against the entry (size, digest,
// frontmatter) before anything of it is shown; a tampered skill is refused with why.
// Its other files are read only when asked for, and verified the same way.

import { h, fill, post, errorText } from './dom.js';

function files(skill) {
  const list = Array.isArray(skill.resources) ? skill.resources : [];
  const root = skill.uri.replace(/SKILL\.md$/, '');
  return list.map((f) => f.uri).filter((u) => u !== skill.uri).map((u) => u.startsWith(root) ? u.slice(root.length) : u);
}

function entry(server, skill) {
  const out = h('div', { 'data-testid': 'skill-output' });
  const show = async (file) => {
    const r = await post('/api/skill', file ? { server, uri: skill.uri, file } : { server, uri: skill.uri });
    if (!r.ok) { fill(out, h('p', { class: 'errors', 'data-testid': 'skill-refused' }, errorText(r))); return; }
    fill(out,
      h('p', { class: 'ok', 'data-testid': 'skill-verified' }, (file ? file : 'SKILL.md') + ': size, digest and frontmatter match the entry'),
      h('pre', { 'data-testid': 'skill-text' }, file ? r.body.text : r.body.body));
  };
  const fm = skill.frontmatter || {};
  return h('div', { class: 'card', 'data-testid': 'skill', 'data-name': fm.name || '' },
    h('div', { class: 'row' }, h('strong', {}, fm.name || skill.uri), h('code', {}, skill.uri), h('span', { class: 'grow muted' }, fm.description || ''),
      h('button', { type: 'button', 'data-testid': 'load-skill', onclick: () => show(null) }, 'Load'),
      files(skill).map((f) => h('button', { type: 'button', 'data-file': f, onclick: () => show(f) }, f))),
    out);
}

export function skillsPanel(el, server) {
  const list = h('div', {});
  const refreshList = async () => {
    const r = await post('/api/skills', { server });
    if (!r.ok) { fill(list, h('p', { class: 'errors', 'data-testid': 'error' }, errorText(r))); return; }
    fill(list, r.body.length ? r.body.map((s) => entry(server, s)) : h('p', { class: 'muted' }, 'No skills.'));
  };
  el.append(
    h('p', { class: 'muted' }, 'Skills are listed only where the server declares the skills extension; listing reads no file.'),
    h('button', { type: 'button', 'data-testid': 'list-skills', onclick: refreshList }, 'List skills'),
    list);
}
