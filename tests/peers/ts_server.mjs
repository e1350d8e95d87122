// Tiny MCP server on the TypeScript SDK 1.32.2 (npm @modelcontextprotocol/sdk).
// Its packages come from .peers/npm (see .ci/install-peers); PEERS_DIR overrides the .peers folder.
//   node tests/peers/ts_server.mjs              stdio
//   node tests/peers/ts_server.mjs --http PORT  Streamable HTTP with sessions at http://127.0.0.1:PORT/mcp
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(process.env.PEERS_DIR || path.join(here, "..", "..", ".peers"), "npm", "node_modules");
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);

const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
const { z } = await load("zod/index.js");

function makeServer() {
const server = new McpServer({ name: "capable-ts-peer", version: "0.1.0" });

server.registerResource(
  "manual",
  "docs://manual/current",
  { title: "Current manual", description: "Acceptance instructions", mimeType: "text/plain" },
  async (uri) => ({
    contents: [{ uri: uri.href, mimeType: "text/plain", text: "Acceptance instructions: read this, then call echo." }],
  }),
);

server.registerTool(
  "echo",
  { description: "Return the message unchanged", inputSchema: { message: z.string() } },
  async ({ message }) => ({ content: [{ type: "text", text: message }] }),
);

return server;
}

const httpAt = process.argv.indexOf("--http");
if (httpAt === -1) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[httpAt + 1]);
  const http = await import("node:http");
  const { randomUUID } = await import("node:crypto");
  const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");
  const sessions = new Map();
  const readBody = (req) =>
    new Promise((resolve) => {
      let data = "";
      req.on("data", (c) => (data += c));
      req.on("end", () => resolve(data ? JSON.parse(data) : undefined));
    });
  http
    .createServer(async (req, res) => {
      if (!req.url.startsWith("/mcp")) {
        res.writeHead(404).end();
        return;
      }
      const body = req.method === "POST" ? await readBody(req) : undefined;
      const id = req.headers["mcp-session-id"];
      let transport = id && sessions.get(id);
      if (!transport) {
        if (req.method !== "POST" || body?.method !== "initialize") {
          res.writeHead(id ? 404 : 400, { "content-type": "application/json" });
          res.end(JSON.stringify({ jsonrpc: "2.0", error: { code: -32000, message: "No valid session" }, id: null }));
          return;
        }
        transport = new StreamableHTTPServerTransport({
          sessionIdGenerator: () => randomUUID(),
          onsessioninitialized: (sid) => sessions.set(sid, transport),
        });
        transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
        await makeServer().connect(transport);
      }
      await transport.handleRequest(req, res, body);
    })
    .listen(port, "127.0.0.1");
}
