"""The Python SDK's client (PyPI `mcp==2.3.0`) logging in to an OAuth-guarded MCP server
as a person's host would, with the SDK's own `OAuthClientProvider`: the 401's protected
resource metadata (RFC 9728), the authorization server's metadata, dynamic client
registration, the authorization code flow with PKCE and `resource`, the token, then
the MCP calls with it — no step of the server's own.

    .peers/venv/bin/python tests/peers/py_gateway_client.py URL SCOPE

The person is this script: its redirect handler opens the authorization URL and
follows the authorization server's redirects (its interaction pages approve at once)
up to the redirect URI, whose `code` and `state` the callback handler hands back; no
listener is needed. It prints one JSON object: the issuer it logged in at, the scope it
was granted, the resources it listed (or the error).
"""

import json
import sys
from urllib.parse import parse_qs, urljoin, urlparse

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

REDIRECT = "http://127.0.0.1:9/callback"


class Memory:
    """Tokens and the client registration, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class Person:
    """Opens the authorization URL and follows it to the redirect URI."""

    def __init__(self) -> None:
        self.result: AuthorizationCodeResult | None = None
        self.issuer: str | None = None

    async def open(self, url: str) -> None:
        self.issuer = f"{urlparse(url).scheme}://{urlparse(url).netloc}"
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
            for _ in range(20):
                if url.startswith(REDIRECT):
                    query = parse_qs(urlparse(url).query)
                    self.result = AuthorizationCodeResult(
                        code=query["code"][0],
                        state=query.get("state", [None])[0],
                        iss=query.get("iss", [None])[0],
                    )
                    return
                answer = await browser.get(url)
                location = answer.headers.get("location")
                if location is None:
                    raise RuntimeError(f"the authorization server stopped at {answer.status_code}")
                url = urljoin(url, location)
        raise RuntimeError("too many redirects")

    async def callback(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise RuntimeError("never redirected back")
        return self.result


async def main(url: str, scope: str) -> None:
    person, storage = Person(), Memory()
    metadata = OAuthClientMetadata(
        client_name="python-sdk-gateway-client",
        redirect_uris=[REDIRECT],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        token_endpoint_auth_method="none",
        scope=scope,
    )
    auth = OAuthClientProvider(url, metadata, storage, person.open, person.callback)
    seen: dict = {}
    try:
        async with httpx2.AsyncClient(auth=auth, timeout=30) as http:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                seen["resources"] = [str(r.uri) for r in (await client.list_resources()).resources]
    except Exception as e:  # noqa: BLE001 - the test reads what went wrong
        seen["error"] = repr(e)
    seen["issuer"] = person.issuer
    seen["scope"] = storage.tokens.scope if storage.tokens else None
    seen["registered"] = storage.client is not None
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2])
