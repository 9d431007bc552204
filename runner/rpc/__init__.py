"""The explicit methods table: every namespace module contributes its METHODS dict."""

import time
from typing import Any, Callable

from runner.rpc import approval as approval_ns
from runner.rpc import debug as debug_ns
from runner.rpc import evidence as evidence_ns
from runner.rpc import gate as gate_ns
from runner.rpc import hook as hook_ns
from runner.rpc import memory as memory_ns
from runner.rpc import mutable as mutable_ns
from runner.rpc import port as port_ns
from runner.rpc import prd as prd_ns
from runner.rpc import runner as runner_ns
from runner.rpc import serial as serial_ns
from runner.rpc import session as session_ns
from runner.rpc import task as task_ns

NAMESPACES = (
    runner_ns, debug_ns, task_ns, session_ns, port_ns, serial_ns, memory_ns,
    gate_ns, mutable_ns, prd_ns, evidence_ns, approval_ns, hook_ns,
)


def build_methods(extra: tuple = ()) -> dict[str, Callable[..., Any]]:
    methods: dict[str, Callable[..., Any]] = {}
    for module in NAMESPACES + tuple(extra):
        for name, fn in module.METHODS.items():
            if name in methods:
                raise ValueError(f"RPC method {name} defined twice")
            methods[name] = _counted(name, fn)
    return methods


def _counted(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    async def method(ctx: Any, *args: Any, **kwargs: Any) -> Any:
        ctx.runtime.requests[name] += 1
        started = time.perf_counter()
        try:
            return await fn(ctx, *args, **kwargs)
        finally:
            ctx.runtime.latency.record(name, time.perf_counter() - started)

    method.__doc__ = fn.__doc__
    return method
