"""A FastMCP server (PyPI `fastmcp==4.2.3`, its own venv from `.ci/install-peers`), used
as a real interop peer in both eras:

    .peers/fastmcp/bin/python tests/peers/fastmcp_server.py             # stdio
    .peers/fastmcp/bin/python tests/peers/fastmcp_server.py --http PORT # streamable HTTP on 127.0.0.1:PORT/mcp

Tools: `echo` (text), `forecast` (structured output: an `outputSchema` from its return
type), `shout` (an MCP Apps tool: `_meta.ui.resourceUri`), and a `ui://` resource.

With `PEER_ECHO_DESCRIPTION_FILE` set, `echo` describes itself with that file's text, read
as the server starts: a server whose tool definition changes between two starts, as a
server that changes a reviewed tool under its users would.

With `PEER_TRACE_HEADERS` set, a `trace_headers` tool answers with the W3C trace context
headers (`traceparent`, `tracestate`) its HTTP request came with: what a client passed on
to a server's own tracing.
"""

import argparse
import os
from typing_extensions import TypedDict

from fastmcp import FastMCP

mcp = FastMCP(name="capable-fastmcp-peer", instructions="FastMCP peer for capable.")


_described = os.environ.get("PEER_ECHO_DESCRIPTION_FILE")


@mcp.tool(description=open(_described).read() if _described else None)
def echo(message: str) -> str:
    """Echo a message."""
    return message


class Forecast(TypedDict):
    city: str
    celsius: float


@mcp.tool()
def forecast(city: str) -> Forecast:
    """A forecast, as structured output."""
    return {"city": city, "celsius": 21.5}


@mcp.tool(meta={"ui": {"resourceUri": "ui://shout/view"}})
def shout(message: str) -> str:
    """Shout, with a view."""
    return message.upper()


@mcp.resource("ui://shout/view", mime_type="text/html;profile=mcp-app")
def shout_view() -> str:
    return "<!DOCTYPE html><html><body>shout</body></html>"


@mcp.resource("docs://manual", mime_type="text/plain")
def manual() -> str:
    return "The FastMCP manual."


if os.environ.get("PEER_TRACE_HEADERS"):
    from fastmcp.server.dependencies import get_http_headers

    @mcp.tool()
    def trace_headers() -> dict:
        """The W3C trace context headers this call's HTTP request came with."""
        headers = get_http_headers(include_all=True)
        return {k: headers[k] for k in ("traceparent", "tracestate") if k in headers}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int)
    args = parser.parse_args()
    if args.http:
        mcp.run(transport="http", host="127.0.0.1", port=args.http, path="/mcp", show_banner=False)
    else:
        mcp.run(show_banner=False)
