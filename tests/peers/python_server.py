"""Small MCP server on the Python SDK 2.3 (PyPI `mcp==2.3.0`), used as a real interop peer.

Run with the venv from `.ci/install-peers`:
    .peers/venv/bin/python tests/peers/python_server.py            # stdio
    .peers/venv/bin/python tests/peers/python_server.py --http PORT # streamable HTTP on 127.0.0.1:PORT/mcp
"""

import argparse
import json
from datetime import date, datetime
from typing import Annotated, Literal

from pydantic import AnyUrl, BaseModel, WithJsonSchema

from mcp.server import MCPServer
from mcp.server.mcpserver import Context

server = MCPServer(name="capable-python-peer", version="0.1.0", instructions="Test peer for capable.")

_manual_revision = 0


@server.resource(
    "docs://manual/current",
    name="manual",
    title="Current manual",
    description="Acceptance instructions; its revision counter changes on touch().",
    mime_type="text/plain",
)
def manual() -> str:
    return f"Acceptance instructions (revision {_manual_revision}): read every resource, call echo, call add."


@server.resource("docs://manual/changelog", name="changelog", mime_type="text/markdown")
def changelog() -> str:
    return "# Changelog\n\n- 0.1.0: first revision\n"


@server.resource("docs://chapters/{number}", name="chapter", mime_type="text/plain")
def chapter(number: str) -> str:
    return f"Chapter {number}: nothing to see here."


@server.tool()
def echo(message: str) -> str:
    """Return the message unchanged."""
    return message


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def touch(uri: str, ctx: Context) -> str:
    """Bump the revision of docs://manual/current and publish notifications/resources/updated for `uri`."""
    global _manual_revision
    if uri == "docs://manual/current":
        _manual_revision += 1
    await ctx.notify_resource_updated(uri)
    return f"touched {uri} (revision {_manual_revision})"


class Traveller(BaseModel):
    name: str
    born: date
    seat: Literal["aisle", "window"] | None = None


class Leg(BaseModel):
    to: str
    departs: datetime


Email = Annotated[str, WithJsonSchema({"type": "string", "format": "email"})]


@server.tool()
def book(
    travellers: list[Traveller],
    contact: Email,
    trip: Leg | list[Leg],
    notes: dict[str, str] | None = None,
    site: AnyUrl | None = None,
) -> str:
    """Book a trip: its schema is Pydantic's ($defs and $ref, anyOf, nullable fields, a dict)."""
    got = {
        "travellers": [t.model_dump(mode="json") for t in travellers],
        "contact": contact,
        "trip": [leg.model_dump(mode="json") for leg in trip] if isinstance(trip, list) else trip.model_dump(mode="json"),
        "notes": notes,
        "site": str(site) if site else None,
    }
    return "booked " + json.dumps(got, sort_keys=True)


@server.prompt()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Please greet {name} warmly."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on 127.0.0.1:PORT/mcp")
    args = parser.parse_args()
    if args.http is not None:
        server.run(transport="streamable-http", host="127.0.0.1", port=args.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
