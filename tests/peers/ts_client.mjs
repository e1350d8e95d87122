// A host on the TypeScript SDK's client — v1 (npm @modelcontextprotocol/sdk 1.32.2, .peers/npm)
// or v2 (npm @modelcontextprotocol/client 2.4.0, .peers/client-v2) — for the bridge's tests.
//   node tests/peers/ts_client.mjs SDK -- CMD ARGS…      the server is a stdio command (the bridge)
//   node tests/peers/ts_client.mjs SDK --url URL         the server is Streamable HTTP at URL
// SDK is v1 (the initialize handshake), v2 (its default, legacy) or v2-modern (auto: it probes
// server/discover first). `--echo NAME` names the tool to call as echo (default `echo`). The host declares elicitation and accepts every question with
// {"approve": true}. It connects, lists and calls what the server offers, and prints one JSON
// object: what it saw. PEERS_DIR overrides the .peers folder.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.PEERS_DIR || path.join(here, "..", "..", ".peers");
const load = (rel) => import(pathToFileURL(path.join(peers, rel)).href);

const [sdk, ...rest] = process.argv.slice(2);
const dash = rest.indexOf("--");
// Only this script's own arguments (before `--`) may name a URL: the server's are its own.
const own = dash === -1 ? rest : rest.slice(0, dash);
const url = own.includes("--url") ? own[own.indexOf("--url") + 1] : null;
const command = dash === -1 ? [] : rest.slice(dash + 1);
const echoTool = own.includes("--echo") ? own[own.indexOf("--echo") + 1] : "echo";

const info = { name: `ts-sdk-${sdk}-host`, version: "1.0.0" };
const accept = async () => ({ action: "accept", content: { approve: true } });
let client;
let transport;
if (sdk === "v1") {
  const base = "npm/node_modules/@modelcontextprotocol/sdk/dist/esm";
  const { Client } = await load(`${base}/client/index.js`);
  const { StdioClientTransport } = await load(`${base}/client/stdio.js`);
  const { StreamableHTTPClientTransport } = await load(`${base}/client/streamableHttp.js`);
  const { ElicitRequestSchema } = await load(`${base}/types.js`);
  client = new Client(info, { capabilities: { elicitation: {} } });
  client.setRequestHandler(ElicitRequestSchema, accept);
  transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });
} else {
  const base = "client-v2/node_modules/@modelcontextprotocol/client/dist";
  const { Client, StreamableHTTPClientTransport } = await load(`${base}/index.mjs`);
  const { StdioClientTransport } = await load(`${base}/stdio.mjs`);
  const modern = sdk === "v2-modern";
  client = new Client(info, {
    capabilities: { elicitation: {} },
    versionNegotiation: { mode: modern ? "auto" : "legacy" },
    supportedProtocolVersions: modern ? ["2026-07-28", "2025-11-25"] : undefined,
  });
  client.setRequestHandler("elicitation/create", accept);
  transport = url
    ? new StreamableHTTPClientTransport(new URL(url))
    : new StdioClientTransport({ command: command[0], args: command.slice(1), stderr: "inherit" });
}

const seen = {};
const text = (r) => (r.content || []).filter((c) => c.type === "text").map((c) => c.text).join("");
try {
  await client.connect(transport);
  seen.serverInfo = client.getServerVersion();
  seen.capabilities = client.getServerCapabilities();
  if (client.getNegotiatedProtocolVersion) seen.protocolVersion = client.getNegotiatedProtocolVersion();
  const caps = seen.capabilities || {};
  if (caps.tools) {
    seen.tools = (await client.listTools()).tools.map((t) => t.name);
    if (seen.tools.includes(echoTool)) {
      seen.echo = text(await client.callTool({ name: echoTool, arguments: { message: "hi from ts" } }));
    }
    if (seen.tools.includes("confirm")) {
      seen.confirm = text(await client.callTool({ name: "confirm", arguments: {} }));
    }
  }
  if (caps.resources) {
    seen.resources = (await client.listResources()).resources.map((r) => r.uri);
    if (seen.resources.length > 0) {
      const read = await client.readResource({ uri: seen.resources[0] });
      seen.read = read.contents[0].text;
    }
  }
  if (caps.prompts) seen.prompts = (await client.listPrompts()).prompts.map((p) => p.name);
  try {
    await client.callTool({ name: "no-such-tool", arguments: {} });
    seen.unknownTool = "answered";
  } catch (e) {
    seen.unknownTool = { code: e.code, message: String(e.message) };
  }
} catch (e) {
  seen.error = { code: e.code, message: String(e.message || e) };
}
await client.close().catch(() => {});
process.stdout.write(JSON.stringify(seen) + "\n");
process.exit(0);
