"""Gate operations against the size of `.prd`: `prd.add`, `prd.update`, `mutable.add` +
`mutable.resolve` and the PreToolUse allow path (`hook.pre_tool`), each timed as an RPC
round trip against a warm runner in a workspace of 20 items and in one of 1000 items, in
the same run (samples interleaved, so load drift hits both sizes alike). A gate operation
should cost what it changes: at 1000 items add/update stay within 2x of the 20-item
figure, and the mutable and hook paths stay flat (within 1 ms).

The `.prd` is written before the runner first sees the workspace (imported once, as a
person's file would be), so building it costs nothing here.
`python scripts/bench_gates.py [--quick]` runs just these rows.
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import Row, Sandbox, ms, pct, sized  # noqa: E402
from bench_runner import _client, _exec  # noqa: E402

SIZES = (20, 1000)
SESSION = "bench-gates"


def _workspace(parent: str, n: int) -> str:
    work = tempfile.mkdtemp(prefix=f"gates-{n}-", dir=parent)
    items = [{"id": f"w{i}", "subject": f"item {i} of the bench", "acceptance": ["it works"],
              "blocked_by": [f"w{i - 1}"] if i % 3 == 0 else []} for i in range(1, n + 1)]
    Path(work, ".prd").write_text(json.dumps(items, indent=2) + "\n")
    return work


def _rt(client, method: str, params: dict) -> float:
    began = time.perf_counter()
    client.call(method, params, timeout=120)
    return time.perf_counter() - began


def _ops(client, cwd: str, k: int, task_id: int) -> dict[str, float]:
    base = {"session_id": SESSION, "cwd": cwd}
    return {
        "prd.add": _rt(client, "prd.add", dict(base, subject=f"added {k}")),
        "prd.update": _rt(client, "prd.update", dict(base, id="w2", subject=f"renamed {k}")),
        "mutable.add+resolve": _rt(client, "mutable.add", dict(base, name=f"m{k}", expected="42"))
        + _rt(client, "mutable.resolve", dict(base, name=f"m{k}", task_id=task_id)),
        "hook.pre_tool (allow)": _rt(client, "hook.pre_tool", dict(
            base, tool_name="Bash", tool_input={"command": "ls -la"}, platform="claude-code")),
    }


# op -> (the 1000-item target as text, check(small, large) -> ok)
TARGETS = {
    "prd.add": ("<= 2x", lambda s, big: big <= 2 * s),
    "prd.update": ("<= 2x", lambda s, big: big <= 2 * s),
    "mutable.add+resolve": ("<= +1 ms", lambda s, big: big - s <= 0.001),
    "hook.pre_tool (allow)": ("<= +1 ms", lambda s, big: big - s <= 0.001),
}


def case_gates(n: int) -> list[Row]:
    box = Sandbox()
    try:
        if box.cli("runner", "start").returncode != 0:
            raise SystemExit("runner did not start")
        client = _client(box)
        spaces = {size: _workspace(box.dir, size) for size in SIZES}
        tasks = {size: _exec(client, SESSION, "echo 42", cwd)["task"]["task_id"] for size, cwd in spaces.items()}
        samples: dict[int, dict[str, list[float]]] = {size: {op: [] for op in TARGETS} for size in SIZES}
        for k in range(n + 3):
            for size in SIZES:  # interleaved: both sizes see the same load
                for op, took in _ops(client, spaces[size], k, tasks[size]).items():
                    if k >= 3:  # the first rounds build validators and import the .prd
                        samples[size][op].append(took)
    finally:
        box.close()
    rows = []
    small, big = SIZES
    for op, (target, check) in TARGETS.items():
        s, b = pct(samples[small][op], 50), pct(samples[big][op], 50)
        rows.append(Row(f"gates: {op} p50 at {big} items", ms(b), f"at {small} items {ms(s)}",
                        f"{b / s:.2f}x (+{(b - s) * 1000:.1f} ms)", target, check(s, b)))
    return rows


def case_receipt_signing(n: int) -> list[Row]:
    """What signing adds to each receipt (issue 44): the Ed25519 signature alone, and a whole
    receipt written (blob, JSON, seal, ledger row and its chain record) with and without it,
    interleaved. In process: the runner writes receipts the same way, in a worker thread."""
    from plugkit.lifecycle import evidence, signing
    from plugkit.lifecycle.workspace import Workspace
    from runner.core.gates.keys import load_key
    from runner.system.stores.gates import GateStore

    home, root = tempfile.mkdtemp(prefix="bench-sign-home-"), tempfile.mkdtemp(prefix="bench-sign-ws-")
    key, store = signing.load_private(home), GateStore(home)
    plain = Workspace(os.path.realpath(root), seal=load_key(home), ledger=store)
    signed = Workspace(plain.root, seal=plain.seal, ledger=store, signer=key)
    task = evidence.TaskWitness(task_id=1, session_id="s", lang="bash", code_sha256=None, state="completed",
                                exit_code=0, truncated=False)
    run = evidence.RunFacts(command="pytest -q", lang="bash", exit_code=0, duration_s=1.0)
    times: dict[str, list[float]] = {"sign": [], "plain": [], "signed": []}
    try:
        for k in range(n + 20):
            out = f"{k} passed\n".encode() * 50
            t0 = time.perf_counter()
            signing.sign(key, out)
            t1 = time.perf_counter()
            with plain.locked():
                evidence.record_output(plain, "verify", out, task, "verify", "", float(k), run=run)
            t2 = time.perf_counter()
            with signed.locked():
                evidence.record_output(signed, "verify", out + b"s", task, "verify", "", float(k), run=run)
            t3 = time.perf_counter()
            if k >= 20:
                times["sign"].append(t1 - t0)
                times["plain"].append(t2 - t1)
                times["signed"].append(t3 - t2)
    finally:
        store.close()
    sign, plain_p, signed_p = (pct(times[x], 50) for x in ("sign", "plain", "signed"))
    return [Row("receipts: Ed25519 signature per receipt p50", f"{sign * 1e6:.0f} us",
                f"receipt written unsigned {ms(plain_p)}",
                f"signed {ms(signed_p)} (+{(signed_p - plain_p) * 1e6:.0f} us)",
                "<= 1 ms", sign <= 0.001)]


def case_check_comparison(n: int, files: int = 50, warm: int = 1) -> list[Row]:
    """The base-vs-branch comparison of a pytest check (issue 44 #3) on a suite of `files` x 10 tests: the
    runner configuration diffed, then the check collected at both commits in fresh checkouts
    side by side (runner/core/gates/collect.py, as a worker's branch is judged, minus the task
    manager), against one plain run of the same suite: the check the runner runs anyway. The first
    `warm` rounds warm the page cache and pytest's imports, untimed (none in --smoke: its numbers
    mean nothing, and a round is four pytest runs)."""
    import asyncio
    import subprocess as sp

    from runner.core.gates import collect, weaken

    root = tempfile.mkdtemp(prefix="bench-weaken-")

    def git(*args: str) -> str:
        return sp.run(["git", *args], cwd=root, check=True, capture_output=True, text=True).stdout.strip()

    git("init", "-q", "-b", "main")
    for i in range(files):
        Path(root, "tests").mkdir(exist_ok=True)
        Path(root, "tests", f"test_m{i}.py").write_text("".join(f"def test_{j}():\n    assert {j} == {j}\n\n"
                                                                 for j in range(10)))
    git("add", "-A")
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base")
    base = git("rev-parse", "HEAD")
    Path(root, "tests", "test_new.py").write_text("def test_new():\n    assert True\n")
    git("add", "-A")
    git("-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "branch")
    branch = git("rev-parse", "HEAD")
    check = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]

    async def collected(at: str, sha: str) -> weaken.Collected:
        where = os.path.join(root, ".plugkit", at)
        sp.run(["git", "worktree", "add", "-q", "--detach", where, sha], cwd=root, check=True)
        try:
            out = collect.plant(where)
            proc = await asyncio.create_subprocess_exec(*check, cwd=where, env=collect.collect_env(os.environ, out),
                                                        stdout=sp.DEVNULL, stderr=sp.DEVNULL)
            await proc.wait()
            return collect.read(out)
        finally:
            sp.run(["git", "worktree", "remove", "--force", where], cwd=root, check=True)

    async def compare() -> list[str]:
        changes, _which = await weaken.config_changes(root, base, branch, " ".join(check))
        at_base, at_branch = await asyncio.gather(collected("base", base), collected("branch", branch))
        assert len(at_base.tests) == 10 * files and len(at_branch.tests) == 10 * files + 1, (len(at_base.tests),
                                                                               len(at_branch.tests))
        return changes + weaken.weakened(at_base, at_branch)

    times: dict[str, list[float]] = {"compare": [], "run": []}
    for k in range(warm + n):
        t0 = time.perf_counter()
        assert asyncio.run(compare()) == []  # an added test is no weakening
        t1 = time.perf_counter()
        sp.run(check, cwd=root, stdout=sp.DEVNULL, stderr=sp.DEVNULL, check=True)
        t2 = time.perf_counter()
        if k >= warm:
            times["compare"].append(t1 - t0)
            times["run"].append(t2 - t1)
    cmp_p, run_p = pct(times["compare"], 50), pct(times["run"], 50)
    return [Row(f"check comparison: base vs branch, {10 * files}-test pytest suite p50", ms(cmp_p),
                f"one run of the suite {ms(run_p)}", f"{cmp_p / run_p:.2f}x", "<= 2x the run", cmp_p <= 2 * run_p)]


CASES = {"gates_scale": lambda quick: case_gates(sized(quick, 60, 15)),
         "receipt_signing": lambda quick: case_receipt_signing(sized(quick, 500, 100)),
         "check_comparison": lambda quick: case_check_comparison(sized(quick, 10, 3), sized(quick, 50, 50, 5),
                                                                 sized(quick, 1, 1, 0))}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
