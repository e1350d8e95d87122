"""An OAuth-protected MCP server on the Python SDK (PyPI `mcp==2.3.0`): the SDK's own
authorization server (`mcp.server.auth`: metadata, dynamic registration, /authorize,
/token, /revoke, its client authentication) with a small in-memory provider, guarding
a streamable HTTP MCP server with one tool, `echo`. Used by the OAuth interop tests.

    .peers/venv/bin/python tests/peers/python_oauth.py PORT [options]

    --ttl SECONDS          access tokens live this long (default 3600)
    --login-form           /authorize shows a login form (user `mcp-user`, password
                           `secret`) instead of approving at once
    --client ID SECRET METHOD REDIRECT
                           a pre-registered client (METHOD: client_secret_basic,
                           client_secret_post or none; REDIRECT its one redirect URI)
    --reject-resource      refuse an authorization request that carries `resource`
                           (an authorization server that rejects RFC 8707)
    --no-resource-metadata a 2025-03-26-style server: no protected resource metadata
                           (its 401 and 403 name none; the authorization server is the
                           MCP server's origin), tokens not bound to a resource; a
                           token without `mcp:tools` meets the SDK's 403
                           `insufficient_scope`, which names no scope

The issuer is http://127.0.0.1:PORT and the MCP server http://127.0.0.1:PORT/mcp; tokens
are bound to it (RFC 8707) unless `--reject-resource`. Refresh tokens rotate: a spent
one is refused with `invalid_grant`. Everything lives in memory: a restart forgets
every client and token, as such servers do.
"""

import argparse
import html
import secrets
import time
from urllib.parse import urlencode

from mcp.server import MCPServer
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizeError,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

SCOPE = "mcp:tools"
USER, PASSWORD = "mcp-user", "secret"


class Provider:
    def __init__(self, ttl: int, login_form: bool, reject_resource: bool):
        self.ttl = ttl
        self.login_form = login_form
        self.reject_resource = reject_resource
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        # Login-form transactions: id -> (client, params).
        self.pending: dict[str, tuple] = {}

    async def get_client(self, client_id: str):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    def issue_code(self, client, params) -> str:
        code = secrets.token_urlsafe(24)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=USER,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def authorize(self, client, params) -> str:
        if self.reject_resource and params.resource:
            raise AuthorizeError(error="invalid_request", error_description="the resource parameter is not supported")
        if not self.login_form:
            return self.issue_code(client, params)
        txn = secrets.token_urlsafe(16)
        self.pending[txn] = (client, params)
        return "/login?" + urlencode({"txn": txn})

    async def load_authorization_code(self, client, authorization_code: str):
        code = self.codes.get(authorization_code)
        return code if code and code.client_id == client.client_id else None

    def tokens(self, client_id: str, scopes: list[str], resource: str | None) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        expires = int(time.time()) + self.ttl
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource, subject=USER
        )
        self.refresh[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=USER
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.ttl,
            refresh_token=refresh,
            scope=" ".join(scopes),
        )

    async def exchange_authorization_code(self, client, authorization_code: AuthorizationCode) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "the authorization code was used already")
        return self.tokens(client.client_id, authorization_code.scopes, authorization_code.resource)

    async def load_refresh_token(self, client, refresh_token: str):
        token = self.refresh.get(refresh_token)
        return token if token and token.client_id == client.client_id else None

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes: list[str]) -> OAuthToken:
        # Rotation: the refresh token is spent, and so is the access token it came with.
        self.refresh.pop(refresh_token.token, None)
        return self.tokens(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token: str):
        found = self.access.get(token)
        if found and found.expires_at and found.expires_at < time.time():
            return None
        return found

    async def revoke_token(self, token) -> None:
        self.access.pop(token.token, None)
        self.refresh.pop(token.token, None)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--ttl", type=int, default=3600)
    parser.add_argument("--login-form", action="store_true")
    parser.add_argument("--reject-resource", action="store_true")
    parser.add_argument("--no-resource-metadata", action="store_true")
    parser.add_argument("--client", nargs=4, metavar=("ID", "SECRET", "METHOD", "REDIRECT"))
    args = parser.parse_args()

    issuer = f"http://127.0.0.1:{args.port}"
    provider = Provider(args.ttl, args.login_form, args.reject_resource)
    if args.client:
        client_id, secret, method, redirect = args.client
        provider.clients[client_id] = OAuthClientInformationFull(
            client_id=client_id,
            client_secret=None if method == "none" else secret,
            token_endpoint_auth_method=method,
            redirect_uris=[redirect],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            scope=SCOPE,
        )
    server = MCPServer(
        name="capable-python-oauth-peer",
        auth_server_provider=provider,
        auth=AuthSettings(
            issuer_url=issuer,
            resource_server_url=None if args.no_resource_metadata else f"{issuer}/mcp",
            client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=[SCOPE]),
            revocation_options=RevocationOptions(enabled=True),
            required_scopes=[SCOPE],
            validate_token_resource=not (args.reject_resource or args.no_resource_metadata),
        ),
    )

    @server.tool()
    def echo(message: str) -> str:
        """Return the message unchanged."""
        return message

    @server.custom_route("/login", methods=["GET", "POST"])
    async def login(request: Request) -> Response:
        form = await request.form() if request.method == "POST" else request.query_params
        txn = str(form.get("txn", ""))
        if txn not in provider.pending:
            return HTMLResponse("<p>No such login.</p>", status_code=400)
        if request.method == "POST" and form.get("username") == USER and form.get("password") == PASSWORD:
            client, params = provider.pending.pop(txn)
            return RedirectResponse(provider.issue_code(client, params), status_code=302)
        wrong = "<p>Wrong user or password.</p>" if request.method == "POST" else ""
        return HTMLResponse(
            f"<!doctype html><title>Sign in</title>{wrong}"
            f'<form method="post" action="/login"><input type="hidden" name="txn" value="{html.escape(txn)}">'
            '<input name="username" value=""><input type="password" name="password" value="">'
            "<button>Sign in</button></form>"
        )

    server.run(transport="streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
