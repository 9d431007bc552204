"""Worktree setup time (issue 48 #1, #2): one `plugkit work` item with the scripted command worker
(tests/support/work_agent.py), from its attempt's start to the worker's first output, in a repo
whose worktree is made ready (a .env included, a node_modules of many small files shared by copy,
a block of 10 ports written into .env, `work_setup = "true"`) beside the same repo without.

`python scripts/bench_work_ready.py [--quick]` runs just this row.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import PLUGKIT, PY, ROOT, Row, Sandbox, sized  # noqa: E402
from tests.support.agent import git, make_repo  # noqa: E402

AGENT = str(ROOT / "tests" / "support" / "work_agent.py")
READY = ('work_include = [".env"]\nwork_share = ["node_modules"]\nwork_ports = 10\nwork_ports_env = true\n'
         'work_setup = "true"\n')


def _repo(where: Path, settings: str, files: int) -> tuple[Path, dict]:
    plan = where / "plan.json"
    plan.write_text(json.dumps({"w1": [["say", "up"], ["write", "w1.txt", "x"], ["commit", "w1"]]}))
    env = {"PLUGKIT_E2E_WORK_PLAN": str(plan), "PLUGKIT_E2E_WORK_DIR": str(where)}
    granted = f"work_credentials = {json.dumps(sorted(env))}\n"  # the scripted worker's plan
    repo = make_repo(where / "repo", 'gates = "advisory"\n' + settings + granted)
    (repo / ".gitignore").write_text(".env\nnode_modules/\n")
    git(repo, "add", ".gitignore")
    git(repo, "commit", "-qm", "ignores")
    (repo / ".env").write_text("A=1\n")
    for i in range(files):
        d = repo / "node_modules" / f"pkg{i // 50}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.js").write_text("module.exports = 1\n" * 20)
    return repo, env


def _spawn_to_boot(box: Sandbox, repo: Path, env: dict) -> float:
    run_env = {**box.env, **env}

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([PLUGKIT, *args], env=run_env, cwd=repo, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 3), (args, done.stdout, done.stderr)
        return done

    cli("prd", "add", "make w1", "--id", "w1", "--verify", "test -f w1.txt")
    cli("work", "--run", f"{PY} {AGENT}")
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        run = json.loads(cli("work", "status", "--json", "--wait", "2").stdout)["run"]
        if run["ended_at"] is not None:
            it = run["items"][0]
            assert it["state"] == "completed", it
            return it["phases"]["boot"] - it["phases"]["spawn"]
    raise AssertionError("the run did not end in 300 s")


def case_ready(quick) -> list[Row]:
    files = sized(quick, 2000, 500, 20)
    box = Sandbox()
    try:
        times = {}
        for mode, settings in (("ready", READY), ("plain", "")):
            where = Path(tempfile.mkdtemp(prefix=f"bench-ready-{mode}-", dir=box.dir))
            repo, env = _repo(where, settings, files)
            times[mode] = _spawn_to_boot(box, repo, env)  # one runner for both: its start is not the row
        added = times["ready"] - times["plain"]
        return [Row(f"work: worktree made ready (.env, {files}-file node_modules copied, 10 ports, setup), "
                    "attempt start to the worker's first output", f"{times['ready']:.2f} s",
                    f"plain worktree {times['plain']:.2f} s", f"{added:+.2f} s", "< +1.50 s", added < 1.5)]
    except (AssertionError, OSError, subprocess.SubprocessError) as exc:
        return [Row("work: worktree made ready", "-", "-", "-", "run done", False),
                Row(f"  ({str(exc)[:200]})", "-", "-", "-", "-", False)]
    finally:
        box.close()


CASES = {"work_worktree_ready": case_ready}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
