"""A minimal 2026-07-28 Streamable HTTP server for the CLI's cache tests: one tool,
`deploy`, whose `region` argument travels as `Mcp-Param-Region` (x-mcp-header); its
`tools/list` stays fresh for a minute. Every request is logged to stdout as one JSON
line: {"method": ..., "mcp-param-region": ...}. Prints `PORT <n>` first.

    python3 tests/peers/modern_headers_server.py
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TOOLS = [{
    "name": "deploy",
    "inputSchema": {"type": "object", "properties": {
        "region": {"type": "string", "x-mcp-header": "Region"}}},
    "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
}]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))) or b"{}")
        method = body.get("method")
        print(json.dumps({"method": method, "mcp-param-region": self.headers.get("mcp-param-region")}), flush=True)
        if "id" not in body:
            self.send_response(202)
            self.end_headers()
            return
        cacheable = {"resultType": "complete", "ttlMs": 60000, "cacheScope": "private"}
        if method == "server/discover":
            result = {**cacheable, "supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}},
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "headers", "version": "1"}}}
        elif method == "tools/list":
            result = {**cacheable, "tools": TOOLS}
        elif method == "tools/call":
            result = {"resultType": "complete", "content": [{"type": "text", "text": "deployed"}],
                      "structuredContent": {"ok": "yes"}}
        else:
            result = {"resultType": "complete"}
        data = json.dumps({"jsonrpc": "2.0", "id": body["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
print(f"PORT {server.server_address[1]}", flush=True)
try:
    server.serve_forever()
except KeyboardInterrupt:
    sys.exit(0)
