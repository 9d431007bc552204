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

from bench import Row, Sandbox, ms, pct  # noqa: E402
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
    from runner.core.gates.store import GateStore

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


CASES = {"gates_scale": lambda quick: case_gates(15 if quick else 60),
         "receipt_signing": lambda quick: case_receipt_signing(100 if quick else 500)}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
