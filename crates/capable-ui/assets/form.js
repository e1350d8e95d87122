// A form from a JSON Schema (a tool's inputSchema, an elicitation's requestedSchema),
// built from the schema as resolved (`$ref` into `$defs`, `allOf` merged: see
// schema.js), so FastMCP and Pydantic tools get fields, not a JSON box:
//
// - an object's properties as fields (required marked, defaults filled in), a nested
//   object as a fieldset;
// - strings, numbers and integers (sent as JSON numbers), booleans; a string's
//   `format` (`email`, `date`, `date-time`, `uri`) checked before sending;
// - enums and titled constants as a select, arrays of them as a checkbox each;
// - arrays of anything else (objects included) as items to add and remove;
// - a map (`additionalProperties` and no properties) as key and value rows;
// - `anyOf`/`oneOf` of other schemas as a choice of which, then its fields;
// - nullable fields (`[X, null]`) with a "null" box.
//
// What is beyond that — a reference to another document, `not`, `if` — is a JSON
// editor for that field; the raw JSON of the whole form is one click away (the text
// there is the truth: parsed when the form is sent, never rewritten while typed).

import { h } from './dom.js';
import { resolve, unwrapNull, choices, named, formatProblem } from './schema.js';

/** How deep fields nest before a JSON editor takes over (a type that contains itself). */
const MAX_DEPTH = 10;

const PRIMITIVE = ['string', 'number', 'integer', 'boolean'];

/** The alternatives of a union (anyOf/oneOf not all constants), or null. */
function alternatives(s) {
  if (!s || typeof s !== 'object' || choices(s)) return null;
  for (const key of ['anyOf', 'oneOf']) {
    if (Array.isArray(s[key]) && s[key].length) return s[key];
  }
  if (Array.isArray(s.type) && s.type.length > 1) return s.type.map((t) => Object.assign({}, s, { type: t }));
  return null;
}

/** Whether `s` (resolved) becomes fields (else: a JSON editor). */
function supported(s) {
  if (!s || typeof s !== 'object') return false;
  if (s.$ref || s.not || s.if) return false;
  if (choices(s) || alternatives(s)) return true;
  if (PRIMITIVE.includes(s.type) || s.type === 'array') return true;
  return s.type === 'object' || (s.type === undefined && !!s.properties);
}

/** Whether the whole schema can be a form: an object, or a choice of objects. */
export function formable(schema) {
  const s = resolve(schema, schema);
  if (!s || typeof s !== 'object') return false;
  if (s.type === 'object' || (s.type === undefined && !!s.properties)) return !alternatives(s) || objectsOnly(schema, s);
  return objectsOnly(schema, s);
}

function objectsOnly(root, s) {
  const alts = alternatives(s);
  return !!alts && alts.every((a) => {
    const r = resolve(root, a);
    return r && (r.type === 'object' || (r.type === undefined && !!r.properties));
  });
}

/** One value editor; returns {el, read() -> {set, value} | throws Error}. */
function editor(ctx, schema, path, initial) {
  const { schema: open, nullable } = unwrapNull(resolve(ctx.root, schema || {}));
  const s = resolve(ctx.root, open);
  const inner = supported(s) && ctx.depth < MAX_DEPTH
    ? fieldFor({ root: ctx.root, depth: ctx.depth + 1 }, s, path, initial)
    : jsonField(path, initial);
  if (!nullable) return inner;
  const isNull = h('input', { type: 'checkbox', 'aria-label': path + ' is null', 'data-null': path, checked: initial === null });
  // Typing a value means it is not null.
  inner.el.addEventListener('input', () => { isNull.checked = false; });
  inner.el.addEventListener('change', (e) => { if (e.target !== isNull) isNull.checked = false; });
  return {
    el: h('div', { class: 'row' }, inner.el, h('label', {}, isNull, ' null')),
    read: () => (isNull.checked ? { set: true, value: null } : inner.read()),
  };
}

function fieldFor(ctx, s, path, initial) {
  const opts = choices(s);
  if (opts) {
    const select = h('select', { name: path },
      h('option', { value: '' }, '—'),
      opts.map((o, i) => h('option', { value: String(i) }, o.label)));
    const at = opts.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(initial));
    if (at >= 0) select.value = String(at);
    return { el: select, read: () => (select.value === '' ? { set: false } : { set: true, value: opts[Number(select.value)].value }) };
  }
  const alts = alternatives(s);
  if (alts) return unionField(ctx, s, alts, path, initial);
  switch (s.type) {
    case 'string': return stringField(s, path, initial);
    case 'number':
    case 'integer': {
      const input = h('input', { type: 'number', name: path, step: s.type === 'integer' ? '1' : 'any', min: s.minimum, max: s.maximum });
      if (typeof initial === 'number') input.value = String(initial);
      return {
        el: input,
        read: () => {
          if (input.value.trim() === '') return { set: false };
          const n = Number(input.value);
          if (!Number.isFinite(n)) throw new Error(path + ': not a number');
          if (s.type === 'integer' && !Number.isInteger(n)) throw new Error(path + ': not an integer');
          return { set: true, value: n };
        },
      };
    }
    case 'boolean': {
      const select = h('select', { name: path }, h('option', { value: '' }, '—'), h('option', { value: 'true' }, 'true'), h('option', { value: 'false' }, 'false'));
      if (typeof initial === 'boolean') select.value = String(initial);
      return { el: select, read: () => (select.value === '' ? { set: false } : { set: true, value: select.value === 'true' }) };
    }
    case 'array': {
      const many = choices(resolve(ctx.root, unwrapNull(resolve(ctx.root, s.items || {})).schema));
      return many ? multiField(many, path, initial) : arrayField(ctx, s, path, initial);
    }
  }
  if (!s.properties) {
    // A map of values of one schema: key and value rows; any JSON object: its JSON.
    const values = s.additionalProperties;
    return values && typeof values === 'object' ? mapField(ctx, s, path, initial) : jsonField(path, initial);
  }
  return objectField(ctx, s, path, initial);
}

/** A string, its `format` checked when it is read. */
function stringField(s, path, initial) {
  const long = (s.maxLength || 0) > 200 || s.format === 'textarea';
  const input = long ? h('textarea', { name: path }) : h('input', { type: 'text', name: path, placeholder: s.format || '', 'data-format': s.format });
  if (typeof initial === 'string') input.value = initial;
  return {
    el: input,
    read: () => {
      if (input.value === '') return { set: false };
      const problem = s.format ? formatProblem(s.format, input.value) : null;
      if (problem) throw new Error(path + ': ' + problem);
      return { set: true, value: input.value };
    },
  };
}

/** A choice among other schemas (`anyOf`/`oneOf`): which one, then its fields. */
function unionField(ctx, s, alts, path, initial) {
  const fits = (a, v) => {
    const r = resolve(ctx.root, a) || {};
    if (v === undefined) return false;
    if (Array.isArray(v)) return r.type === 'array';
    if (v === null) return r.type === 'null';
    if (typeof v === 'object') return r.type === 'object' || !!r.properties;
    if (typeof v === 'number') return r.type === 'number' || r.type === 'integer';
    return r.type === typeof v;
  };
  const start = Math.max(0, alts.findIndex((a) => fits(a, initial)));
  const which = h('select', { 'data-choice': path, 'aria-label': (path || 'value') + ': which kind' },
    alts.map((a, i) => h('option', { value: String(i) }, named(ctx.root, a))));
  which.value = String(start);
  const holder = h('div', { class: 'full' });
  let current = null;
  const show = (value) => {
    current = editor(ctx, alts[Number(which.value)], path, value);
    holder.replaceChildren(current.el);
  };
  which.addEventListener('change', () => show(undefined));
  show(fits(alts[start], initial) ? initial : undefined);
  return { el: h('div', { class: 'union' }, h('div', { class: 'row' }, which), holder), read: () => current.read() };
}

/** An array of choices (a multiple select): a checkbox per option, in their order. */
function multiField(opts, path, initial) {
  const chosen = Array.isArray(initial) ? initial.map((v) => JSON.stringify(v)) : [];
  const boxes = opts.map((o, i) => h('input', {
    type: 'checkbox', name: path, value: String(i), checked: chosen.includes(JSON.stringify(o.value)),
  }));
  return {
    el: h('div', { class: 'row choices', role: 'group', 'aria-label': path },
      opts.map((o, i) => h('label', {}, boxes[i], ' ' + o.label))),
    read: () => {
      const value = opts.filter((_, i) => boxes[i].checked).map((o) => o.value);
      return { set: value.length > 0, value };
    },
  };
}

/** Rows to add and remove; `make(i, value)` is one row's editor (its `el` and `read`). */
function rowsField(path, initial, make, addLabel) {
  const rows = h('div', { class: 'list' });
  const editors = [];
  let made = 0;
  const add = (value) => {
    const e = make(made++, value);
    const row = h('div', { class: 'row item-row', 'data-item': path }, e.el);
    const entry = { e, row };
    row.appendChild(h('button', { type: 'button', 'aria-label': 'remove item', 'data-testid': 'remove-item', onclick: () => { editors.splice(editors.indexOf(entry), 1); row.remove(); } }, '−'));
    editors.push(entry);
    rows.appendChild(row);
  };
  for (const v of initial) add(v);
  const el = h('div', { class: 'full' }, rows, h('button', { type: 'button', 'data-testid': 'add-item', 'data-for': path, onclick: () => add(undefined) }, addLabel));
  return { el, editors };
}

function arrayField(ctx, s, path, initial) {
  const { el, editors } = rowsField(path, Array.isArray(initial) ? initial : [],
    (i, v) => editor(ctx, s.items || {}, path + '/' + i, v), '+ item');
  return {
    el,
    read: () => {
      const out = [];
      for (const { e } of editors) {
        const r = e.read();
        if (r.set) out.push(r.value);
      }
      return { set: editors.length > 0, value: out };
    },
  };
}

/** A map: a key and a value per row (the value as `additionalProperties` says). */
function mapField(ctx, s, path, initial) {
  const values = s.additionalProperties;
  const start = initial && typeof initial === 'object' && !Array.isArray(initial) ? Object.entries(initial) : [];
  const { el, editors } = rowsField(path, start, (i, kv) => {
    const key = h('input', { type: 'text', name: path + '/' + i + '/key', placeholder: 'key', 'aria-label': path + ' key' });
    if (kv) key.value = kv[0];
    const value = editor(ctx, values, path + '/' + i + '/value', kv ? kv[1] : undefined);
    return { el: h('div', { class: 'row' }, key, value.el), key, value };
  }, '+ entry');
  return {
    el,
    read: () => {
      const out = {};
      for (const { e } of editors) {
        const k = e.key.value;
        const r = e.value.read();
        if (k === '' && !r.set) continue;
        if (k === '') throw new Error(path + ': an entry has no key');
        if (k in out) throw new Error(path + ': the key ' + JSON.stringify(k) + ' is given twice');
        out[k] = r.set ? r.value : null;
      }
      return { set: editors.length > 0, value: out };
    },
  };
}

function objectField(ctx, s, path, initial) {
  const props = s.properties || {};
  const required = new Set(s.required || []);
  const fields = [];
  const box = h('div', {});
  for (const [name, raw] of Object.entries(props)) {
    const ps = resolve(ctx.root, raw) || {};
    const p = path ? path + '/' + name : name;
    const start = initial && typeof initial === 'object' && name in initial ? initial[name] : ps.default;
    const e = editor(ctx, raw, p, start);
    const id = 'f-' + p.replace(/[^A-Za-z0-9_-]/g, '_');
    if (e.el.matches && e.el.matches('input,select,textarea')) e.el.id = id;
    const label = h('label', { for: id, class: required.has(name) ? 'req' : '' }, ps.title || name);
    const hint = ps.description ? h('div', { class: 'hint' }, ps.description) : null;
    box.appendChild(h('div', { class: 'field' }, label, e.el, hint));
    fields.push({ name, e, required: required.has(name) });
  }
  const el = path ? h('fieldset', { 'data-path': path }, h('legend', {}, s.title ? s.title + ' (' + path + ')' : path), box) : box;
  return {
    el,
    read: () => {
      const out = {};
      const missing = [];
      for (const f of fields) {
        const r = f.e.read();
        if (r.set) out[f.name] = r.value;
        else if (f.required) missing.push((path ? path + '/' : '') + f.name);
      }
      if (missing.length) throw new Error('required: ' + missing.join(', '));
      return { set: path ? Object.keys(out).length > 0 : true, value: out };
    },
  };
}

function jsonField(path, initial) {
  const area = h('textarea', { name: path, class: 'mono', rows: 3, placeholder: 'JSON' });
  if (initial !== undefined) area.value = JSON.stringify(initial, null, 2);
  return {
    el: area,
    read: () => {
      if (area.value.trim() === '') return { set: false };
      try { return { set: true, value: JSON.parse(area.value) }; }
      catch (e) { throw new Error(path + ': not JSON (' + e.message + ')'); }
    },
  };
}

/**
 * A form for `schema`: {el, read() -> {ok: true, value} | {ok: false, errors: [..]}}.
 * `mode` "json" starts with the JSON editor (always, when the schema is not formable).
 */
export function schemaForm(schema, mode) {
  const canForm = formable(schema);
  let json = mode === 'json' || !canForm;
  const holder = h('div', {});
  const area = h('textarea', { class: 'mono', rows: 8, 'data-testid': 'json-args', 'aria-label': 'arguments as JSON' });
  const ctx = { root: schema, depth: 0 };
  const root = resolve(schema, schema);
  let form = null;
  if (canForm) {
    const alts = alternatives(root);
    form = alts ? unionField(ctx, root, alts, '', undefined) : objectField(ctx, root, '', undefined);
  }
  const toggle = h('button', { type: 'button', 'data-testid': 'toggle-json', disabled: !canForm }, '');
  const show = () => {
    toggle.textContent = json ? 'form' : 'JSON';
    holder.replaceChildren(json ? area : form.el);
  };
  toggle.addEventListener('click', () => {
    if (!json) {
      // Into the editor with what the form holds so far.
      try { area.value = JSON.stringify(form.read().value || {}, null, 2); } catch (_) { area.value = area.value || '{}'; }
    }
    json = !json;
    show();
  });
  if (!area.value) area.value = '{}';
  show();
  const note = canForm ? null : h('p', { class: 'muted' }, 'This schema is beyond the form: edit the arguments as JSON (checked against the schema before sending).');
  return {
    el: h('div', {}, note, holder, h('div', { class: 'row' }, toggle)),
    read: () => {
      if (json) {
        let v;
        try { v = JSON.parse(area.value || '{}'); } catch (e) { return { ok: false, errors: ['not JSON: ' + e.message] }; }
        if (!v || typeof v !== 'object' || Array.isArray(v)) return { ok: false, errors: ['the arguments must be a JSON object'] };
        return { ok: true, value: v };
      }
      try {
        const r = form.read();
        return { ok: true, value: r.set ? r.value : {} };
      } catch (e) { return { ok: false, errors: [e.message] }; }
    },
  };
}
