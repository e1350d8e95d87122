// A scripted browser for the OAuth login tests, acting as the person at the keyboard:
// GETs a URL and follows its redirects with the cookies they set, and on a page with
// a form submits it as shown — its hidden fields kept, a login form's empty user and
// password filled in (`mcp-user`, `secret`), a device code confirmed — until it is
// sent to the client's loopback redirect (a URL carrying `state` and a `code` or an
// `error`, on another port of the loopback), or, for a device code, to a page that
// asks nothing more.
//
//   node tests/peers/browser.mjs URL          follow it to the end (browser login, device)
//   node tests/peers/browser.mjs --print URL  print the redirect address instead of
//                                             following it (paste login)
//
// Exit 0 when it got there; 1 with the page it stopped at otherwise.
const print = process.argv[2] === "--print";
let url = new URL(process.argv[print ? 3 : 2]);
const start = url;
const codeFlow = start.searchParams.has("redirect_uri");
const fill = { username: "mcp-user", login: "mcp-user", password: "secret" };
const cookies = new Map();
const loopback = (u) => ["127.0.0.1", "localhost", "[::1]"].includes(u.hostname);
const isRedirect = (u) =>
  loopback(u) && u.port !== start.port && u.searchParams.has("state") &&
  (u.searchParams.has("code") || u.searchParams.has("error"));

function forms(html) {
  const out = [];
  for (const m of html.matchAll(/<form\b([^>]*)>([\s\S]*?)<\/form>/gi)) {
    const attr = (name, s) => (s.match(new RegExp(`\\b${name}\\s*=\\s*"([^"]*)"`, "i")) || [])[1];
    const fields = new URLSearchParams();
    for (const input of m[2].matchAll(/<input\b([^>]*)>/gi)) {
      const name = attr("name", input[1]);
      if (!name) continue;
      const value = attr("value", input[1]) ?? "";
      fields.append(name, value || fill[name] || "");
    }
    out.push({ method: (attr("method", m[1]) || "get").toLowerCase(), action: attr("action", m[1]) || "", fields });
  }
  return out;
}

let request = { method: "GET" };
for (let hop = 0; hop < 30; hop++) {
  const res = await fetch(url, {
    method: request.method,
    body: request.body,
    redirect: "manual",
    headers: {
      cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; "),
      ...(request.body ? { "content-type": "application/x-www-form-urlencoded" } : {}),
    },
  });
  request = { method: "GET" };
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(";");
    const i = pair.indexOf("=");
    cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
  }
  const location = res.headers.get("location");
  if (location) {
    url = new URL(location, url);
    if (isRedirect(url) && print) {
      console.log(url.href);
      process.exit(0);
    }
    continue;
  }
  if (isRedirect(url)) process.exit(res.ok ? 0 : 1);
  const page = await res.text();
  const form = forms(page).find((f) => f.method === "post");
  if (res.ok && form) {
    url = new URL(form.action || url.href, url);
    request = { method: "POST", body: form.fields.toString() };
    continue;
  }
  if (res.ok && !codeFlow) process.exit(0);
  console.error(`stopped at ${url.href}: HTTP ${res.status}: ${page.slice(0, 300)}`);
  process.exit(1);
}
console.error("too many redirects");
process.exit(1);
