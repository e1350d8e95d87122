"""The Python SDK's client (PyPI `mcp==2.3.0`) in one legacy session over Streamable HTTP with
a gateway of many replicas, calling a tool whenever told, whatever happens to the replicas
behind (the replica test kills one meanwhile).

    .peers/venv/bin/python tests/peers/py_replicas_client.py URL

Connects (one JSON line: {"ready": true}), then calls `echo` once for each line read on
stdin, in the one session it opened, and prints one JSON line per call as it ends —
{"i", "ok": true, "text"} or {"i", "ok": false, "error"}; at the end of stdin,
{"done": true, "sessions": [...]}: every `Mcp-Session-Id` its requests carried (one, when
no session was lost). A failed call does not end the loop.

The test paces it so that no call of its is in flight when a replica is killed: this
SDK's transport does not survive a connection closed under a request (the error escapes
its task group and ends the client, session and all), where the TypeScript SDK's fails
that one call.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


def say(line: dict) -> None:
    print(json.dumps(line), flush=True)


async def main(url: str) -> None:
    sessions: list[str] = []

    async def sent(request) -> None:
        session = request.headers.get("mcp-session-id")
        if session and session not in sessions:
            sessions.append(session)

    async with httpx2.AsyncClient(timeout=30, event_hooks={"request": [sent]}) as http:
        async with Client(streamable_http_client(url, http_client=http), mode="legacy") as client:
            say({"ready": True})
            i = 0
            while await anyio.to_thread.run_sync(sys.stdin.readline):
                try:
                    result = await client.call_tool("echo", {"message": f"py {i}"}, read_timeout_seconds=10)
                    say({"i": i, "ok": True, "text": text(result)})
                except Exception as e:  # noqa: BLE001 - the test reads what went wrong
                    say({"i": i, "ok": False, "error": repr(e)})
                i += 1
    say({"done": True, "sessions": sessions})


if __name__ == "__main__":
    anyio.run(main, sys.argv[1])
