"""The runner's Ray gateways: per cluster, one long-lived task (runner/node/gateway.py) that every
remote attempt's driver relays through. Started by the first attempt placed on that cluster, kept
for the runner's life (a task of its own, outside every attempt's: an attempt's end, its cgroup's
kill, leaves it running), started again when it ended (its cluster went away or refused it).
"""

import asyncio
import hashlib
import json
import os
import sys
from typing import Optional

from plugkit.protocol.node import GATEWAY_MODULE
from plugkit.work import cluster as cluster_env
from plugkit.work.cluster import GATEWAY_CHECKED
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.executors.base import ExecSpec
from plugkit.vocab import WORKER_LANG

GATEWAY_TIMEOUT_S = 30 * 24 * 3600.0  # the runner's life, in practice: it ends with the runner
CHECK_TIMEOUT_S = 150.0  # the gateway's token check (auth.CHECK_TIMEOUT_S) and its start on a loaded machine
GATEWAY_SAYS, GATEWAY_ENDS = "plugkit ray gateway: ", "; ending"  # its last line when it could not start


class Gateways:
    def __init__(self, tasks: TaskManager, home: str) -> None:
        self.tasks, self.home = tasks, home
        self.dir = os.path.join(home, "work", "ray")
        self.live: dict[str, Task] = {}  # cluster address -> its gateway's task
        self.lock = asyncio.Lock()

    def socket(self, cluster: str) -> str:
        return os.path.join(self.dir, "gw-" + hashlib.sha256(cluster.encode()).hexdigest()[:12] + ".sock")

    async def ensure(self, cluster: str, cwd: str, environ: dict[str, str]) -> str:
        """The socket of the cluster's gateway, its task started when none runs (environ: the
        driver's environment, Ray's token and the node key's path)."""
        path = self.socket(cluster)
        async with self.lock:
            task: Optional[Task] = self.live.get(cluster)
            if task is None or task.finished:
                os.makedirs(self.dir, mode=0o700, exist_ok=True)
                argv = [sys.executable, "-P", "-m", GATEWAY_MODULE, cluster, path, str(os.getpid())]
                self.live[cluster] = await self.tasks.exec(ExecSpec(
                    session_id=f"plugkit-ray-gateway-{os.path.basename(path)[3:-5]}", cwd=cwd, lang=WORKER_LANG,
                    code=json.dumps({"argv": argv, "sandbox": False}), timeout_s=GATEWAY_TIMEOUT_S, stdin="",
                    environ=environ, detach=True, name="ray gateway"))
        return path

    async def refusal(self, cluster: str, cwd: str) -> Optional[str]:
        """Why no run may use this cluster for want of Ray's token authentication, or None: the
        cluster's gateway's own token check (runner/node/gateway.py), which it makes before anything
        reaches the cluster with the token. A live gateway that passed it answers at once (a GCS
        restarted open is a new cluster its connection does not follow: it ends); else the gateway
        is started here, its check and Ray's import side by side, and the run waits for the check
        only, not for a check of its own before the gateway's (two probes and two Ray imports)."""
        await self.ensure(cluster, cwd, cluster_env.driver_env(os.environ, self.home))
        task = self.live[cluster]
        waited = await self.tasks.wait(task, CHECK_TIMEOUT_S, GATEWAY_CHECKED, None, 0)
        if waited.matched or GATEWAY_CHECKED in self._said(task):
            return None
        if not task.finished:
            return f"the Ray cluster at {cluster} did not answer the token check within {CHECK_TIMEOUT_S:.0f} s"
        lines = self._said(task).strip().splitlines()
        said = [ln[len(GATEWAY_SAYS):].removesuffix(GATEWAY_ENDS) for ln in lines
                if ln.startswith(GATEWAY_SAYS) and ln.endswith(GATEWAY_ENDS)]
        return (said or [f"its Ray gateway ended: {(lines or [task.message])[-1][:300]}"])[-1][:600]

    def _said(self, task: Task) -> str:
        return "".join(text for _stream, text in self.tasks.read(task, 0, 16 << 10).chunks)
