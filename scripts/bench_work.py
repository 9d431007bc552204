"""`plugkit work` end to end: the 4-item .prd of tests/hosts (two independent items, one
depending on both, one critical, approved up front) worked by real Claude Code workers
against the scripted fake model, three at a time. Reported: the run's wall time, from
`plugkit work` to the last item landed, beside the sum of the workers' own times (what the
same items cost one after another, without plugkit's verify and landing). Then the same run
with a person's --no-sandbox and with --network loopback-model: the sandbox's cost, as ratios
(--quick runs the sandboxed one only). A missing host yields a FAIL row naming why.

`python scripts/bench_work.py [--quick]` runs just this row.
"""

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import PLUGKIT, Row, Sandbox  # noqa: E402
from tests.hosts.hosts import HOSTS  # noqa: E402
from tests.hosts.model_server import ModelServer  # noqa: E402
from tests.hosts.script import Scripts  # noqa: E402
from tests.hosts.work_run import FOUR, four_scripts, make_repo  # noqa: E402
from tests.support.person import at_terminal  # noqa: E402


def _s(x: float) -> str:
    return f"{x:.1f} s"


# The same run three ways: what the sandbox costs (against a person's --no-sandbox), and what
# the loopback-only network with its relay adds on top. Label suffix -> `plugkit work` flags.
MODES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("sandboxed", ()),
    ("no sandbox (--no-sandbox)", ("--no-sandbox",)),
    ("sandboxed, --network loopback-model", ("--network", "loopback-model")),
)


def _one_run(host, box: Sandbox, flags: tuple[str, ...]) -> tuple[float, dict]:
    """(wall seconds, the ended run) of the 4-item .prd worked three at a time, in a fresh repo."""
    with ModelServer(Scripts([])) as server:
        work = make_repo(Path(tempfile.mkdtemp(prefix="bench-work-", dir=box.dir)), host, [PLUGKIT],
                         server.url, FOUR)
        server.script = four_scripts(host, work)
        # The person's approval, typed at a terminal of its own (the person check is positive).
        approved = at_terminal([*work.plugkit, "approve", "w4"], work.env, cwd=work.repo)
        assert approved.returncode == 0, approved.stdout
        began = time.monotonic()
        work.cli("work", "--worker", "claude-code", "--afk", "--parallel", "3", *flags)
        run = work.until(lambda r: r["ended_at"] is not None, timeout=300)
        return time.monotonic() - began, run


def case_work(quick: bool) -> list[Row]:
    host = HOSTS["claude"]
    label = "work: 4-item .prd, 3 Claude Code workers at once, wall time"
    why = host.missing()
    if why:
        return [Row(label, "-", "-", "-", "host installed", False), Row(f"  ({why})", "-", "-", "-", "-", False)]
    box = Sandbox()
    saved = {k: os.environ.get(k) for k in ("PLUGKIT_HOME", "PLUGKIT_PORT")}
    os.environ.update({k: box.env[k] for k in saved})  # make_repo hands these to the workers
    rows: list[Row] = []
    try:
        walls: dict[str, float] = {}
        for mode, flags in MODES[:1] if quick else MODES:
            wall, run = _one_run(host, box, flags)
            if run["state"] != "done":
                return rows + [Row(f"{label}, {mode}", "-", "-", "-", "run done", False),
                               Row(f"  ({run['state']}: {run['halt']})", "-", "-", "-", "-", False)]
            walls[mode] = wall
            if not rows:
                workers = sum(i["worker_s"] for i in run["items"])
                rows.append(Row(f"{label}, {mode}", _s(wall), f"workers' own time, summed {_s(workers)}",
                                f"{wall / workers:.2f}x", "< 1.00x (parallel pays)", wall < workers))
        bare = walls.get(MODES[1][0])
        for mode, _flags in MODES:
            if bare is not None and mode != MODES[1][0]:
                ratio = walls[mode] / bare
                rows.append(Row(f"work: the same run, {mode}", _s(walls[mode]), f"--no-sandbox {_s(bare)}",
                                f"{ratio:.2f}x", "< 1.25x (the sandbox costs little)", ratio < 1.25))
        return rows
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        box.close()


CASES = {"work_4_items": case_work}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
