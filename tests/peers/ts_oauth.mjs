// An OAuth-protected MCP server on the TypeScript SDK 1.32.2 (npm @modelcontextprotocol/sdk):
// the SDK's authorization server (`mcpAuthRouter`: metadata, dynamic registration,
// /authorize, /token, /revoke) with a small in-memory provider that approves at once,
// rotates refresh tokens and gives access tokens a short life, guarding a stateless
// Streamable HTTP MCP server (`requireBearerAuth`) with one tool, `echo`.
//
//   node tests/peers/ts_oauth.mjs PORT [TTL_SECONDS] [NAME=VALUE]
//
// With NAME=VALUE, /authorize refuses a request without that parameter (as Auth0 wants
// `audience`), with the OAuth error a provider gives. The issuer is
// http://127.0.0.1:PORT/ (the SDK writes it with its root slash) and the MCP server
// http://127.0.0.1:PORT/mcp. Everything lives in memory: a restart forgets every client
// and token. Rate limits are off (the tests start many processes at once).
import crypto from "node:crypto";
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const modules = path.join(process.env.PEERS_DIR || path.join(here, "..", "..", ".peers"), "npm", "node_modules");
const load = (rel) => import(pathToFileURL(path.join(modules, rel)).href);

const { default: express } = await load("express/index.js");
const { McpServer } = await load("@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");
const { mcpAuthRouter, getOAuthProtectedResourceMetadataUrl } = await load("@modelcontextprotocol/sdk/dist/esm/server/auth/router.js");
const { requireBearerAuth } = await load("@modelcontextprotocol/sdk/dist/esm/server/auth/middleware/bearerAuth.js");
const { InvalidGrantError, InvalidTokenError } = await load("@modelcontextprotocol/sdk/dist/esm/server/auth/errors.js");
const { z } = await load("zod/index.js");

const port = Number(process.argv[2]);
const ttl = Number(process.argv[3] || 3600);
const [required, requiredValue] = (process.argv[4] || "").split("=");
const issuer = new URL(`http://127.0.0.1:${port}`);
const mcpUrl = new URL(`http://127.0.0.1:${port}/mcp`);
const SCOPE = "mcp:tools";

const clients = new Map();
const codes = new Map();
const access = new Map();
const refresh = new Map();
const id = () => crypto.randomBytes(24).toString("base64url");

function tokens(clientId, scopes, resource) {
  const accessToken = id();
  const refreshToken = id();
  access.set(accessToken, { token: accessToken, clientId, scopes, resource, expiresAt: Math.floor(Date.now() / 1000) + ttl });
  refresh.set(refreshToken, { clientId, scopes, resource, accessToken });
  return { access_token: accessToken, token_type: "Bearer", expires_in: ttl, refresh_token: refreshToken, scope: scopes.join(" ") };
}

const provider = {
  clientsStore: {
    getClient: async (clientId) => clients.get(clientId),
    registerClient: async (client) => {
      clients.set(client.client_id, client);
      return client;
    },
  },
  async authorize(client, params, res) {
    const code = id();
    codes.set(code, { client: client.client_id, params });
    const target = new URL(params.redirectUri);
    target.searchParams.set("code", code);
    if (params.state !== undefined) target.searchParams.set("state", params.state);
    res.redirect(target.href);
  },
  async challengeForAuthorizationCode(client, code) {
    const found = codes.get(code);
    if (!found || found.client !== client.client_id) throw new InvalidGrantError("unknown authorization code");
    return found.params.codeChallenge;
  },
  async exchangeAuthorizationCode(client, code, _verifier, redirectUri) {
    const found = codes.get(code);
    codes.delete(code);
    if (!found || found.client !== client.client_id) throw new InvalidGrantError("unknown authorization code");
    if (redirectUri !== found.params.redirectUri) throw new InvalidGrantError("redirect_uri differs from the authorization's");
    return tokens(client.client_id, found.params.scopes || [], found.params.resource?.href);
  },
  async exchangeRefreshToken(client, refreshToken, scopes) {
    const found = refresh.get(refreshToken);
    // Rotation: a refresh token is good once.
    refresh.delete(refreshToken);
    if (!found || found.clientId !== client.client_id) throw new InvalidGrantError("refresh token is spent or unknown");
    return tokens(client.client_id, scopes?.length ? scopes : found.scopes, found.resource);
  },
  async verifyAccessToken(token) {
    const found = access.get(token);
    if (!found) throw new InvalidTokenError("unknown token");
    return { ...found, resource: found.resource ? new URL(found.resource) : undefined };
  },
  async revokeToken(client, { token }) {
    const grant = refresh.get(token);
    if (grant) access.delete(grant.accessToken);
    refresh.delete(token);
    access.delete(token);
  },
};

const app = express();
if (required) {
  app.get("/authorize", (req, res, next) => {
    if (req.query[required] === requiredValue) return next();
    res.status(400).json({ error: "invalid_request", error_description: `${required} must be ${requiredValue}` });
  });
}
app.use(mcpAuthRouter({
  provider,
  issuerUrl: issuer,
  resourceServerUrl: mcpUrl,
  scopesSupported: [SCOPE],
  authorizationOptions: { rateLimit: false },
  tokenOptions: { rateLimit: false },
  clientRegistrationOptions: { rateLimit: false },
  revocationOptions: { rateLimit: false },
}));
const bearer = requireBearerAuth({
  verifier: provider,
  requiredScopes: [SCOPE],
  resourceMetadataUrl: getOAuthProtectedResourceMetadataUrl(mcpUrl),
  expectedResource: mcpUrl,
});
app.post("/mcp", express.json(), bearer, async (req, res) => {
  const server = new McpServer({ name: "capable-ts-oauth-peer", version: "0.1.0" });
  server.registerTool("echo", { description: "Return the message", inputSchema: { message: z.string() } },
    async ({ message }) => ({ content: [{ type: "text", text: message }] }));
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => { transport.close(); server.close(); });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
app.all("/mcp", bearer, (req, res) => res.status(405).end());
app.listen(port, "127.0.0.1");
