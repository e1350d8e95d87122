"""An OAuth-protected FastMCP server (PyPI `fastmcp==4.2.3`, its own venv from
`.ci/install-peers`): FastMCP's built-in authorization server with its in-process
`InMemoryOAuthProvider` (dynamic registration, rotating refresh tokens, revocation),
guarding one tool, `echo`. Used by the OAuth interop tests.

    .peers/fastmcp/bin/python tests/peers/fastmcp_oauth.py PORT [TTL_SECONDS] [--client ID SECRET REDIRECT]

The issuer is http://127.0.0.1:PORT/ and the MCP server http://127.0.0.1:PORT/mcp.
Access tokens live TTL_SECONDS (default 3600: the provider's own lifetime, set here
through its module constant). `--client` pre-registers a confidential client as
FastMCP's users do, with the SDK's default method `client_secret_post` (the metadata
lists both secret methods; the token endpoint holds each client to its own) and its
one redirect URI. Everything lives in memory: a restart forgets every client and
token.
"""

import argparse

from fastmcp import FastMCP
from fastmcp.server.auth.providers import in_memory
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull

parser = argparse.ArgumentParser()
parser.add_argument("port", type=int)
parser.add_argument("ttl", type=int, nargs="?")
parser.add_argument("--client", nargs=3, metavar=("ID", "SECRET", "REDIRECT"))
args = parser.parse_args()
port = args.port
if args.ttl is not None:
    in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = args.ttl

auth = in_memory.InMemoryOAuthProvider(
    base_url=f"http://127.0.0.1:{port}",
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp:tools"]),
    revocation_options=RevocationOptions(enabled=True),
    required_scopes=["mcp:tools"],
)
if args.client:
    client_id, secret, redirect = args.client
    auth.clients[client_id] = OAuthClientInformationFull(
        client_id=client_id,
        client_secret=secret,
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=[redirect],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope="mcp:tools",
    )
mcp = FastMCP(name="capable-fastmcp-oauth-peer", auth=auth)


@mcp.tool()
def echo(message: str) -> str:
    """Echo a message."""
    return message


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False)
