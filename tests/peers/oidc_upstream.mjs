// An upstream MCP server behind an authorization server of its own, for the tests of
// whose credentials a gateway sends upstream: oidc-provider (npm `oidc-provider`, from
// .peers/oidc) as the authorization server, and a TypeScript SDK MCP server (from
// .peers/npm) that accepts only the access tokens that server issued for it, with
// RFC 9728 protected resource metadata pointing there.
//
//   node tests/peers/oidc_upstream.mjs AS_PORT MCP_PORT SEEN_FILE [IDP_ISSUER] [REDIRECT_URI] [ACCESS_TTL]
//
// Its tool `whoami` answers whose token the request carried: `client:ID` for a client
// credentials token of the client ID, `user:SUB` for a token the JWT bearer grant
// (RFC 7523) issued on an identity assertion grant (ID-JAG) of the user SUB. Every
// `Authorization` header that reaches the MCP endpoint is appended to SEEN_FILE, one a
// line, so a test can prove what never arrived.
//
// Its one client is the gateway's, `gateway-upstream` (secret `upstream-secret`),
// allowed client credentials and the JWT bearer grant. An ID-JAG is taken when the
// identity provider IDP_ISSUER signed it (its keys from its `jwks_uri`), its `typ` is
// `oauth-id-jag+jwt`, its `aud` this issuer, its `client_id` the authenticated client
// and its `resource` this MCP server. Both bind 127.0.0.1.
//
// With REDIRECT_URI, the client may also use the authorization code grant (PKCE) with
// that redirect URI, and refresh tokens: a person logs in at `/interaction/UID`, a form
// whose one field `login` names the account (any name is taken: the test is the
// person); consent is given at once. Its access tokens live ACCESS_TTL seconds
// (default 3600).
import fs from "node:fs";
import http from "node:http";
import { guard, interactions, load, readBody, readText } from "./oidc_common.mjs";

const { default: Provider, errors } = await load("oidc", "oidc-provider/lib/index.js");
const { jwtVerify, createRemoteJWKSet } = await load("oidc", "jose/dist/webapi/index.js").catch(() => load("oidc", "jose/dist/node/esm/index.js"));
const { McpServer } = await load("npm", "@modelcontextprotocol/sdk/dist/esm/server/mcp.js");
const { StreamableHTTPServerTransport } = await load("npm", "@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js");

const [asPort, mcpPort] = process.argv.slice(2, 4).map(Number);
const seenFile = process.argv[4];
const idpIssuer = process.argv[5] || undefined;
const redirectUri = process.argv[6];
const accessTtl = Number(process.argv[7] || 3600);
const issuer = `http://127.0.0.1:${asPort}`;
const mcpUrl = `http://127.0.0.1:${mcpPort}/mcp`;
const prmUrl = `http://127.0.0.1:${mcpPort}/.well-known/oauth-protected-resource/mcp`;
const JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer";

const provider = new Provider(issuer, {
  clients: [{
    client_id: "gateway-upstream", client_secret: "upstream-secret",
    grant_types: ["client_credentials", JWT_BEARER, ...(redirectUri ? ["authorization_code", "refresh_token"] : [])],
    redirect_uris: redirectUri ? [redirectUri] : [], response_types: redirectUri ? ["code"] : [], scope: "mcp:tools",
  }],
  rotateRefreshToken: true,
  issueRefreshToken: async (ctx, client) => client.grantTypeAllowed("refresh_token"),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  cookies: { keys: ["capable-test-cookie-key"] },
  scopes: ["mcp:tools"],
  // What the JWT bearer grant learnt of the user, kept with the token it issues.
  extraTokenClaims: async (ctx) => (ctx.jagUser ? { user: ctx.jagUser, aud: mcpUrl } : undefined),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => mcpUrl,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== mcpUrl) throw new errors.InvalidTarget();
        return { scope: "mcp:tools", audience: mcpUrl, accessTokenTTL: accessTtl, accessTokenFormat: "opaque" };
      },
    },
  },
});
provider.proxy = false;

// The JWT bearer grant on an ID-JAG: an opaque token of the client, naming the user.
// The identity provider's keys, found at the first assertion (it may start later).
let idpKeys = null;
const keysOfIdp = async () => {
  if (!idpIssuer) throw new Error("no identity provider");
  if (!idpKeys) {
    const meta = await (await fetch(`${idpIssuer}/.well-known/openid-configuration`)).json();
    idpKeys = createRemoteJWKSet(new URL(meta.jwks_uri));
  }
  return idpKeys;
};
provider.registerGrantType(JWT_BEARER, async (ctx) => {
  const { client, params } = ctx.oidc;
  let claims;
  try {
    const verified = await jwtVerify(params.assertion, await keysOfIdp(), {
      issuer: idpIssuer, audience: [issuer, `${issuer}/`], typ: "oauth-id-jag+jwt",
    });
    claims = verified.payload;
  } catch (e) {
    throw new errors.InvalidGrant(`the assertion is not an ID-JAG for this server: ${e.message}`);
  }
  if (claims.client_id !== client.clientId) throw new errors.InvalidGrant("the ID-JAG is for another client");
  if (claims.resource !== mcpUrl) throw new errors.InvalidGrant("the ID-JAG is for another resource");
  ctx.jagUser = claims.sub;
  const token = new provider.ClientCredentials({ client, scope: "mcp:tools" });
  const value = await token.save();
  ctx.body = { access_token: value, token_type: "Bearer", expires_in: token.expiration, scope: "mcp:tools" };
}, ["assertion", "scope", "resource"]);

// A person's login: a form naming the account, then consent to every scope asked for.
const callback = provider.callback();
const logIn = interactions(provider, async (details, req, res) => {
  if (req.method !== "POST") {
    res.writeHead(200, { "content-type": "text/html" }).end(
      `<form method="post" action="/interaction/${details.uid}"><input name="login"><button>Log in</button></form>`);
    return undefined;
  }
  const login = new URLSearchParams(await readText(req)).get("login");
  if (!login) {
    res.writeHead(400).end("no login");
    return undefined;
  }
  return { login: { accountId: login } };
});
http
  .createServer((req, res) => (req.url.startsWith("/interaction/") ? logIn(req, res) : callback(req, res)))
  .listen(asPort, "127.0.0.1");

function mcpServer(subject) {
  const server = new McpServer({ name: "oidc-upstream", version: "1.0.0" });
  // A call that asks for progress is told of one step first.
  server.registerTool("whoami", { description: "Whose token the request carried" },
    async (extra) => {
      const progressToken = extra?._meta?.progressToken;
      if (progressToken !== undefined) {
        await extra.sendNotification({ method: "notifications/progress",
          params: { progressToken, progress: 1, total: 1 } });
      }
      return { content: [{ type: "text", text: subject }] };
    });
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
    if (auth) fs.appendFileSync(seenFile, `${auth}\n`);
    if (!auth.startsWith("Bearer ")) return challenge(res);
    const value = auth.slice("Bearer ".length);
    const token = (await provider.AccessToken.find(value)) || (await provider.ClientCredentials.find(value));
    const aud = token && (token.extra?.aud ?? token.aud);
    if (!token || token.isExpired || aud !== mcpUrl || !String(token.scope).split(" ").includes("mcp:tools")) {
      return challenge(res, "invalid_token");
    }
    if (req.method !== "POST") return res.writeHead(405).end();
    const subject = token.accountId
      ? `user:${token.accountId}`
      : token.extra?.user ? `user:${token.extra.user}` : `client:${token.clientId}`;
    const body = await readBody(req);
    const server = mcpServer(subject);
    // JSON answers, but a stream for a call that asks for progress (its notification rides it).
    const streamed = body?.params?._meta?.progressToken !== undefined;
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !streamed });
    res.on("close", () => { transport.close(); server.close(); });
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  })
  .listen(mcpPort, "127.0.0.1");
