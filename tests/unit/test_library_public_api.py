"""The runner's HTTP layer and its JSON-RPC dispatch use aiohttp and jsonrpcserver through their
public API: no private module imported, no private attribute read or written on anything but
our own objects (GuardedSite once wrote aiohttp's `_server`, dispatch read `response._error`)."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FILES = sorted((ROOT / "runner" / "http").glob("*.py")) + [ROOT / "runner" / "rpc" / "dispatch.py",
                                                         ROOT / "runner" / "rpc" / "namespaces.py",
                                                         ROOT / "runner" / "system" / "logs.py"]


def _private_uses(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                found.append(f"line {node.lineno}: .{node.attr}")
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            modules = [a.name for a in node.names]
        for module in modules:
            if any(part.startswith("_") and not part.startswith("__") for part in module.split(".")):
                found.append(f"line {node.lineno}: import {module}")
    return found


def test_no_private_attribute_or_module_of_a_library():
    found = {str(p.relative_to(ROOT)): uses for p in FILES if (uses := _private_uses(p.read_text()))}
    assert not found, found


def test_the_check_sees_what_the_old_code_did():
    assert _private_uses("self._server = 1\nsite._server = 2\n") == ["line 2: ._server"]
    assert _private_uses("err = response._error\n") == ["line 1: ._error"]
    assert "line 1: import aiohttp._http_parser" in _private_uses("from aiohttp._http_parser import X\n")
