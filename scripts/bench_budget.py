"""The OTLP receiver's cost on task.exec (issue 47 #1): task.exec `true` round trips on a runner
with no worker, then while a `plugkit work` worker (under --budget-tokens) exports OTLP/JSON
metrics back to back, each export parsed and counted against the cap. A real host exports every
few seconds; back to back is the worst case one worker can make.

`python scripts/bench_budget.py [--quick]` runs just this row.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PLUGKIT, Row, Sandbox, ms, pct, sized  # noqa: E402
from bench_runner import _client, _exec  # noqa: E402

# The worker (--no-sandbox: the sandbox is not what is measured): Claude Code's export shape
# (10 data points), posted back to back for up to 120 s.
EXPORTER = r"""
import json, os, time, urllib.request
points = [{"attributes": [{"key": "model", "value": {"stringValue": "bench-model"}},
                          {"key": "type", "value": {"stringValue": "input"}}],
           "startTimeUnixNano": "1", "timeUnixNano": "2", "asDouble": 1} for _ in range(10)]
metric = {"name": "claude_code.token.usage", "sum": {"aggregationTemporality": 1, "dataPoints": points}}
body = json.dumps({"resourceMetrics": [{"resource": {"attributes": []},
                                        "scopeMetrics": [{"scope": {"name": "b"}, "metrics": [metric]}]}]}).encode()
headers = dict(h.split("=", 1) for h in os.environ["OTEL_EXPORTER_OTLP_HEADERS"].split(","))
url = os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/metrics"
end = time.monotonic() + 120
while time.monotonic() < end:
    urllib.request.urlopen(urllib.request.Request(url, body, {"Content-Type": "application/json", **headers})).read()
"""


def _repo(base: str, box: Sandbox) -> str:
    repo = os.path.join(base, "repo")
    os.makedirs(repo)
    for argv in (["init", "-q", "-b", "main"], ["config", "user.email", "b@example.invalid"],
                 ["config", "user.name", "b"]):
        subprocess.run(["git", "-C", repo, *argv], check=True)
    Path(repo, "README").write_text("bench\n")
    subprocess.run([PLUGKIT, "prd", "add", "export OTLP", "--id", "w1", "--verify", "true"], cwd=repo,
                   env=box.env, check=True, capture_output=True)
    subprocess.run(["git", "-C", repo, "add", "-A"], check=True)
    subprocess.run(["git", "-C", repo, "commit", "-qm", "plan"], check=True)
    return repo


def _exec_samples(client, n: int, cwd: str) -> list[float]:
    out = []
    for _ in range(n):
        began = time.perf_counter()
        _exec(client, "bench", "true", cwd)
        out.append(time.perf_counter() - began)
    return out


def _tokens(box: Sandbox, repo: str) -> int:
    done = subprocess.run([PLUGKIT, "work", "status", "--json"], cwd=repo, env=box.env, capture_output=True, text=True)
    return int(json.loads(done.stdout)["run"]["spend"]["tokens"])


def case_otlp_receiver(n: int) -> list[Row]:
    box = Sandbox()
    try:
        box.cli("runner", "start")
        base = tempfile.mkdtemp(prefix="bench-budget-", dir=box.dir)
        repo, agent = _repo(base, box), os.path.join(base, "exporter.py")
        Path(agent).write_text(EXPORTER)
        client = _client(box)
        _exec_samples(client, 5, base)
        quiet = _exec_samples(client, n, base)
        started = subprocess.run([PLUGKIT, "work", "--no-sandbox", "--run", f"{sys.executable} {agent}",
                                  "--budget-tokens", str(10 ** 12)], cwd=repo, env=box.env, capture_output=True,
                                 text=True)
        if started.returncode != 0:
            return [Row("task.exec p50 while a worker exports OTLP", "FAIL", started.stderr.strip()[:80], "-", "-",
                        False)]
        while _tokens(box, repo) == 0:  # its first export counted: the load is on
            time.sleep(0.05)
        began, before = time.monotonic(), _tokens(box, repo)
        loaded = _exec_samples(client, n, base)
        rate = (_tokens(box, repo) - before) / 10 / (time.monotonic() - began)
        subprocess.run([PLUGKIT, "work", "stop"], cwd=repo, env=box.env, capture_output=True)
        client.close()
    finally:
        box.close()
    q50, l50 = pct(quiet, 50), pct(loaded, 50)
    return [Row(f"task.exec `true` p50, a worker exporting OTLP back to back ({rate:.0f} exports/s)", ms(l50),
                f"no exports {ms(q50)}", f"{l50 / q50:.2f}x", "(reported)", True),
            Row("task.exec `true` p99, the same", ms(pct(loaded, 99)), f"no exports {ms(pct(quiet, 99))}",
                f"{pct(loaded, 99) / pct(quiet, 99):.2f}x", "(reported)", True)]


CASES = {"otlp_receiver": lambda q: case_otlp_receiver(sized(q, 300, 30, 3))}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
