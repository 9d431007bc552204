"""Which executors a runner has: one row per executor module, each exposing
`make(ctx: ExecutorContext) -> Executor`, with the task.exec langs it claims
(None: everything, the process executor's row, which must stay last).

An executor whose langs are listed is imported and built on its first task, so a
runner that never opens a serial port or a page never imports pyserial or pyppeteer.
"""

import importlib
from dataclasses import dataclass
from typing import Any, Optional

from plugkit.config import DEFAULT_BROWSER_IDLE_S, Limits
from plugkit.lazy import Lazy

FACTORIES: tuple[tuple[str, str, Optional[frozenset[str]]], ...] = (
    # (name, module, langs)
    ("serial", "runner.executors.serial.executor", frozenset({"serial"})),
    ("browser", "runner.executors.browser.executor", frozenset({"browser"})),
    # Started by `plugkit work` only (task.exec from the wire refuses the lang).
    ("worker", "runner.executors.worker", frozenset({"worker"})),
    ("process", "runner.executors.process", None),
)


@dataclass(frozen=True)
class ExecutorContext:
    """What the composition root hands every executor's make(): read once at boot."""

    runner_id: str
    home: str
    limits: Limits
    chromium: Optional[str] = None  # PLUGKIT_CHROMIUM; None: the default path
    browser_idle_s: float = DEFAULT_BROWSER_IDLE_S
    python: Optional[str] = None  # PLUGKIT_PYTHON; None: the runner's own interpreter
    cgroups: bool = True  # PLUGKIT_CGROUPS; False: tags only, no cgroup per task
    # The runner's worker capabilities (plugkit/work/capabilities.py): the worker executor mints
    # one per sandboxed worker; the HTTP guard, holding the same object, checks them.
    capabilities: Optional[Any] = None


class Deferred:
    """An executor built on first use. Until then it holds nothing: session end and
    shutdown have nothing to release, and its snapshot says so."""

    def __init__(self, name: str, module: str, langs: frozenset[str], ctx: ExecutorContext) -> None:
        self.name = name
        self._langs = langs
        self._executor: Lazy[Any] = Lazy(lambda: importlib.import_module(module).make(ctx))

    def real(self) -> Any:
        """The executor itself (built now if it was not), for its own inspection API."""
        return self._executor.get()

    def claims(self, lang: str) -> bool:
        return lang in self._langs

    async def prepare(self, p: Any) -> Any:
        return await self._executor.get().prepare(p)

    async def run(self, io: Any, prepared: Any, spec: Any) -> Any:
        return await self._executor.get().run(io, prepared, spec)

    async def end_session(self, key: Any) -> None:
        if (executor := self._executor.peek()) is not None:
            await executor.end_session(key)

    async def close(self) -> None:
        if (executor := self._executor.peek()) is not None:
            await executor.close()

    def snapshot(self) -> dict:
        executor = self._executor.peek()
        return executor.snapshot() if executor is not None else {"loaded": False}


def build(ctx: ExecutorContext) -> list:
    return [Deferred(name, module, langs, ctx) if langs else importlib.import_module(module).make(ctx)
            for name, module, langs in FACTORIES]
