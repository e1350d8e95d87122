// Tiny MCP server on the TypeScript SDK 1.32.2 (npm @modelcontextprotocol/sdk), stdio only.
// Its packages come from .peers/npm (see .ci/install-peers); PEERS_DIR overrides the .peers folder.
//   node tests/peers/ts_server.mjs
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(process.env.PEERS_DIR || path.join(here, "..", "..", ".peers"), "npm", "node_modules");
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);

const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StdioServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/stdio.js");
const { z } = await load("zod/index.js");

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

await server.connect(new StdioServerTransport());
