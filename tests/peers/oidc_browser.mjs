// A scripted browser for the OAuth login tests: GETs the authorization URL and follows
// its redirects with the cookies they set, as a browser would, until one goes to the
// loopback redirect URI (127.0.0.1:PORT/callback).
//
//   node tests/peers/oidc_browser.mjs URL          follow it there too (browser login)
//   node tests/peers/oidc_browser.mjs --print URL  print that address instead (paste login)
const print = process.argv[2] === "--print";
let url = process.argv[print ? 3 : 2];
const cookies = new Map();
for (let hop = 0; hop < 20; hop++) {
  const res = await fetch(url, {
    redirect: "manual",
    headers: { cookie: [...cookies].map(([k, v]) => `${k}=${v}`).join("; ") },
  });
  for (const c of res.headers.getSetCookie()) {
    const [pair] = c.split(";");
    const i = pair.indexOf("=");
    cookies.set(pair.slice(0, i).trim(), pair.slice(i + 1).trim());
  }
  const location = res.headers.get("location");
  if (!location) {
    if (new URL(url).pathname === "/callback") process.exit(res.ok ? 0 : 1);
    console.error(`stopped at ${url}: HTTP ${res.status}`);
    process.exit(1);
  }
  url = new URL(location, url).href;
  if (new URL(url).hostname === "127.0.0.1" && new URL(url).pathname === "/callback" && print) {
    console.log(url);
    process.exit(0);
  }
}
console.error("too many redirects");
process.exit(1);
