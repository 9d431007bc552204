"""One small RPC client speaks to a plugkit runner (plugkit/wire.py): the `plugkit` client's calls
and the Ray node side's calls to its node's runner go through the same connection, and neither
the client nor runner.node brings a second HTTP client of its own (http.client, urllib)."""

import ast
import pathlib

from plugkit import wire

ROOT = pathlib.Path(__file__).resolve().parents[2]
SECOND_CLIENTS = ("http.client", "urllib", "urllib.request", "requests", "aiohttp")


def _imports(path: pathlib.Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
    return found


def test_the_client_and_the_node_side_call_a_runner_through_one_connection():
    from client.wire import rpc
    from runner.node import hosting

    assert rpc.Connection is wire.Connection and hosting.Connection is wire.Connection
    for where in ("client", "runner/node"):
        for path in (ROOT / where).rglob("*.py"):
            second = _imports(path) & set(SECOND_CLIENTS)
            assert not second, f"{path.relative_to(ROOT)} speaks HTTP with {second}: use plugkit.wire"
