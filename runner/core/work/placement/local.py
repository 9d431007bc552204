"""The default placement: the worker runs on this machine as the runner's own worker task."""

import json
from typing import Optional

from runner.core.tasks.task import Task
from runner.core.work.model import Failed, ItemRun, Run


def worker_code(argv: list[str], sandboxed: bool) -> str:
    """The worker task's code (runner/executors/worker.py): its argv, and a person's --no-sandbox."""
    return json.dumps(argv if sandboxed else {"argv": argv, "sandbox": False})


class Local:
    def __init__(self, run: Run, _home: Optional[str]) -> None:
        self.run = run

    def launch(self, it: ItemRun, argv: list[str], stdin: Optional[str], environ: dict[str, str],
               ) -> tuple[str, dict[str, str], Optional[str]]:
        return worker_code(argv, self.run.sandbox), environ, stdin

    def seen(self, it: ItemRun) -> None:
        return None

    def ended(self, it: ItemRun, task: Task) -> Optional[Failed]:
        return None
