"""`plugkit work` driven from a test with the command worker (tests/support/work_agent.py): a
workspace's plan for the scripted agent, the CLI calls, and waits on the run's status. Shared by
the e2e `plugkit work` tests."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support.agent import git, make_repo

AGENT = str(Path(__file__).resolve().parent / "work_agent.py")


class Work:
    def __init__(self, home, repo: Path, plan: dict) -> None:
        self.home, self.repo = home, repo
        self.plan_file = repo.parent / "plan.json"
        self.plan_file.write_text(json.dumps(plan))
        self.env = {"PLUGKIT_E2E_WORK_PLAN": str(self.plan_file), "PLUGKIT_E2E_WORK_DIR": str(repo.parent)}
        # A worker's environment is scoped (plugkit/work/scopes.py): the test agent's plan is granted.
        config = repo / ".plugkit" / "config.toml"
        config.write_text(config.read_text() + f"work_credentials = {json.dumps(sorted(self.env))}\n")
        git(repo, "commit", "-qam", "grant the test agent its plan")

    def cli(self, *args: str, ok: bool = True) -> subprocess.CompletedProcess:
        done = self.home.cli(*args, cwd=self.repo, env=self.env, timeout=120)
        if ok:
            assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done

    def add(self, item: str, *flags: str) -> None:
        self.cli("prd", "add", f"make {item}", "--id", item, *flags)

    def start(self, *flags: str) -> dict:
        return json.loads(self.cli("work", "--run", f"{sys.executable} {AGENT}", "--json", *flags).stdout)["run"]

    def status(self, wait: float = 0) -> dict:
        done = self.cli("work", "status", "--json", "--wait", str(wait), ok=False)
        assert done.returncode in (0, 3), (done.stdout, done.stderr)  # 3: halted or an item unfinished
        return json.loads(done.stdout)["run"]

    def until(self, check, timeout: float = 90) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            run = self.status(wait=2)
            if check(run):
                return run
            assert time.monotonic() < deadline, json.dumps(run, indent=1)

    def settled(self, timeout: float = 90) -> dict:
        return self.until(lambda r: r["ended_at"] is not None or r["state"] in ("waiting", "halted"), timeout)

    def hook_answers(self, item: str = "w1") -> tuple[str, list[str]]:
        """Run ITEM (its worker makes ITEM.txt), require it landed, and return its logs and the
        hook answers its worker was given, in order."""
        self.add(item, "--verify", f"test -f {item}.txt")
        self.start()
        run = self.until(lambda r: r["ended_at"] is not None)
        assert self.items(run)[item]["state"] == "completed", run
        log = self.cli("work", "logs", item, "--all").stdout
        return log, [line for line in log.splitlines() if line.startswith("hook answer:")]

    def items(self, run: dict) -> dict:
        return {i["id"]: i for i in run["items"]}

    def prd(self) -> dict:
        return {i["id"]: i for i in json.loads((self.repo / ".prd").read_text())}


def commit_file(name: str, text: str = "done\n") -> list:
    return [["write", name, text], ["commit", f"add {name}"]]


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository whose gates are advisory: the fixture of the `plugkit work` e2e tests."""
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')
