// MCP Apps: a tool's `ui://` view in a sandboxed iframe (scripts only, an opaque
// origin: it cannot reach the inspector's cookie or API), under the policy capable
// made from the resource's declared domains. The host side of the bridge is here:
// JSON-RPC over postMessage — `ui/initialize` (with the page's theme and its colours
// as the extension's style variables, sent again when the system's theme changes),
// then the tool's input and result as notifications; the view may call `tools/call`
// (of a tool visible to apps) and `resources/read` on its own server (through the
// same gating table), log, ask for its height, and ask to open a web link — which
// the person sees and opens or declines in the page, never the view by itself. Every
// bridge message is listed under the view, with its payload.

import { h, fill, post, errorText } from './dom.js';

const HOST = { name: 'capable ui', version: '0.1.0' };
/** The most of a bridge message's payload the list shows. */
const SHOWN = 2000;

const dark = matchMedia('(prefers-color-scheme: dark)');

/** The page's colours and fonts as MCP Apps' standard style variables. */
function styleVariables() {
  const css = getComputedStyle(document.documentElement);
  const v = (name) => css.getPropertyValue(name).trim() || undefined;
  return {
    '--color-background-primary': v('--panel'),
    '--color-background-secondary': v('--bg'),
    '--color-background-tertiary': v('--code'),
    '--color-text-primary': v('--fg'),
    '--color-text-secondary': v('--muted'),
    '--color-text-info': v('--accent'),
    '--color-text-danger': v('--bad'),
    '--color-text-success': v('--ok'),
    '--color-text-warning': v('--warn'),
    '--color-border-primary': v('--line'),
    '--color-ring-primary': v('--focus'),
    '--font-sans': css.fontFamily,
    '--font-mono': 'ui-monospace, "SF Mono", Menlo, Consolas, monospace',
  };
}

/** The part of the host context that follows the system: the theme and its colours. */
function themeContext() {
  return { theme: dark.matches ? 'dark' : 'light', styles: { variables: styleVariables() } };
}

/** `url` as an http(s) link the page may offer to open; null for anything else. */
function webLink(url) {
  try {
    const u = new URL(String(url));
    return (u.protocol === 'http:' || u.protocol === 'https:') ? u.href : null;
  } catch (_) { return null; }
}

/** A JSON-RPC error for the view from a failed command: refused here (-32600), or failed on the way (-32603). */
function failed(c) {
  return { error: { code: c.status === 403 || c.status === 409 ? -32600 : -32603, message: errorText(c) } };
}

/** One bridge message in the list: its direction and method, its payload one click away. */
function entry(dir, m) {
  const what = m.method || (m.error ? 'error ' + m.id : 'answer ' + m.id);
  const text = JSON.stringify(m.params !== undefined ? m.params : (m.result !== undefined ? m.result : m.error)) || '';
  return h('li', { 'data-testid': 'app-log-entry', 'data-method': m.method || '' },
    h('details', {}, h('summary', {}, dir + ' ' + what),
      h('pre', { class: 'payload' }, text.length > SHOWN ? text.slice(0, SHOWN) + ' … (' + text.length + ' characters)' : text)));
}

/** Mounts the view of `tool` after a call with `args` that gave `result`. */
export async function mountApp(server, tool, args, result, box) {
  const uri = tool._meta && tool._meta.ui && tool._meta.ui.resourceUri;
  if (!uri) return;
  const r = await post('/api/app', { server, uri });
  if (!r.ok) { fill(box, h('p', { class: 'errors' }, 'The view ' + uri + ' cannot be shown: ' + errorText(r))); return; }
  const frame = h('iframe', {
    src: '/app/' + r.body.id, sandbox: 'allow-scripts', title: 'MCP App ' + uri,
    'data-testid': 'app-frame', class: 'app-frame', referrerpolicy: 'no-referrer',
  });
  const log = h('ol', { class: 'mono muted app-log', 'data-testid': 'app-log' });
  const links = h('div', {});
  let initialized = false;
  const send = (m) => { log.appendChild(entry('→', m)); frame.contentWindow.postMessage(m, '*'); };
  const answer = (id, res) => send(Object.assign({ jsonrpc: '2.0', id }, res));
  // The frame's own colour scheme is the one the view is told: a view that takes it
  // is drawn on the page's panel; one that does not keeps its own (light) canvas.
  const theme = () => { frame.style.colorScheme = dark.matches ? 'dark' : 'light'; };
  const onTheme = () => {
    theme();
    if (initialized) send({ jsonrpc: '2.0', method: 'ui/notifications/host-context-changed', params: themeContext() });
  };
  theme();
  const onMessage = async (e) => {
    if (!frame.isConnected) {
      window.removeEventListener('message', onMessage);
      dark.removeEventListener('change', onTheme);
      return;
    }
    if (e.source !== frame.contentWindow) return;
    const m = e.data;
    if (!m || m.jsonrpc !== '2.0' || typeof m.method !== 'string') return;
    log.appendChild(entry('←', m));
    const p = m.params || {};
    switch (m.method) {
      case 'ui/initialize':
        answer(m.id, { result: {
          protocolVersion: p.protocolVersion, hostInfo: HOST,
          hostCapabilities: { serverTools: {}, serverResources: {}, logging: {}, openLinks: {} },
          hostContext: Object.assign(themeContext(), {
            displayMode: 'inline', availableDisplayModes: ['inline'], platform: 'web',
            locale: navigator.language, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
            toolInfo: { tool },
          }),
        } });
        return;
      case 'ui/notifications/initialized':
        initialized = true;
        send({ jsonrpc: '2.0', method: 'ui/notifications/tool-input', params: { arguments: args } });
        send({ jsonrpc: '2.0', method: 'ui/notifications/tool-result', params: result });
        return;
      // The view's own calls go with its id: capable sends them to the view's server
      // only, and refuses a tool whose visibility leaves apps out (nothing is sent).
      case 'tools/call': {
        const c = await post('/api/app/call', { view: r.body.id, name: p.name, arguments: p.arguments || {} });
        answer(m.id, c.ok ? { result: c.body } : failed(c));
        return;
      }
      case 'resources/read': {
        const c = await post('/api/app/read', { view: r.body.id, uri: p.uri });
        answer(m.id, c.ok ? { result: { contents: c.body.contents } } : failed(c));
        return;
      }
      case 'ping':
        answer(m.id, { result: {} });
        return;
      case 'ui/open-link': {
        const url = webLink(p.url);
        if (!url) { answer(m.id, { result: { isError: true } }); return; }
        // Offered to the person, one at a time: a new ask replaces an unanswered one.
        if (links.pending) links.pending(false);
        const done = (opened) => { links.pending = null; fill(links, ''); answer(m.id, { result: opened ? {} : { isError: true } }); };
        links.pending = done;
        fill(links, h('div', { class: 'row', 'data-testid': 'app-link' },
          h('span', {}, 'The view asks to open '), h('code', { 'data-testid': 'app-link-url' }, url),
          h('button', { type: 'button', 'data-testid': 'app-link-open', onclick: () => { window.open(url, '_blank', 'noopener,noreferrer'); done(true); } }, 'Open'),
          h('button', { type: 'button', 'data-testid': 'app-link-dismiss', onclick: () => done(false) }, 'Dismiss')));
        return;
      }
      case 'ui/notifications/size-changed':
        if (typeof p.height === 'number') frame.style.height = Math.max(60, Math.min(2000, p.height)) + 'px';
        return;
      case 'notifications/message':
        return; // listed above, with its payload
      default:
        if (m.id !== undefined) answer(m.id, { error: { code: -32601, message: m.method + ' is not offered by capable ui' } });
    }
  };
  window.addEventListener('message', onMessage);
  dark.addEventListener('change', onTheme);
  fill(box, h('div', { class: 'card', 'data-testid': 'app' },
    h('h4', {}, 'App view ', h('code', {}, uri)), frame, links,
    h('details', { 'data-testid': 'app-messages' }, h('summary', {}, 'bridge messages'), log),
    h('details', {}, h('summary', {}, 'policy'), h('pre', {}, r.body.csp))));
}
