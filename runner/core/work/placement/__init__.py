"""Where an attempt's worker process runs: the one slot of `plugkit work` that a runtime fills.

The supervisor (waves, states, heartbeats, the stall watchdog, the check, landing) is the same
for every placement; a placement only says what task the runner starts for the worker and what
its end means. A table, not a branch: adding a runtime is adding a row.
"""

from typing import Optional, Protocol

from runner.core.work.model import Failed, ItemRun, Run
from runner.core.tasks.task import Task


class Placement(Protocol):
    async def launch(self, it: ItemRun, argv: list[str], stdin: Optional[str], environ: dict[str, str],
                     ) -> tuple[str, dict[str, str], Optional[str]]:
        """(the worker task's code, its environ, its stdin) for this attempt."""
        ...

    def seen(self, it: ItemRun) -> int:
        """While the task runs: where it runs, once known (work status shows the node); and how
        many of the worker's hook calls were answered elsewhere and relayed here (a count that
        grows is a heartbeat: the remote worker's hooks never reach this runner)."""
        ...

    def ended(self, it: ItemRun, task: Task) -> Optional[Failed]:
        """After the task ended: its files tidied, and how the attempt failed when the
        placement knows better than the task's exit (a lost node), else None."""
        ...


def for_run(run: Run, home: Optional[str], gateways=None) -> Placement:
    """gateways: the runner's Ray gateways (ray_gateway.Gateways), kept for its life."""
    from runner.core.work.placement import local, ray_node

    rows = {"local": local.Local, "ray": ray_node.RayPlacement}
    return rows[run.runtime](run, home, gateways)
