"""A real MCP server for the proxy's tests: ``send_report`` appends a line to a file.

Run as ``python report_server.py OUT [stdio|http PORT]``; ``REPORT_DESCRIPTION`` in the
environment changes ``send_report``'s description (a tool definition that changed).
``crash`` ends the process without an answer (an upstream crash); ``list_files`` is
read-only; ``wipe_outbox`` empties the file.
"""

from __future__ import annotations

import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

# imported (not run) by pytest's doctest collection, with pytest's own arguments
OUT = sys.argv[1] if __name__ == "__main__" else os.devnull
app = MCPServer("reports")


@app.tool(annotations=ToolAnnotations(destructiveHint=True),
          description=os.environ.get("REPORT_DESCRIPTION",
                                     "Send a report to someone (appends it to the outbox)."))
def send_report(to: str, body: str) -> str:
    with open(OUT, "a", encoding="utf-8") as fh:
        fh.write(f"{to}: {body}\n")
    return f"sent to {to}"


@app.tool(annotations=ToolAnnotations(readOnlyHint=True))
def list_files() -> str:
    """List the outbox."""
    return open(OUT, encoding="utf-8").read() if os.path.exists(OUT) else ""


@app.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe_outbox() -> str:
    """Empty the outbox."""
    open(OUT, "w", encoding="utf-8").close()
    return "wiped"


@app.tool()
def crash() -> str:
    """End the server without answering."""
    os._exit(3)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[2] == "http":
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[3]))
    else:
        app.run()
