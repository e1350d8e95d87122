// Two revisions of a resource, line by line: what went (−) and what came (+), the
// rest as context — a longest common subsequence of the lines, bounded: texts too
// long to compare that way are said to differ, with their sizes.

import { h } from './dom.js';

/** The most line pairs compared (the table's cells). */
const MAX_CELLS = 4e6;
/** Lines of unchanged context kept around each change. */
const CONTEXT = 2;

/** The text of a revision's contents: each text part, a blob as its size. */
export function textOf(contents) {
  return (contents || []).map((c) => (typeof c.text === 'string' ? c.text
    : typeof c.blob === 'string' ? '[binary ' + (c.mimeType || 'content') + ', ' + c.blob.length + ' base64 characters]' : '')).join('\n');
}

/** The line diff of `a` and `b`: [{op: ' ' | '-' | '+', line}], or null when too large. */
export function lineDiff(a, b) {
  const x = a.split('\n');
  const y = b.split('\n');
  if ((x.length + 1) * (y.length + 1) > MAX_CELLS) return null;
  const w = y.length + 1;
  const lcs = new Uint32Array((x.length + 1) * w);
  for (let i = x.length - 1; i >= 0; i--) {
    for (let j = y.length - 1; j >= 0; j--) {
      lcs[i * w + j] = x[i] === y[j] ? lcs[(i + 1) * w + j + 1] + 1 : Math.max(lcs[(i + 1) * w + j], lcs[i * w + j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < x.length && j < y.length) {
    if (x[i] === y[j]) { out.push({ op: ' ', line: x[i] }); i++; j++; }
    else if (lcs[(i + 1) * w + j] >= lcs[i * w + j + 1]) out.push({ op: '-', line: x[i++] });
    else out.push({ op: '+', line: y[j++] });
  }
  while (i < x.length) out.push({ op: '-', line: x[i++] });
  while (j < y.length) out.push({ op: '+', line: y[j++] });
  return out;
}

/** The diff of two revisions (older `a`, newer `b`) as an element. */
export function diffView(a, b) {
  const head = h('div', { class: 'muted' }, 'revision #' + a.n + ' ', h('code', {}, a.revision), ' → #' + b.n + ' ', h('code', {}, b.revision));
  if (a.revision === b.revision) return h('div', { class: 'card', 'data-testid': 'diff' }, head, h('p', {}, 'The same revision.'));
  const lines = lineDiff(a.text, b.text);
  if (!lines) {
    return h('div', { class: 'card', 'data-testid': 'diff' }, head,
      h('p', {}, 'Too long to compare line by line: ' + a.text.length + ' → ' + b.text.length + ' characters.'));
  }
  const near = lines.map((l, k) => lines.slice(Math.max(0, k - CONTEXT), k + CONTEXT + 1).some((m) => m.op !== ' '));
  const shown = [];
  lines.forEach((l, k) => {
    if (near[k]) shown.push(h('div', { class: 'd' + (l.op === '+' ? 'add' : l.op === '-' ? 'del' : 'same'), 'data-op': l.op }, l.op + ' ' + l.line));
    else if (shown.length && shown[shown.length - 1].dataset.op !== '…') shown.push(h('div', { class: 'dsame', 'data-op': '…' }, '…'));
  });
  const added = lines.filter((l) => l.op === '+').length;
  const removed = lines.filter((l) => l.op === '-').length;
  return h('div', { class: 'card', 'data-testid': 'diff' }, head,
    h('div', { class: 'muted' }, '+' + added + ' −' + removed + ' lines'),
    h('pre', { class: 'diff' }, shown));
}
