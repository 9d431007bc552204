"""The Ray placement, the runner's side: each attempt's worker task is a driver process
(runner/node/driver.py) that relays the attempt through the cluster's gateway (one per runner and
cluster, ray_gateway.py), which runs it on a cluster node.

What travels: the item branch's history (a bundle), the worker's argv and prompt, and the
environment its credential scopes let through (built by the attempt exactly as for a local
worker). What never does: the supervisor's $PLUGKIT_HOME, its port, its token.
"""

import asyncio
import os
import sys
from typing import Optional

from plugkit.protocol.node import (BAD_OBJECTS_RC, CLUSTER_RC, DRIVER_MODULE, NODE_LOST_RC, DriverSpec, Malformed,
                                   Record, parse)
from plugkit.refusals import Refused
from plugkit.work import cluster, workers
from runner.core.tasks.task import Task
from runner.core.work.model import Failed, ItemRun, Run
from runner.core.work.placement.local import worker_code
from runner.core.work.placement.ray_gateway import Gateways


class RayPlacement:
    def __init__(self, run: Run, home: Optional[str], gateways: Optional[Gateways]) -> None:
        assert gateways is not None, "a Ray run needs the runner's gateways"
        self.run, self.gateways = run, gateways
        self.row = workers.row(run.worker)
        self.home = home or os.path.expanduser("~/.plugkit")
        self.dir = os.path.join(self.home, "work", "ray")
        self.noted: dict[str, int] = {}  # item -> how many of its attempt's refused calls are on it
        self.early = self._start_gateway()

    def _start_gateway(self) -> Optional["asyncio.Task"]:
        """The gateway started with the run, not with its first attempt: it connects, proves and
        warms the nodes (runner/node/warm.py) while the first worktrees are made. An answer it
        cannot give here is the first launch's to give, which asks again."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # built outside the runner's loop (a test of the placement alone)
            return None

        async def ensure() -> None:
            try:
                await self.gateways.ensure(self.run.cluster or "", self.run.workspace,
                                           cluster.driver_env(os.environ, self.home))
            except Refused:
                pass

        return loop.create_task(ensure())

    def _paths(self, it: ItemRun) -> tuple[str, str]:
        base = os.path.join(self.dir, f"{self.run.id}-{it.id}-{it.attempt}")
        return base + ".spec.json", base + ".record.json"

    async def launch(self, it: ItemRun, argv: list[str], stdin: Optional[str], environ: dict[str, str],
                     ) -> tuple[str, dict[str, str], Optional[str]]:
        assert it.worktree is not None and it.branch is not None and it.session_id is not None
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        driver_env = cluster.driver_env(os.environ, self.home)
        try:
            gateway = await self.gateways.ensure(self.run.cluster or "", self.run.workspace, driver_env)
        except Refused as exc:
            raise Failed("failed", "spawn_failed", f"the run's Ray gateway: {exc.message}") from None
        spec_path, record = self._paths(it)
        _unlink(record)  # an earlier runner's, for an attempt of the same number
        self.noted[it.id] = 0
        try:
            spec = parse(DriverSpec, dict(
                cluster=self.run.cluster, gateway=gateway, repo_key=self.run.workspace, branch=it.branch, local_worktree=it.worktree,
                argv=argv, stdin=stdin or "", env={k: v for k, v in environ.items() if k not in cluster.NEVER_TRAVELS},
                session=it.session_id, run=self.run.id, item=it.id, attempt=it.attempt, record=record,
                sandbox=self.run.sandbox, network=self.run.network, kind=self.run.worker,
                install=workers.install_args(self.row), hooks_file=self.row.hooks_file),
                "attempt for the Ray cluster", "`plugkit work logs` and the item's worker settings say what it holds")
        except Malformed as exc:
            raise Failed("failed", "spawn_failed", str(exc)) from None
        fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as fh:
            fh.write(spec.model_dump_json())
        # The driver is plugkit's own code, not the agent's: it runs unconfined here (it must
        # reach the gateway); the worker itself is sandboxed on its node as it would be here.
        code = worker_code([sys.executable, "-P", "-m", DRIVER_MODULE, spec_path], self.run,
                           it.id, sandbox=False)
        return code, driver_env, None

    def record(self, it: ItemRun) -> Record:
        """The driver's record of the attempt; an empty one until it wrote it (or when it is
        unreadable: the attempt then shows no node and no heartbeat, and the stall watchdog acts)."""
        try:
            with open(self._paths(it)[1]) as fh:
                return parse(Record, fh.read(), "record of the Ray driver")
        except (OSError, Malformed):
            return Record()

    def seen(self, it: ItemRun) -> int:
        """Where the attempt runs, as soon as the driver wrote it (status and /debug show it), and
        how many of its worker's hook calls the node's runner answered (runner/node/task.py relays them);
        the calls that runner refused its capability go on the item, as a local worker's do."""
        rec = self.record(it)
        if rec.node:
            it.node = f"{rec.node[:12]} ({rec.node_ip or '?'})"
        if rec.ray_task:
            it.placement = f"ray task {rec.ray_task}"
        if rec.refused_nodes:  # nodes that failed the node-key challenge, and why
            self.run.refused_nodes = dict(rec.refused_nodes)
        for what in rec.refused[self.noted.get(it.id, 0):]:  # the driver's list only grows during an attempt
            it.note_refused(what)
        self.noted[it.id] = len(rec.refused)
        return rec.beats

    def ended(self, it: ItemRun, task: Task) -> Optional[Failed]:
        self.seen(it)
        bad = self.record(it).bad_objects
        for path in self._paths(it):  # the spec holds the worker's scoped environment: never left behind
            _unlink(path)
        if task.state == "failed" and task.exit_code == NODE_LOST_RC:
            return Failed("killed", "node_lost", f"the node running attempt {it.attempt} went away "
                                                f"({it.node or 'before it started'})")
        if task.state == "failed" and task.exit_code == BAD_OBJECTS_RC and bad:
            return Failed("blocked", "bad_objects", f"{str(bad)[:400]}; a person looks before "
                                                   f"`plugkit prd update {it.id} --status pending`")
        if task.state == "failed" and task.exit_code == CLUSTER_RC:
            return Failed("failed", "spawn_failed", f"the Ray cluster at {self.run.cluster} could not take the "
                                                   f"attempt; `plugkit work logs {it.id}` says why, "
                                                   "`plugkit doctor` checks the cluster")
        return None


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
