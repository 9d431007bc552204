"""`plugkit work` with its workers placed on a Ray cluster (tests/support/ray_cluster.py), under a git
identity of the workers' own."""

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
