// The TypeScript SDK's client (npm @modelcontextprotocol/sdk, .peers/npm) logging in to an
// OAuth-guarded MCP server as a confidential client (the client credentials grant, its
// ClientCredentialsProvider): the 401's protected resource metadata, the issuer's
// metadata, the token for the server's `resource`, then the MCP calls with it.
//
//   node tests/peers/ts_gateway_client.mjs URL CLIENT_ID CLIENT_SECRET SCOPE ISSUER
//
// Prints one JSON object: the resources it listed. PEERS_DIR overrides the .peers folder.
import path from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const peers = process.env.PEERS_DIR || path.join(here, "..", "..", ".peers");
const base = path.join(peers, "npm/node_modules/@modelcontextprotocol/sdk/dist/esm");
const load = (rel) => import(pathToFileURL(path.join(base, rel)).href);

const { Client } = await load("client/index.js");
const { StreamableHTTPClientTransport } = await load("client/streamableHttp.js");
const { ClientCredentialsProvider } = await load("client/auth-extensions.js");

const [url, clientId, clientSecret, scope, expectedIssuer] = process.argv.slice(2);
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, scope, expectedIssuer });
const client = new Client({ name: "ts-gateway-client", version: "1.0.0" });
const transport = new StreamableHTTPClientTransport(new URL(url), { authProvider });
await client.connect(transport);
const { resources } = await client.listResources();
console.log(JSON.stringify({ resources: resources.map((r) => r.uri) }));
await client.close();
