"""Every RPC method of the runner with its params model and docstring, read from the real tables
(runner.rpc.namespaces.NAMESPACES -> each module's METHODS -> the model its @rpc decorator validates with)."""

import importlib
import inspect
from typing import Any, NamedTuple


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
