"""`plugkit mcp`: a Model Context Protocol server on stdio (the official Python SDK, the `mcp`
extra) exposing `search`, so any host that speaks MCP calls code search with structured
arguments. Each call is one search.query to the runner (auto-started), in the directory the
host started the server in unless the call names another. `initialize` is answered before the
SDK has loaded (client/verbs/mcp_front.py)."""

import os
import sys

from client.wire.session import Caller, connect

INSTRUCTIONS = ("plugkit's code search over this repository: definitions (symbol -> file:line), code hits "
                "with whole lines, and the commits that explain a change. Prefer it to grep for finding where "
                "something is defined, used, or why it changed.")


def search(query: str, path: str | None = None, lang: str | None = None, limit: int = 10,
           history: bool | None = None, cwd: str | None = None) -> str:
    """Search the workspace's code. query: words or an identifier ("parse_args", "why did retry change").
    path: a glob on the relative path ("src/*.py"); lang: a language ("python"); limit: results (1-100);
    history: force (true) or hide (false) the commits section; cwd: a directory in the project."""
    from client.verbs.search import render

    params = Caller({"cwd": cwd or os.getcwd(), "session": None}).params(query=query, limit=limit)
    params.update({k: v for k, v in (("path", path), ("lang", lang), ("history", history)) if v is not None})
    client = connect()
    try:
        return render(client.call("search.query", params), query, limit)
    finally:
        client.close()


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: plugkit mcp   (an MCP server on stdio with a `search` tool; needs pip install 'plugkit[mcp]')")
        return 0
    import importlib.metadata
    import importlib.util

    if importlib.util.find_spec("mcp") is None:
        print("plugkit mcp needs the MCP SDK: pip install 'plugkit[mcp]'", file=sys.stderr)
        return 1
    from client.verbs import mcp_front
    from plugkit import __version__, paths

    def run_sdk() -> None:  # the SDK's import is the slow part: the front has answered initialize by now
        from mcp.server.mcpserver import MCPServer

        server = MCPServer("plugkit", instructions=INSTRUCTIONS, version=__version__)
        server.tool(name="search", structured_output=False)(search)
        server.run("stdio")

    home = paths.home()
    os.makedirs(home, mode=0o700, exist_ok=True)
    versions = f"mcp {importlib.metadata.version('mcp')} plugkit {__version__} {len(INSTRUCTIONS)}"
    mcp_front.serve(home, versions, run_sdk)
    return 0
