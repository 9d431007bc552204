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
CHECK_MODULE = "runner.node.auth"  # `--refusal HOST:PORT`: why not this cluster (its token), or nothing
CHECK_TIMEOUT_S = 150.0


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
        """Why no run may use this cluster for want of Ray's token authentication, or None. Asked once
        per gateway: while the cluster's gateway lives and said its token check passed, that answer
        holds (a GCS restarted open is a new cluster its connection does not follow: it ends), and a
        run starts at once; else the check runs now, in a task of its own (Ray never loads here)."""
        task = self.live.get(cluster)
        if task is not None and not task.finished and GATEWAY_CHECKED in self._said(task):
            return None
        argv = [sys.executable, "-P", "-m", CHECK_MODULE, "--refusal", cluster]
        check = await self.tasks.exec(ExecSpec(
            session_id="plugkit-ray-check", cwd=cwd, lang=WORKER_LANG, code=json.dumps({"argv": argv, "sandbox": False}),
            timeout_s=CHECK_TIMEOUT_S, stdin="", environ=cluster_env.driver_env(os.environ, self.home), detach=True,
            name="ray token check"))
        await check.done.wait()
        said = self._said(check).strip()
        if check.state != "completed" or check.exit_code != 0:
            return f"the token check of the Ray cluster at {cluster} failed: {(said.splitlines() or [check.message])[-1][:300]}"
        return said.splitlines()[-1][:600] if said else None

    def _said(self, task: Task) -> str:
        return "".join(text for _stream, text in self.tasks.read(task, 0, 16 << 10).chunks)
