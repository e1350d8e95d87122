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
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.PEERS_DIR || path.join(here, "..", "..", ".peers");
const load = (prefix, rel) => import(pathToFileURL(path.join(peers, prefix, "node_modules", rel)).href);

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
http
  .createServer(async (req, res) => {
    if (!req.url.startsWith("/interaction/")) return callback(req, res);
    try {
      // Approve at once: log in as mcp-user, then grant every scope asked for.
      const details = await provider.interactionDetails(req, res);
      let result;
      if (details.prompt.name === "login") {
        result = { login: { accountId: "mcp-user" } };
      } else {
        const grant = details.grantId
          ? await provider.Grant.find(details.grantId)
          : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
        const missing = details.prompt.details;
        if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
        for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
          grant.addResourceScope(indicator, scopes.join(" "));
        }
        result = { consent: { grantId: await grant.save() } };
      }
      await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  })
  .listen(asPort, "127.0.0.1");

function mcpServer() {
  const server = new McpServer({ name: "oidc-guarded", version: "1.0.0" });
  server.registerTool("echo", { description: "Return the message", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }));
  return server;
}

const readBody = (req) => new Promise((resolve) => {
  let data = "";
  req.on("data", (c) => (data += c));
  req.on("end", () => resolve(data ? JSON.parse(data) : undefined));
});

const challenge = (res, error) => {
  res.writeHead(401, {
    "content-type": "application/json",
    "www-authenticate": `Bearer resource_metadata="${prmUrl}", scope="mcp:tools"${error ? `, error="${error}"` : ""}`,
  }).end(JSON.stringify({ error: error || "unauthorized" }));
};

http
  .createServer(async (req, res) => {
    if (req.url === "/.well-known/oauth-protected-resource/mcp") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
        resource: mcpUrl, authorization_servers: [issuer], scopes_supported: ["mcp:tools"], bearer_methods_supported: ["header"],
      }));
      return;
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
