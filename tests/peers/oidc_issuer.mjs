// A real identity provider for the gateway identity tests: oidc-provider (OpenID
// Certified; npm `oidc-provider`, from .peers/oidc) issuing JWT access tokens
// (RFC 9068, ES256) for one resource, the gateway (`capable bridge --listen
// --auth-issuer`), with the scope `mcp:tools`.
//
//   node tests/peers/oidc_issuer.mjs AS_PORT GATEWAY_URL [opaque]
//
// With `opaque`, its access tokens for the gateway are opaque instead, and mean
// something only through its introspection endpoint (RFC 7662), where the gateway
// asks as the confidential client `gateway-app` (secret `gateway-secret`).
//
// It binds 127.0.0.1. Logins need no person: the interaction pages approve at once
// (account `mcp-user`, every scope asked for). Two confidential clients, `alice-app`
// and `bob-app` (secrets `alice-secret`, `bob-secret`), get tokens by the client
// credentials grant; a client credentials token's subject is its client, and its
// groups are in the nested claim `org.groups` (alice-app: eng and admins; bob-app:
// eng), for the gateway's per-identity rules. Dynamic registration is on, for clients
// that log in as a person would.
//
// RFC 8693 token exchange, for a gateway that sends each caller's own credentials
// upstream: the confidential client `exchange-app` (secret `exchange-secret`,
// `client_secret_post`) exchanges an access token this provider issued for the gateway
// (`subject_token_type` access_token) for an identity assertion grant (ID-JAG, `typ`
// `oauth-id-jag+jwt`) naming the same subject, for the authorization server named by
// `audience` and the `resource` asked for; its `client_id` is the gateway's client
// there, `gateway-upstream`. Each exchange is counted in GET /test/exchanges.
//
// For the bad-token tests, POST /test/mint {claims, header, key} signs claims with
// the provider's own key (`key: "issuer"`), another key under the same `kid`
// (`"other"`), or none (`alg: none`), with jose, the library oidc-provider signs with.
import http from "node:http";
import crypto from "node:crypto";
import { interactions, load as loadFrom, loginAs, readBody } from "./oidc_common.mjs";

const load = (rel) => loadFrom("oidc", rel);

const { default: Provider, errors } = await load("oidc-provider/lib/index.js");
const { SignJWT, jwtVerify } = await load("jose/dist/webapi/index.js").catch(() => load("jose/dist/node/esm/index.js"));

const asPort = Number(process.argv[2]);
const gateway = process.argv[3];
const format = process.argv[4] === "opaque" ? "opaque" : "jwt";
const issuer = `http://127.0.0.1:${asPort}`;

const signing = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const other = crypto.generateKeyPairSync("ec", { namedCurve: "P-256" });
const kid = "issuer-key-1";
const jwk = { ...signing.privateKey.export({ format: "jwk" }), kid, alg: "ES256", use: "sig" };

const TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token";
const ID_JAG_TYPE = "urn:ietf:params:oauth:token-type:id-jag";
let exchanges = 0;

const groups = { "alice-app": ["eng", "admins"], "bob-app": ["eng"] };

const client = (id, secret) => ({
  client_id: id, client_secret: secret, grant_types: ["client_credentials"],
  redirect_uris: [], response_types: [], scope: "mcp:tools openid",
});

const provider = new Provider(issuer, {
  clients: [
    client("alice-app", "alice-secret"), client("bob-app", "bob-secret"), client("gateway-app", "gateway-secret"),
    { ...client("exchange-app", "exchange-secret"), grant_types: [TOKEN_EXCHANGE], token_endpoint_auth_method: "client_secret_post" },
  ],
  jwks: { keys: [jwk] },
  clientDefaults: { id_token_signed_response_alg: "ES256", grant_types: ["authorization_code"], response_types: ["code"] },
  cookies: { keys: ["capable-test-cookie-key"] },
  scopes: ["openid", "offline_access", "mcp:tools"],
  features: {
    devInteractions: { enabled: false },
    registration: { enabled: true },
    clientCredentials: { enabled: true },
    introspection: { enabled: true },
    revocation: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: () => gateway,
      useGrantedResource: () => true,
      getResourceServerInfo: (ctx, indicator) => {
        if (indicator !== gateway) throw new errors.InvalidTarget();
        return { scope: "mcp:tools", audience: gateway, accessTokenTTL: 3600, accessTokenFormat: format, jwt: { sign: { alg: "ES256" } } };
      },
    },
  },
  extraTokenClaims: async (ctx, token) =>
    token.kind === "ClientCredentials" ? { org: { groups: groups[token.clientId] ?? [] } } : undefined,
  issueRefreshToken: async (ctx, c) => c.grantTypeAllowed("refresh_token"),
  interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
  findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
});
provider.proxy = false;

// Token exchange: the gateway's caller's access token for an ID-JAG.
provider.registerGrantType(TOKEN_EXCHANGE, async (ctx) => {
  const { params } = ctx.oidc;
  if (params.subject_token_type !== ACCESS_TOKEN_TYPE || params.requested_token_type !== ID_JAG_TYPE) {
    throw new errors.InvalidRequest("only an access token for an ID-JAG is exchanged here");
  }
  if (!params.audience || !params.resource) throw new errors.InvalidRequest("audience and resource are required");
  let sub;
  try {
    const { payload } = await jwtVerify(params.subject_token, signing.publicKey, { issuer, audience: gateway, typ: "at+jwt" });
    sub = payload.sub;
  } catch {
    const opaque = await provider.ClientCredentials.find(params.subject_token);
    if (!opaque || opaque.isExpired) throw new errors.InvalidGrant("the subject token is not a valid access token of this provider");
    sub = opaque.clientId;
  }
  exchanges += 1;
  const now = Math.floor(Date.now() / 1000);
  const jag = await new SignJWT({ client_id: "gateway-upstream", resource: params.resource, scope: params.scope, jti: crypto.randomUUID() })
    .setProtectedHeader({ alg: "ES256", typ: "oauth-id-jag+jwt", kid })
    .setIssuer(issuer).setSubject(sub).setAudience(params.audience).setIssuedAt(now).setExpirationTime(now + 300)
    .sign(signing.privateKey);
  ctx.body = { access_token: jag, issued_token_type: ID_JAG_TYPE, token_type: "N_A", expires_in: 300 };
}, ["subject_token", "subject_token_type", "requested_token_type", "audience", "resource", "scope"]);

const b64 = (v) => Buffer.from(JSON.stringify(v)).toString("base64url");

async function mint({ claims, header, key }) {
  const protectedHeader = { alg: "ES256", typ: "at+jwt", kid, ...header };
  if (key === "none") return `${b64({ ...protectedHeader, alg: "none" })}.${b64(claims)}.`;
  const secret = key === "other" ? other.privateKey : signing.privateKey;
  return new SignJWT(claims).setProtectedHeader(protectedHeader).sign(secret);
}

const callback = provider.callback();
const approve = interactions(provider, loginAs("mcp-user"));
http
  .createServer(async (req, res) => {
    try {
      if (req.url === "/test/mint" && req.method === "POST") {
        const token = await mint(await readBody(req, {}));
        return res.writeHead(200, { "content-type": "text/plain", "content-length": Buffer.byteLength(token) }).end(token);
      }
      if (req.url === "/test/exchanges") {
        return res.writeHead(200, { "content-type": "text/plain" }).end(String(exchanges));
      }
      if (req.url.startsWith("/interaction/")) return approve(req, res);
      return callback(req, res);
    } catch (e) {
      res.writeHead(500).end(String(e));
    }
  })
  .listen(asPort, "127.0.0.1");
