"""The default placement: the worker runs on this machine as the runner's own worker task."""

import json
from typing import Optional

from runner.core.tasks.task import Task
from runner.core.work.model import Failed, ItemRun, Run


def worker_code(argv: list[str], run: Run, item: str, sandbox: Optional[bool] = None) -> str:
    """The worker task's code (runner/executors/worker.py): its argv, a person's --no-sandbox, its
    network, and whose it is (its capability is scoped to that item)."""
    sandboxed = run.sandbox if sandbox is None else sandbox
    return json.dumps({"argv": argv, "sandbox": sandboxed, "network": run.network if sandboxed else "host",
                       "run": run.id, "item": item})


class Local:
    def __init__(self, run: Run, _home: Optional[str], _gateways=None) -> None:
        self.run = run

    async def launch(self, it: ItemRun, argv: list[str], stdin: Optional[str], environ: dict[str, str],
                     ) -> tuple[str, dict[str, str], Optional[str]]:
        return worker_code(argv, self.run, it.id), environ, stdin

    def seen(self, it: ItemRun) -> int:
        return 0  # its hook calls reach this runner, which counts them itself (WorkManager.worker_at)

    def ended(self, it: ItemRun, task: Task) -> Optional[Failed]:
        return None
