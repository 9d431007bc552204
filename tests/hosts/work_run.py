"""`plugkit work` driving real agent hosts against the scripted fake model: the repository
with its 4-item .prd, one fake-model script per item (routed on each worker's first prompt
line), and a poll of `plugkit work status`. Shared by tests/hosts/test_work_hosts.py and the
`work_4_items` row of scripts/bench.
"""

import json
import os
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tests.hosts.hosts import Host, host_env
from tests.hosts.script import Say, Script, Scripts
from tests.support.agent import git

SUBJECTS = {"w1": "add w1.txt", "w2": "add w2.txt", "w3": "add w3.txt after w1 and w2", "w4": "add w4.txt"}


def prompt_line(item: str) -> str:
    return f"work item {item}: {SUBJECTS.get(item, item)}"


@dataclass
class WorkRepo:
    repo: Path
    host_home: Path
    plugkit: list[str]
    env: dict  # the environment `plugkit work` is run with: what every worker inherits

    def worktree(self, item: str) -> Path:
        return self.repo / ".plugkit" / "worktrees" / item

    def cli(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        done = subprocess.run([*self.plugkit, *args], cwd=self.repo, env=self.env, capture_output=True, text=True,
                              timeout=120)
        if check and done.returncode != 0:
            raise AssertionError(f"plugkit {' '.join(args)}: {done.stdout}{done.stderr}")
        return done

    def status(self, wait: float = 2) -> dict:
        done = self.cli("work", "status", "--json", "--wait", str(wait), check=False)
        assert done.returncode in (0, 3), (done.stdout, done.stderr)  # 3: halted or an item unfinished
        return json.loads(done.stdout)["run"]

    def until(self, check, timeout: float = 240) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            run = self.status()
            if check(run):
                return run
            if time.monotonic() > deadline:
                raise AssertionError(f"the run did not get there in {timeout:.0f} s: {json.dumps(run, indent=1)}")

    def settled(self, timeout: float = 240) -> dict:
        return self.until(lambda r: r["ended_at"] is not None or r["state"] in ("waiting", "halted"), timeout)


def make_repo(base: Path, host: Host, plugkit: list[str], url: str, items: dict[str, tuple]) -> WorkRepo:
    """A git repo on main whose .prd holds `items` (id -> (verify, extra prd add flags)), added
    through plugkit and committed; the host's scratch HOME pointed at the fake model."""
    repo, host_home = base / "repo", base / "host-home"
    repo.mkdir()
    host_home.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "worker@example.invalid")
    git(repo, "config", "user.name", "worker")
    (repo / "README").write_text("a project worked by agents\n")
    # Workers get scoped environments (plugkit/work/scopes.py): grant what points the host at
    # the fake model beyond its row's own model variables (codex's env_key, say), and CI.
    (repo / ".plugkit").mkdir()
    config = repo / ".plugkit" / "config.toml"
    granted = sorted({*host.env(url), "CI"})
    config.write_text(f"work_credentials = {json.dumps(granted)}\n")
    for rel, text in host.files(url, str(repo)).items():
        (host_home / rel).parent.mkdir(parents=True, exist_ok=True)
        (host_home / rel).write_text(text)
    env = host_env(host_home, host.env(url))
    env["PATH"] = f"{host.binary.parent}{os.pathsep}{env['PATH']}"
    for key in ("PLUGKIT_HOME", "PLUGKIT_PORT"):
        if key in os.environ:
            env[key] = os.environ[key]
    work = WorkRepo(repo, host_home, plugkit, env)
    for item, (verify, flags) in items.items():
        work.cli("prd", "add", SUBJECTS.get(item, item), "--id", item, "--verify", verify, *flags)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the plan")
    return work


def committing(host: Host, work: WorkRepo, item: str, before: tuple = ()) -> Script:
    """The honest worker: writes <item>.txt, commits it, says it is done."""
    wt = work.worktree(item)
    return Script([*before, host.write(str(wt / f"{item}.txt"), f"{item} done\n"),
                   host.shell(f"git add -A && git commit -qm '{item}: add {item}.txt'"),
                   Say(f"{item} is done and committed.")], prompt=prompt_line(item))


FOUR = {"w1": ("test -f w1.txt", ()), "w2": ("test -f w2.txt", ()),
        "w3": ("test -f w1.txt && test -f w2.txt && test -f w3.txt", ("--blocked-by", "w1", "--blocked-by", "w2")),
        "w4": ("test -f w4.txt", ("--risk", "critical"))}


def four_scripts(host: Host, work: WorkRepo) -> Scripts:
    """w3's worker first tries `rm -rf ..` (the policy denies it), then does the work."""
    return Scripts([committing(host, work, "w1"), committing(host, work, "w2"),
                    committing(host, work, "w3", before=(host.shell("rm -rf .."),)),
                    committing(host, work, "w4")])


