// The page's one live stream, GET /api/events, read as Server-Sent Events over
// fetch — not EventSource, which cannot send the page's secret as a header. Each
// event is dispatched by its name; when the stream ends or fails it is opened again
// after a second with Last-Event-ID, and the server sends what was missed.

import { apiHeaders } from './dom.js';

/** Follows the stream: `on[name](data)` for each event, `status(text, live)` as it changes. */
export function follow(on, status) {
  let last = null;
  const dispatch = (block) => {
    let name = 'message';
    const data = [];
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':');
      if (colon === 0) continue; // a comment: the keep-alive
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') name = value;
      else if (field === 'data') data.push(value);
      else if (field === 'id') last = value;
    }
    if (!data.length || !on[name]) return;
    let parsed = null;
    try { parsed = JSON.parse(data.join('\n')); } catch (_) { return; }
    on[name](parsed);
  };
  const run = async () => {
    for (;;) {
      try {
        const headers = apiHeaders(last ? { 'Last-Event-ID': last } : {});
        const r = await fetch('/api/events', { headers, credentials: 'same-origin', cache: 'no-store' });
        if (r.status === 401) { status('no session: open the URL capable ui printed', false); return; }
        if (r.ok && r.body) {
          status('live', true);
          const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
          let buffer = '';
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buffer += value.replace(/\r\n?/g, '\n');
            let end;
            while ((end = buffer.indexOf('\n\n')) >= 0) {
              dispatch(buffer.slice(0, end));
              buffer = buffer.slice(end + 2);
            }
          }
        }
      } catch (_) { /* reconnect below */ }
      status('reconnecting…', false);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  };
  run();
}
