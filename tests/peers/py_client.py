"""A host on the Python SDK's client (PyPI `mcp==2.3.0`), for the bridge's tests.

    .peers/venv/bin/python tests/peers/py_client.py MODE -- CMD ARGS...   # a stdio server (the bridge)
    .peers/venv/bin/python tests/peers/py_client.py MODE --url URL        # Streamable HTTP at URL

`--echo NAME` (before `--`) names the tool to call as echo (default `echo`).

MODE is `legacy` (the initialize handshake) or `auto` (server/discover first, then a
fallback). The host declares elicitation and accepts every question with
{"approve": true}. It connects, lists and calls what the server offers, and prints one
JSON object: what it saw.
"""

import json
import sys

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError


async def accept(context, params):
    return types.ElicitResult(action="accept", content={"approve": True})


def text(result) -> str:
    return "".join(c.text for c in result.content if getattr(c, "type", None) == "text")


async def main(mode: str, rest: list[str]) -> None:
    # Only this script's own arguments (before `--`) may name a URL: the server's are its own.
    own = rest[: rest.index("--")] if "--" in rest else rest
    if "--url" in own:
        server = own[own.index("--url") + 1]
    else:
        command = rest[rest.index("--") + 1 :]
        server = StdioServerParameters(command=command[0], args=command[1:])
    echo = own[own.index("--echo") + 1] if "--echo" in own else "echo"
    seen: dict = {}
    try:
        async with Client(server, mode=mode, elicitation_callback=accept, raise_exceptions=True) as client:
            seen["protocolVersion"] = client.protocol_version
            seen["serverInfo"] = client.server_info.model_dump(exclude_none=True) if client.server_info else None
            caps = client.server_capabilities.model_dump(exclude_none=True, by_alias=True)
            seen["capabilities"] = caps
            if "tools" in caps:
                tools = [t.name for t in (await client.list_tools()).tools]
                seen["tools"] = tools
                if echo in tools:
                    seen["echo"] = text(await client.call_tool(echo, {"message": "hi from python"}))
                if "confirm" in tools:
                    seen["confirm"] = text(await client.call_tool("confirm", {}))
            if "resources" in caps:
                resources = [str(r.uri) for r in (await client.list_resources()).resources]
                seen["resources"] = resources
                if resources:
                    read = await client.read_resource(resources[0])
                    seen["read"] = read.contents[0].text
            if "prompts" in caps:
                seen["prompts"] = [p.name for p in (await client.list_prompts()).prompts]
    except MCPError as e:
        seen["error"] = {"code": e.error.code, "message": e.error.message}
    except Exception as e:  # noqa: BLE001 - the test reads what went wrong
        seen["error"] = {"message": repr(e)}
    print(json.dumps(seen))


if __name__ == "__main__":
    anyio.run(main, sys.argv[1], sys.argv[2:])
