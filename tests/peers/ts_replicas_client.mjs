// The TypeScript SDK's client (npm @modelcontextprotocol/sdk, .peers/npm) in one legacy
// session with a gateway of many replicas, calling a tool in a loop whatever happens to the
// replicas behind (the replica test kills one meanwhile).
//
//   node tests/peers/ts_replicas_client.mjs URL N PAUSE_MS [SUBSCRIBE_URI]
//
// With SUBSCRIBE_URI, first subscribes to that resource (`resources/subscribe`) and counts
// the `notifications/resources/updated` that come for it on its standalone GET stream.
// Calls `echo` N times, PAUSE_MS apart, in the one session it opened; prints one JSON line
// per call as it ends — {"i", "ok": true, "text", "session", "updates"} or {"i", "ok":
// false, "error", "session", "updates"} — then {"done": true, "updates"}. A failed call
// does not end the loop: the next one goes on in the same session. PEERS_DIR overrides the
// .peers folder.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.PEERS_DIR || path.join(here, "..", "..", ".peers");
const base = path.join(peers, "npm/node_modules/@modelcontextprotocol/sdk/dist/esm");
const load = (rel) => import(pathToFileURL(path.join(base, rel)).href);

const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ResourceUpdatedNotificationSchema } = await load("types.js");

const [url, n, pause, subscribe] = process.argv.slice(2);
const client = new Client({ name: "ts-replicas-host", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url));
// The standalone GET stream may drop with its replica: said, never fatal.
transport.onerror = () => {};
await client.connect(transport);
let updates = 0;
client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
  if (n.params.uri === subscribe) updates++;
});
if (subscribe) await client.subscribeResource({ uri: subscribe });
const print = (line) => process.stdout.write(JSON.stringify({ ...line, updates }) + "\n");
for (let i = 0; i < Number(n); i++) {
  const session = transport.sessionId;
  try {
    const result = await client.callTool(
      { name: "echo", arguments: { message: `call ${i}` } },
      undefined,
      { timeout: 10000 },
    );
    print({ i, ok: true, text: result.content?.[0]?.text, session });
  } catch (e) {
    print({ i, ok: false, error: String(e?.message ?? e), session });
  }
  await new Promise((resolve) => setTimeout(resolve, Number(pause)));
}
print({ done: true, session: transport.sessionId });
await client.close();
