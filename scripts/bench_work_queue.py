"""Landing-queue throughput (issue 48 #4): N items of the scripted command worker
(tests/support/work_agent.py), each a short piece of work and a commit of its own file, run with
3 workers (each branch after the first is rebased onto the latest tip and checked again in the
queue) beside the same items with --parallel 1 (each starts from the tip the last one left: no
rebase); items landed per minute, run start to run end.

`python scripts/bench_work_queue.py [--quick]` runs just this row.
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
from tests.support.agent import make_repo  # noqa: E402

AGENT = str(ROOT / "tests" / "support" / "work_agent.py")


def _landed_per_min(box: Sandbox, where: Path, items: int, work_s: float, parallel: int) -> tuple[float, int]:
    """(items landed per minute, branches rebased in the queue) for one run of `items` items."""
    plan = where / "plan.json"
    plan.write_text(json.dumps({f"q{i}": [["sleep", work_s], ["write", f"q{i}.txt", "x\n"], ["commit", f"q{i}"]]
                                for i in range(items)}))
    env = {"PLUGKIT_E2E_WORK_PLAN": str(plan), "PLUGKIT_E2E_WORK_DIR": str(where)}
    repo = make_repo(where / "repo", 'gates = "advisory"\n' + f"work_credentials = {json.dumps(sorted(env))}\n")
    run_env = {**box.env, **env}

    def cli(*args: str) -> subprocess.CompletedProcess:
        done = subprocess.run([PLUGKIT, *args], env=run_env, cwd=repo, capture_output=True, text=True, timeout=300)
        assert done.returncode in (0, 3), (args, done.stdout[-500:], done.stderr[-500:])
        return done

    for i in range(items):
        cli("prd", "add", f"make q{i}", "--id", f"q{i}", "--verify", f"test -f q{i}.txt")
    cli("work", "--run", f"{PY} {AGENT}", "--parallel", str(parallel))
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        run = json.loads(cli("work", "status", "--json", "--wait", "2").stdout)["run"]
        if run["ended_at"] is not None:
            landed = [e for e in run["queue"] if e["state"] == "landed"]
            assert len(landed) == items, [(e["item"], e["state"], e["note"]) for e in run["queue"]]
            rebased = sum(1 for e in landed if e["landed"] != e["sha"])
            return items / ((run["ended_at"] - run["started_at"]) / 60), rebased
    raise AssertionError("the run did not end in 600 s")


def case_queue(quick) -> list[Row]:
    items, work_s = sized(quick, 9, 6, 2), sized(quick, 3.0, 2.0, 0.2)
    box = Sandbox()
    try:
        rate = {}
        for parallel in (3, 1):  # one runner for both: its start is not the row
            where = Path(tempfile.mkdtemp(prefix=f"bench-queue-{parallel}-", dir=box.dir))
            rate[parallel] = _landed_per_min(box, where, items, work_s, parallel)
        (ours, rebased), (base, _) = rate[3], rate[1]
        gain = ours / base
        return [Row(f"work: landing queue, {items} items ({work_s:g} s of work each, own file), 3 workers, "
                    f"items landed per minute ({rebased} rebased and checked again in the queue)",
                    f"{ours:.1f}/min", f"--parallel 1 {base:.1f}/min", f"{gain:.2f}x", ">= 1.50x", gain >= 1.5)]
    except (AssertionError, OSError, subprocess.SubprocessError) as exc:
        return [Row("work: landing queue throughput", "-", "-", "-", "run done", False),
                Row(f"  ({str(exc)[:200]})", "-", "-", "-", "-", False)]
    finally:
        box.close()


CASES = {"work_queue": case_queue}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
