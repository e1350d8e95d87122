// A form from a JSON Schema (a tool's inputSchema, an elicitation's requestedSchema).
//
// The subset made into fields: an object's properties (required marked, defaults
// filled in), strings, numbers and integers (sent as JSON numbers), booleans, enums
// (labelled by `enumNames` where given) and oneOf/anyOf of titled constants (a
// select), arrays of those choices (a checkbox each), arrays of other primitives
// (repeatable rows), nested objects (a fieldset), and `anyOf/oneOf: [X, {type:
// "null"}]` or `type: [X, "null"]` (X with a "null" box). Anything else — $ref, allOf, a root union, arrays of objects —
// is a JSON editor for that field, or for the whole form. In the JSON editor the text
// is the truth: it is parsed when the form is sent, never rewritten while typed.

import { h } from './dom.js';

/** X of `[X, null]`, with `nullable`; the schema itself otherwise. */
function unwrapNull(s) {
  if (!s || typeof s !== 'object') return { schema: s, nullable: false };
  if (Array.isArray(s.type)) {
    const rest = s.type.filter((t) => t !== 'null');
    if (rest.length === 1 && rest.length < s.type.length) {
      return { schema: Object.assign({}, s, { type: rest[0] }), nullable: true };
    }
  }
  for (const key of ['anyOf', 'oneOf']) {
    const alts = s[key];
    if (Array.isArray(alts) && alts.length === 2) {
      const i = alts.findIndex((a) => a && a.type === 'null');
      if (i >= 0) {
        const base = Object.assign({}, s);
        delete base[key];
        return { schema: Object.assign(base, alts[1 - i]), nullable: true };
      }
    }
  }
  return { schema: s, nullable: false };
}

/**
 * The options of a choice: `enum` values (labelled by the legacy `enumNames` when it
 * names each one), or the constants of a `oneOf` or `anyOf` (labelled by their
 * `title`s, as elicitation's titled single and multiple selects give them).
 */
function choices(s) {
  if (!s || typeof s !== 'object') return null;
  if (Array.isArray(s.enum)) {
    const names = Array.isArray(s.enumNames) && s.enumNames.length === s.enum.length ? s.enumNames : null;
    return s.enum.map((v, i) => ({ value: v, label: names ? String(names[i]) : String(v) }));
  }
  for (const key of ['oneOf', 'anyOf']) {
    const alts = s[key];
    if (Array.isArray(alts) && alts.length && alts.every((o) => o && typeof o === 'object' && 'const' in o)) {
      return alts.map((o) => ({ value: o.const, label: o.title ? String(o.title) : String(o.const) }));
    }
  }
  return null;
}

const PRIMITIVE = ['string', 'number', 'integer', 'boolean'];

/** Whether `s` becomes a field (else: a JSON editor). */
function supported(s) {
  if (!s || typeof s !== 'object') return false;
  if (s.$ref || s.allOf || s.not || s.if) return false;
  if (choices(s)) return true;
  if (s.anyOf || s.oneOf) return false;
  if (PRIMITIVE.includes(s.type)) return true;
  if (s.type === 'array') {
    const items = unwrapNull(s.items || {}).schema;
    return !!items && (PRIMITIVE.includes(items.type) || !!choices(items));
  }
  if (s.type === 'object') return !s.additionalProperties || !!s.properties;
  return false;
}

/** Whether the whole schema can be a form. */
export function formable(schema) {
  if (!schema || typeof schema !== 'object') return false;
  const object = schema.type === 'object' || (schema.type === undefined && !!schema.properties);
  return object && !schema.anyOf && !schema.oneOf && !schema.allOf && !schema.$ref;
}

/** One value editor; returns {el, read() -> {set, value} | throws Error}. */
function editor(schema, path, initial) {
  const { schema: s, nullable } = unwrapNull(schema || {});
  const inner = supported(s) ? fieldFor(s, path, initial) : jsonField(path, initial);
  if (!nullable) return inner;
  const isNull = h('input', { type: 'checkbox', 'aria-label': path + ' is null', checked: initial === null });
  return {
    el: h('div', { class: 'row' }, inner.el, h('label', {}, isNull, ' null')),
    read: () => (isNull.checked ? { set: true, value: null } : inner.read()),
  };
}

function fieldFor(s, path, initial) {
  const opts = choices(s);
  if (opts) {
    const select = h('select', { name: path },
      h('option', { value: '' }, '—'),
      opts.map((o, i) => h('option', { value: String(i) }, o.label)));
    const at = opts.findIndex((o) => JSON.stringify(o.value) === JSON.stringify(initial));
    if (at >= 0) select.value = String(at);
    return { el: select, read: () => (select.value === '' ? { set: false } : { set: true, value: opts[Number(select.value)].value }) };
  }
  switch (s.type) {
    case 'string': {
      const long = (s.maxLength || 0) > 200 || s.format === 'textarea';
      const input = long ? h('textarea', { name: path }) : h('input', { type: 'text', name: path, placeholder: s.format || '' });
      if (typeof initial === 'string') input.value = initial;
      return { el: input, read: () => (input.value === '' ? { set: false } : { set: true, value: input.value }) };
    }
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
          if (s.type === 'integer' && !Number.isInteger(n)) throw new Error(path + ': must be an integer');
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
      const many = choices(unwrapNull(s.items || {}).schema);
      return many ? multiField(many, path, initial) : arrayField(s, path, initial);
    }
    case 'object':
      return objectField(s, path, initial);
  }
  return jsonField(path, initial);
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

function arrayField(s, path, initial) {
  const rows = h('div', { class: 'list' });
  const editors = [];
  const add = (value) => {
    const i = editors.length;
    const e = editor(s.items || {}, path + '/' + i, value);
    const row = h('div', { class: 'row' }, e.el);
    const entry = { e, row };
    row.appendChild(h('button', { type: 'button', 'aria-label': 'remove item', onclick: () => { editors.splice(editors.indexOf(entry), 1); row.remove(); } }, '−'));
    editors.push(entry);
    rows.appendChild(row);
  };
  for (const v of Array.isArray(initial) ? initial : []) add(v);
  const el = h('div', {}, rows, h('button', { type: 'button', 'data-testid': 'add-item', onclick: () => add(undefined) }, '+ item'));
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

function objectField(s, path, initial) {
  const props = s.properties || {};
  const required = new Set(s.required || []);
  const fields = [];
  const box = h('div', {});
  for (const [name, ps] of Object.entries(props)) {
    const p = path ? path + '/' + name : name;
    const start = initial && typeof initial === 'object' && name in initial ? initial[name] : (ps ? ps.default : undefined);
    const e = editor(ps, p, start);
    const id = 'f-' + p.replace(/[^A-Za-z0-9_-]/g, '_');
    if (e.el.matches && e.el.matches('input,select,textarea')) e.el.id = id;
    const label = h('label', { for: id, class: required.has(name) ? 'req' : '' }, (ps && ps.title) || name);
    const hint = ps && ps.description ? h('div', { class: 'hint' }, ps.description) : null;
    box.appendChild(h('div', { class: 'field' }, label, e.el, hint));
    fields.push({ name, e, required: required.has(name) });
  }
  const el = path ? h('fieldset', {}, h('legend', {}, path), box) : box;
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
  let form = canForm ? objectField(schema, '', undefined) : null;
  const toggle = h('button', { type: 'button', 'data-testid': 'toggle-json', disabled: !canForm }, '');
  const show = () => {
    toggle.textContent = json ? 'form' : 'JSON';
    holder.replaceChildren(json ? area : form.el);
  };
  toggle.addEventListener('click', () => {
    if (!json) {
      // Into the editor with what the form holds so far.
      try { area.value = JSON.stringify(form.read().value, null, 2); } catch (_) { area.value = area.value || '{}'; }
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
      try { return { ok: true, value: form.read().value }; }
      catch (e) { return { ok: false, errors: [e.message] }; }
    },
  };
}
