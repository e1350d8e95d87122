// A real authorization server guarding a real MCP server, for the OAuth login tests:
// oidc-provider (OpenID Certified; npm `oidc-provider`, from .peers/oidc) as the
// authorization server, and a TypeScript SDK MCP server (from .peers/npm) that accepts
// only the access tokens oidc-provider issued for it (RFC 8707 audience, scope
// `mcp:tools`) and points at it with RFC 9728 protected resource metadata.
//
//   node tests/peers/oidc_guarded.mjs AS_PORT MCP_PORT [ACCESS_TOKEN_TTL_SECONDS]
//
// Both bind 127.0.0.1. The login needs no person: the interaction pages approve at once
// (account `mcp-user`, every scope asked for), so a client — or a scripted browser —
// that follows the redirects with their cookies reaches the redirect URI. The device
// authorization grant (RFC 8628) is on, its polling interval one second; its code is
// confirmed on the provider's own page (a form a scripted browser submits).
import http from "node:http";
import { guard, interactions, load, loginAs, readBody } from "./oidc_common.mjs";

const { default: Provider, errors } = await load("oidc", "oidc-provider/lib/index.js");
const { McpServer } = await load("npm", "@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("npm", "@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");
const { z } = await load("npm", "zod/index.js");

const [asPort, mcpPort] = process.argv.slice(2, 4).map(Number);
const ttl = Number(process.argv[4] || 3600);
const issuer = `http://127.0.0.1:${asPort}`;
const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
const prmUrl = `http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`;

const provider = new Provider(issuer, {
  clients: [],
  cookies: { keys: ["capable-test-cookie-key"] },
  scopes: ["openid", "offline_access", "mcp:tools"],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    revocation: { enabled: true },
    deviceFlow: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => mcpUrl,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== mcpUrl) throw new errors.InvalidTarget();
        return { scope: "mcp:tools", audience: mcpUrl, accessTokenTTL: ttl, accessTokenFormat: "opaque" };
      },
    },
  },
  ttl: { AccessToken: ttl },
  rotateRefreshToken: true,
  // Refresh tokens for every client registered for them (the default wants the OpenID
  // `offline_access` scope, which plain OAuth requests without `openid` do not keep).
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
});
provider.proxy = false;
// A one-second polling interval keeps the device login quick (the default is five).
provider.on("device_authorization.success", (ctx, body) => { body.interval = 1; });

const callback = provider.callback();
const approve = interactions(provider, loginAs("mcp-user"));
http
  .createServer((req, res) => (req.url.startsWith("/interaction/") ? approve(req, res) : callback(req, res)))
  .listen(asPort, "127.0.0.1");

function mcpServer() {
  const server = new McpServer({ name: "oidc-guarded", version: "1.0.0" });
  server.registerTool("echo", { description: "Return the message", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }));
  return server;
}

const { metadata, challenge } = guard({ mcpUrl, prmUrl, issuer });

http
  .createServer(async (req, res) => {
    if (req.url === "/.well-known/oauth-protected-resource/mcp") {
      return metadata(res);
    }
    if (!req.url.startsWith("/mcp")) return res.writeHead(404).end();
    const auth = req.headers.authorization || "";
    if (!auth.startsWith("Bearer ")) return challenge(res);
    const token = await provider.AccessToken.find(auth.slice("Bearer ".length));
    if (!token || token.isExpired || token.aud !== mcpUrl || !String(token.scope).split(" ").includes("mcp:tools")) {
      return challenge(res, "invalid_token");
    }
    if (req.method !== "POST") return res.writeHead(405).end();
    const body = await readBody(req);
    const server = mcpServer();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })
  .listen(mcpPort, "127.0.0.1");
