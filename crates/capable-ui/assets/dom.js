// DOM helpers. Everything a server says reaches the page as text (textContent), never
// as markup: a server's words cannot add elements, scripts or links.

/** h('div', {class: 'x', 'data-testid': 'y', onclick: f}, 'text', child, [more]) */
export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = v;
    else if (k === 'checked') el.checked = !!v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else if (c instanceof Node) el.appendChild(c);
    else el.appendChild(document.createTextNode(String(c)));
  }
}

/** Pretty JSON in a <pre>. */
export function json(value, attrs) {
  return h('pre', attrs || {}, JSON.stringify(value, null, 2));
}

/** A badge for a state or a yes/no. */
export function badge(text, kind, attrs) {
  return h('span', Object.assign({ class: 'badge ' + (kind || text) }, attrs || {}), text);
}

/** Where this tab keeps its secret (its own tab only; never in the DOM or a URL). */
const KEPT = 'capable-ui-page';
let secret = null;

/**
 * This page's secret: on the first load the printed token is taken out of the
 * address bar and traded for it (the token goes no further than this request);
 * a reload finds it in the tab's sessionStorage. False when there is none.
 */
export async function startSession() {
  const token = new URLSearchParams(location.search).get('token');
  if (token !== null) {
    history.replaceState(null, '', '/');
    try {
      const r = await fetch('/api/session', {
        method: 'POST', body: '{}', credentials: 'same-origin',
        headers: { 'Content-Type': 'application/json', Authorization: 'Bearer ' + token },
      });
      if (r.ok) sessionStorage.setItem(KEPT, (await r.json()).page);
    } catch (_) { /* said below: no secret */ }
  }
  secret = sessionStorage.getItem(KEPT);
  return !!secret;
}

/** Where this tab keeps the timeout the person set (seconds; none: the run's). */
const TIMEOUT = 'capable-ui-timeout';

/** The timeout field in the header: kept for the tab, sent with every call. */
export function timeoutField(input) {
  input.value = sessionStorage.getItem(TIMEOUT) || '';
  input.addEventListener('change', () => {
    const s = Number(input.value);
    if (input.value.trim() !== '' && s > 0) sessionStorage.setItem(TIMEOUT, String(s));
    else { sessionStorage.removeItem(TIMEOUT); input.value = ''; }
  });
}

/**
 * The headers every API call carries: the page's secret, the timeout the person set
 * (`X-Capable-Timeout`, in ms: past it the request is cancelled), and `extra`.
 */
export function apiHeaders(extra) {
  const headers = { 'X-Capable-Page': secret || '' };
  const s = Number(sessionStorage.getItem(TIMEOUT));
  if (s > 0) headers['X-Capable-Timeout'] = String(Math.round(s * 1000));
  return Object.assign(headers, extra || {});
}

async function answer(r) {
  let parsed = null;
  try { parsed = await r.json(); } catch (_) { parsed = null; }
  return { ok: r.ok, status: r.status, body: parsed };
}

/** GET an API path; resolves to {ok, status, body}. */
export async function get(path) {
  return answer(await fetch(path, { headers: apiHeaders(), credentials: 'same-origin' }));
}

/** POST a command; resolves to {ok, status, body}. */
export async function post(path, body) {
  return answer(await fetch(path, {
    method: 'POST',
    headers: apiHeaders({ 'Content-Type': 'application/json' }),
    body: JSON.stringify(body),
    credentials: 'same-origin',
  }));
}

/** The words of an error answer (the CLI's `{"error": {...}}`). */
export function errorText(answer) {
  const e = answer && answer.body && answer.body.error;
  if (e && e.message) return e.kind + ': ' + e.message;
  return 'HTTP ' + (answer ? answer.status : '?');
}

/** Replaces the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Saves text as a file (the audit's Markdown). */
export function download(name, text, type) {
  const url = URL.createObjectURL(new Blob([text], { type: type || 'text/plain' }));
  const a = h('a', { href: url, download: name });
  document.body.appendChild(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

/** A time of day from an RFC 3339 stamp. */
export function clock(at) {
  return typeof at === 'string' && at.length >= 23 ? at.slice(11, 23) : String(at || '');
}
