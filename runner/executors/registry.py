"""Which executors a runner has: one row per executor module, each exposing
`make(ctx: ExecutorContext) -> Executor`. The process executor is the fallback
for every language in plugkit/languages.py and must stay last."""

import importlib
from dataclasses import dataclass

from plugkit.config import Limits

FACTORIES = (
    "runner.executors.serial",
    "runner.executors.browser",
    "runner.executors.process",
)


@dataclass(frozen=True)
class ExecutorContext:
    runner_id: str
    home: str
    limits: Limits


def build(ctx: ExecutorContext) -> list:
    return [importlib.import_module(name).make(ctx) for name in FACTORIES]
