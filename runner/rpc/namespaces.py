"""The explicit methods table: namespace -> the module that defines it.

A namespace's module (and the domain code behind it: the lifecycle model, memory,
serial, ...) is imported on the first call of one of its methods, not at boot: a
runner that only runs code never pays for the rest, and the first answer comes sooner.
"""

import importlib
import inspect
import time
from collections.abc import Mapping
from typing import Any, Callable, Iterator

from runner.rpc import scope, work_guard
from runner.rpc.context import CALLER

NAMESPACES = {
    "runner": "runner.rpc.runner",
    "debug": "runner.rpc.debug",
    "task": "runner.rpc.task",
    "session": "runner.rpc.session",
    "port": "runner.rpc.port",
    "serial": "runner.rpc.serial",
    "memory": "runner.rpc.memory",
    "gate": "runner.rpc.gate",
    "mutable": "runner.rpc.mutable",
    "prd": "runner.rpc.prd",
    "evidence": "runner.rpc.evidence",
    "approval": "runner.rpc.approval",
    "hook": "runner.rpc.hook",
    "work": "runner.rpc.work",
    "search": "runner.rpc.search",
    "audit": "runner.rpc.audit",
}


class Methods(Mapping):
    """What jsonrpcserver dispatches through: `methods[name]`, a KeyError meaning not found."""

    def __init__(self, namespaces: dict[str, str], extra: tuple = ()) -> None:
        self._namespaces = namespaces
        self._methods: dict[str, Callable[..., Any]] = {}
        self._loaded: set[str] = set()
        for module in extra:  # tests add modules whose names need no table row
            self._add(module, prefix=None)

    def _add(self, module: Any, prefix: str | None) -> None:
        for name, fn in module.METHODS.items():
            if prefix is not None and not name.startswith(prefix + "."):
                raise ValueError(f"{module.__name__} defines {name}, outside its namespace {prefix}")
            if name in self._methods:
                raise ValueError(f"RPC method {name} defined twice")
            self._methods[name] = _counted(name, fn)

    def load(self, prefix: str) -> None:
        if prefix not in self._loaded:
            self._add(importlib.import_module(self._namespaces[prefix]), prefix)
            self._loaded.add(prefix)

    def load_all(self) -> None:
        for prefix in self._namespaces:
            self.load(prefix)

    def __getitem__(self, name: str) -> Callable[..., Any]:
        if name not in self._methods:
            prefix = name.partition(".")[0]
            if prefix in self._namespaces:
                self.load(prefix)
        return self._methods[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._methods)

    def __len__(self) -> int:
        return len(self._methods)


def build_methods(extra: tuple = ()) -> Methods:
    return Methods(NAMESPACES, extra)


# Every method takes (ctx, *args, **kwargs), so jsonrpcserver's argument check (it binds the
# call to inspect.signature(method) on every call) reads this one, built once, instead of
# building a signature per call; a method's own params are checked by dispatch.rpc (-32602).
_SIGNATURE = inspect.signature(lambda ctx, *args, **kwargs: None)


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    guarded = name in work_guard.GUARDED  # a `plugkit work` worker makes these on its own item only

    async def method(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        ctx.runtime.requests[name] += 1
        started = time.perf_counter()
        try:
            cap = CALLER.get()  # a sandboxed worker's capability: its table decides, for every method
            if cap is not None and (refused := scope.refusal(ctx, cap, name, kwargs)) is not None:
                return refused
            if guarded and (refused := await work_guard.refusal(ctx, name, kwargs)) is not None:
                return refused
            return await fn(ctx, *args, **kwargs)
        finally:
            ctx.runtime.latency.record(name, time.perf_counter() - started)

    method.__doc__ = fn.__doc__
    method.__signature__ = _SIGNATURE  # type: ignore[attr-defined]
    return method
