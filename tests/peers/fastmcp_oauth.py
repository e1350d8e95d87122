"""An OAuth-protected FastMCP server (PyPI `fastmcp==4.2.3`, its own venv from
`.ci/install-peers`): FastMCP's built-in authorization server with its in-process
`InMemoryOAuthProvider` (dynamic registration, rotating refresh tokens, revocation),
guarding one tool, `echo`. Used by the OAuth interop tests.

    .peers/fastmcp/bin/python tests/peers/fastmcp_oauth.py PORT [TTL_SECONDS]

The issuer is http://127.0.0.1:PORT/ and the MCP server http://127.0.0.1:PORT/mcp.
Access tokens live TTL_SECONDS (default 3600: the provider's own lifetime, set here
through its module constant). Everything lives in memory: a restart forgets every
client and token.
"""

import sys

from fastmcp import FastMCP
from fastmcp.server.auth.providers import in_memory
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions

port = int(sys.argv[1])
if len(sys.argv) > 2:
    in_memory.DEFAULT_ACCESS_TOKEN_EXPIRY_SECONDS = int(sys.argv[2])

auth = in_memory.InMemoryOAuthProvider(
    base_url=f"http://127.0.0.1:{port}",
    client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["mcp:tools"]),
    revocation_options=RevocationOptions(enabled=True),
    required_scopes=["mcp:tools"],
)
mcp = FastMCP(name="capable-fastmcp-oauth-peer", auth=auth)


@mcp.tool()
def echo(message: str) -> str:
    """Echo a message."""
    return message


if __name__ == "__main__":
    mcp.run(transport="http", host="127.0.0.1", port=port, path="/mcp", show_banner=False)
