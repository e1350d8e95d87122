// What the oidc-provider peers share (oidc_guarded.mjs, oidc_issuer.mjs,
// oidc_upstream.mjs): loading the installed packages, reading a JSON body, the
// interaction pages that log a person in and give consent to every scope asked for,
// and an MCP endpoint's RFC 9728 metadata and 401 challenge.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.PEERS_DIR || path.join(here, "..", "..", ".peers");

/** A module of a package installed under `.peers/PREFIX/node_modules`. */
export const load = (prefix, rel) => import(pathToFileURL(path.join(peers, prefix, "node_modules", rel)).href);

/** The request's body as text. */
export const readText = (req) => new Promise((resolve) => {
  let data = "";
  req.on("data", (c) => (data += c));
  req.on("end", () => resolve(data));
});

/** The request's body as JSON (`empty` when there is none). */
export const readBody = async (req, empty = undefined) => {
  const data = await readText(req);
  return data ? JSON.parse(data) : empty;
};

/** Consent to every scope and resource the interaction asks for. */
async function grantEverything(provider, details) {
  const grant = details.grantId
    ? await provider.Grant.find(details.grantId)
    : new provider.Grant({ accountId: details.session.accountId, clientId: details.params.client_id });
  const missing = details.prompt.details;
  if (missing.missingOIDCScope) grant.addOIDCScope(missing.missingOIDCScope.join(" "));
  for (const [indicator, scopes] of Object.entries(missing.missingResourceScopes || {})) {
    grant.addResourceScope(indicator, scopes.join(" "));
  }
  return { consent: { grantId: await grant.save() } };
}

/**
 * A handler for `/interaction/UID`: `login(details, req, res)` gives the login prompt's
 * result (or `undefined` when it answered the request itself, a form say); consent is
 * given at once.
 */
export const interactions = (provider, login) => async (req, res) => {
  try {
    const details = await provider.interactionDetails(req, res);
    const result = details.prompt.name === "login"
      ? await login(details, req, res)
      : await grantEverything(provider, details);
    if (result === undefined) return;
    await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: true });
  } catch (e) {
    res.writeHead(500).end(String(e));
  }
};

/** A login that needs no person: always the account `accountId`. */
export const loginAs = (accountId) => async () => ({ login: { accountId } });

/** The MCP endpoint's protected resource metadata (RFC 9728), or a 401 pointing at it. */
export const guard = ({ mcpUrl, prmUrl, issuer }) => ({
  metadata: (res) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({
    resource: mcpUrl, authorization_servers: [issuer], scopes_supported: ["mcp:tools"], bearer_methods_supported: ["header"],
  })),
  challenge: (res, error) => res.writeHead(401, {
    "content-type": "application/json",
    "www-authenticate": `Bearer resource_metadata="${prmUrl}", scope="mcp:tools"${error ? `, error="${error}"` : ""}`,
  }).end(JSON.stringify({ error: error || "unauthorized" })),
});
