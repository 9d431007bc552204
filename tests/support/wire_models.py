"""Every RPC method of the runner with its params model and docstring, read from the real tables
(runner.rpc.namespaces.NAMESPACES -> each module's METHODS -> the model its @rpc decorator validates with)."""

import ast
import importlib
import inspect
import pathlib
import re
from typing import Any, NamedTuple

ROOT = pathlib.Path(__file__).resolve().parents[2]


class Method(NamedTuple):
    name: str
    model: Any  # the pydantic Params class
    doc: str


def methods() -> dict[str, Method]:
    from runner.rpc.namespaces import NAMESPACES

    found = {}
    for module_name in NAMESPACES.values():
        module = importlib.import_module(module_name)
        for name, fn in module.METHODS.items():
            # @rpc(Model) closes over the model it validates with: the contract's real source.
            model = inspect.getclosurevars(fn).nonlocals["model"]
            found[name] = Method(name, model, inspect.getdoc(fn) or "")
    return found


FILE_SUFFIXES = {"log", "out", "lock", "pid", "json", "toml"}  # runner.log is a file, not a method


def client_method_literals() -> dict[str, list[str]]:
    """Every "namespace.verb" string in the client whose namespace the runner serves -> where."""
    from runner.rpc.namespaces import NAMESPACES

    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "client").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                    and re.fullmatch(r"[a-z]+\.[a-z_]+", node.value) and node.value.split(".")[0] in NAMESPACES \
                    and node.value.split(".")[1] not in FILE_SUFFIXES:
                found.setdefault(node.value, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found
