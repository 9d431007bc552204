"""Which executors a runner has: one row per executor module, each exposing
`make(ctx: ExecutorContext) -> Executor`, with the task.exec langs it claims
(None: everything, the process executor's row, which must stay last).

An executor whose langs are listed is imported and built on its first task, so a
runner that never opens a serial port or a page never imports pyserial or pyppeteer.
"""

import importlib
from dataclasses import dataclass
from typing import Any, Optional

from plugkit.config import Limits

FACTORIES: tuple[tuple[str, str, Optional[frozenset[str]]], ...] = (
    # (name, module, langs)
    ("serial", "runner.executors.serial.executor", frozenset({"serial"})),
    ("browser", "runner.executors.browser.executor", frozenset({"browser"})),
    ("process", "runner.executors.process", None),
)


@dataclass(frozen=True)
class ExecutorContext:
    runner_id: str
    home: str
    limits: Limits


class Deferred:
    """An executor built on first use. Until then it holds nothing: session end and
    shutdown have nothing to release, and its snapshot says so."""

    def __init__(self, name: str, module: str, langs: frozenset[str], ctx: ExecutorContext) -> None:
        self.name = name
        self._module, self._langs, self._ctx = module, langs, ctx
        self._executor: Any = None

    def _get(self) -> Any:
        if self._executor is None:
            self._executor = importlib.import_module(self._module).make(self._ctx)
        return self._executor

    def claims(self, lang: str) -> bool:
        return lang in self._langs

    async def prepare(self, p: Any) -> Any:
        return await self._get().prepare(p)

    async def run(self, io: Any, prepared: Any, spec: Any) -> Any:
        return await self._get().run(io, prepared, spec)

    async def end_session(self, key: Any) -> None:
        if self._executor is not None:
            await self._executor.end_session(key)

    async def close(self) -> None:
        if self._executor is not None:
            await self._executor.close()

    def snapshot(self) -> dict:
        return self._executor.snapshot() if self._executor is not None else {"loaded": False}

    def __getattr__(self, name: str) -> Any:
        # Anything else (an executor's own inspection API) is the real executor's.
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self._get(), name)


def build(ctx: ExecutorContext) -> list:
    return [Deferred(name, module, langs, ctx) if langs else importlib.import_module(module).make(ctx)
            for name, module, langs in FACTORIES]
