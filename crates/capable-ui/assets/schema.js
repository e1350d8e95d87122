// What the forms need to know of a JSON Schema, as SDKs write them: FastMCP and
// Pydantic put their types in `$defs` and point at them with `$ref`, join them with
// `allOf`, offer alternatives with `anyOf`/`oneOf`, make a field nullable with
// `anyOf: [X, {type: "null"}]` or `type: [X, "null"]`.
//
// References are followed within the document only (`#/$defs/X`, `#/definitions/X`,
// any JSON pointer, a `$anchor`), a chain of them at most MAX_HOPS long; a reference
// to another document is never fetched (its field is a JSON editor). The same
// resolution as capable's `tools show` and its validator, which checks the arguments
// again before anything is sent.

/** The most `$ref` hops followed for one schema. */
const MAX_HOPS = 16;

/** The value at JSON pointer `ptr` (`/a/b~1c`) in `doc`, or undefined. */
function at(doc, ptr) {
  let v = doc;
  for (const raw of ptr.split('/').slice(1)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!v || typeof v !== 'object' || !Object.prototype.hasOwnProperty.call(v, key)) return undefined;
    v = v[key];
  }
  return v;
}

/** The schema a `$ref` names within `root`, or undefined. */
function target(root, ref) {
  if (typeof ref !== 'string' || !ref.startsWith('#')) return undefined;
  if (ref === '#') return root;
  if (ref.startsWith('#/')) return at(root, ref.slice(1));
  // `#name`: the schema whose `$anchor` is name (searched, bounded).
  const name = ref.slice(1);
  const todo = [root];
  for (let seen = 0; todo.length && seen < 10000; seen++) {
    const s = todo.pop();
    if (!s || typeof s !== 'object') continue;
    if (s.$anchor === name) return s;
    for (const v of Object.values(s)) if (v && typeof v === 'object') todo.push(v);
  }
  return undefined;
}

/**
 * `s` with its `$ref` (a chain of them) replaced by what it names, its own keywords
 * (a `title` or `description` beside the `$ref`) kept over the target's, and its
 * `allOf` members merged into it (their properties and required joined). A reference
 * that cannot be followed stays, and makes the field a JSON editor.
 */
export function resolve(root, s) {
  if (!s || typeof s !== 'object' || Array.isArray(s)) return s;
  let out = s;
  for (let hops = 0; hops < MAX_HOPS && typeof out.$ref === 'string'; hops++) {
    const t = target(root, out.$ref);
    if (!t || typeof t !== 'object') break;
    const own = Object.assign({}, out);
    delete own.$ref;
    out = Object.assign({}, t, own);
  }
  if (Array.isArray(out.allOf) && typeof out.$ref !== 'string') {
    const merged = Object.assign({}, out);
    delete merged.allOf;
    for (const member of out.allOf) {
      const m = resolve(root, member);
      if (!m || typeof m !== 'object') continue;
      const props = Object.assign({}, merged.properties || {}, m.properties || {});
      const required = [...new Set([...(merged.required || []), ...(m.required || [])])];
      const own = Object.assign({}, merged);
      Object.assign(merged, m, own);
      if (Object.keys(props).length) merged.properties = props;
      if (required.length) merged.required = required;
    }
    out = merged;
  }
  return out;
}

/** X of `[X, null]`, with `nullable`; the schema itself otherwise. */
export function unwrapNull(s) {
  if (!s || typeof s !== 'object') return { schema: s, nullable: false };
  if (Array.isArray(s.type)) {
    const rest = s.type.filter((t) => t !== 'null');
    if (rest.length === 1 && rest.length < s.type.length) {
      return { schema: Object.assign({}, s, { type: rest[0] }), nullable: true };
    }
  }
  for (const key of ['anyOf', 'oneOf']) {
    const alts = s[key];
    if (!Array.isArray(alts)) continue;
    const rest = alts.filter((a) => !(a && a.type === 'null'));
    if (rest.length === alts.length || rest.length === 0) continue;
    const base = Object.assign({}, s);
    delete base[key];
    // One alternative left: that one; more: still a choice among them.
    return { schema: rest.length === 1 ? Object.assign(base, rest[0]) : Object.assign(base, { [key]: rest }), nullable: true };
  }
  return { schema: s, nullable: false };
}

/**
 * The options of a choice: `enum` values (labelled by the legacy `enumNames` when it
 * names each one), or the constants of a `oneOf` or `anyOf` (labelled by their
 * `title`s, as elicitation's titled single and multiple selects give them).
 */
export function choices(s) {
  if (!s || typeof s !== 'object') return null;
  if (Array.isArray(s.enum)) {
    const names = Array.isArray(s.enumNames) && s.enumNames.length === s.enum.length ? s.enumNames : null;
    return s.enum.map((v, i) => ({ value: v, label: names ? String(names[i]) : String(v) }));
  }
  if ('const' in s) return [{ value: s.const, label: s.title ? String(s.title) : String(s.const) }];
  for (const key of ['oneOf', 'anyOf']) {
    const alts = s[key];
    if (Array.isArray(alts) && alts.length && alts.every((o) => o && typeof o === 'object' && 'const' in o)) {
      return alts.map((o) => ({ value: o.const, label: o.title ? String(o.title) : String(o.const) }));
    }
  }
  return null;
}

/** A few words for a schema (an alternative's label): its title, else its type. */
export function named(root, s) {
  const r = resolve(root, s) || {};
  if (r.title) return String(r.title);
  if (r.type === 'array') {
    const items = resolve(root, r.items || {}) || {};
    return 'list of ' + (items.title || items.type || 'values');
  }
  if (r.type === 'object' && !r.properties && r.additionalProperties) return 'map';
  return Array.isArray(r.type) ? r.type.join(' or ') : String(r.type || 'value');
}

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;

/** Why `value` is not of `format` (`email`, `date`, `date-time`, `uri`), or null. */
export function formatProblem(format, value) {
  switch (format) {
    case 'email':
      return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ? null : 'not an email address';
    case 'date': {
      const m = DATE.exec(value);
      const d = m && new Date(Date.UTC(+m[1], +m[2] - 1, +m[3]));
      return d && d.getUTCMonth() === +m[2] - 1 && d.getUTCDate() === +m[3] ? null : 'not a date (YYYY-MM-DD)';
    }
    case 'date-time':
      return DATE_TIME.test(value) && !Number.isNaN(Date.parse(value.replace(' ', 'T'))) ? null : 'not a date and time (RFC 3339, as 2026-12-06T10:00:00Z)';
    case 'uri':
      return /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$/.test(value) ? null : 'not a URI (a scheme, then its address)';
    default:
      return null;
  }
}
