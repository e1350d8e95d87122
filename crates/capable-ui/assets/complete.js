// Completions as the person types: an argument of a prompt or a variable of a
// resource template gets the server's suggestions (`completion/complete`, with the
// other arguments as context) in a list under the field — only where the server's
// gating table allows completion/complete; nothing is asked of any other server.

import { h, fill, post } from './dom.js';

let lists = 0;

/**
 * Offers the server's completions on `input`, the argument `name` of `ref`
 * (`{type: "ref/prompt", name}` or `{type: "ref/resource", uri}`); `others()` gives
 * the other arguments' values.
 */
export function completes(s, input, ref, name, others) {
  if (!s.inspect || !(s.inspect.actions || []).includes('completion/complete')) return;
  const list = h('datalist', { id: 'completions-' + (++lists), 'data-testid': 'completions', 'data-argument': name });
  input.setAttribute('list', list.id);
  input.setAttribute('autocomplete', 'off');
  input.after(list);
  let asked = 0;
  let timer = null;
  const ask = async () => {
    const mine = ++asked;
    const context = Object.fromEntries(Object.entries(others()).filter(([k, v]) => k !== name && v !== ''));
    const r = await post('/api/complete', { server: s.name, ref, argument: name, value: input.value, context });
    if (mine !== asked || !r.ok) return; // a later keystroke asked again
    fill(list, (r.body.completion.values || []).map((v) => h('option', { value: v })));
  };
  const soon = () => { clearTimeout(timer); timer = setTimeout(ask, 120); };
  input.addEventListener('input', soon);
  input.addEventListener('focus', soon);
}
