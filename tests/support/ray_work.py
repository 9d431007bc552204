"""`plugkit work` with its workers placed on a Ray cluster (tests/support/ray_cluster.py), under a git
identity of the workers' own, and what the tests look for on its nodes (gateways, Ray worker processes,
warm-up holds, attempt directories)."""

import os

import psutil

from tests.conftest import LEAK_MARK
from tests.support import ray_cluster
from tests.support.work_cli import Work

IDENTITY = {"GIT_AUTHOR_NAME": "Worker", "GIT_AUTHOR_EMAIL": "worker@example.invalid",
            "GIT_COMMITTER_NAME": "Worker", "GIT_COMMITTER_EMAIL": "worker@example.invalid"}


class RayWork(Work):
    def __init__(self, home, repo, plan, cluster) -> None:
        super().__init__(home, repo, plan)
        self.cluster = cluster
        self.env.update(IDENTITY)

    def start(self, *flags: str) -> dict:
        return super().start("--runtime", "ray", "--cluster", self.cluster.address, *flags)


def node_dirs(run: dict) -> set[str]:
    return {i["node"] for i in run["items"] if i.get("node")}


def gateways() -> list[psutil.Process]:
    """This test's Ray gateways: the runner's one Ray driver per cluster (runner/node/gateway.py)."""
    mark = os.environ[LEAK_MARK]
    found = []
    for p in psutil.process_iter(["pid"]):
        try:
            if "runner.node.gateway" in " ".join(p.cmdline()) and p.environ().get(LEAK_MARK) == mark:
                found.append(p)
        except psutil.Error:
            continue
    return found


def ray_workers(cluster, node: str) -> set[int]:
    """The node's Ray worker processes (each retitles itself ray::...), whosever job they serve."""
    found = set()
    for p in ray_cluster.tagged(f"{cluster.name}/{node}"):
        try:
            if p.cmdline()[:1] and p.cmdline()[0].startswith("ray::"):
                found.add(p.pid)
        except psutil.Error:
            continue
    return found


def holds(node_dir, since: float) -> int:
    """How many of the node's Ray worker processes the latest warm-up round since `since` held
    at once (runner/node/warm.py: each writes its file once its process runs; the files stay)."""
    rounds: dict[str, int] = {}
    folder = node_dir / "warm"
    for f in folder.iterdir() if folder.is_dir() else ():
        if f.stat().st_mtime >= since:
            rounds[f.name.split("-")[0]] = rounds.get(f.name.split("-")[0], 0) + 1
    return max(rounds.values(), default=0)


def attempt_dirs(node_dir) -> set[str]:
    """The attempt directories under the node's tmp: a new one is the attempt running there."""
    tmp = node_dir / "tmp"
    return {p.name for p in tmp.iterdir()} if tmp.is_dir() else set()
