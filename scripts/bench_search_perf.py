"""Code search performance against the real runner, each beside its baseline in the same run:
the standard library indexed in the background (wall time, the runner's CPU time and RSS
growth), warm search.query p50/p99 against `grep -rl` on the same corpus, a saved file
searchable at the next query, and the `plugkit search` CLI round trip against `exec:status`.

CASES plugs into scripts/bench.py (add "bench_search_perf" to EXTRA_MODULES); quality is
scripts/bench_search.py."""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psutil  # noqa: E402

from bench import PLUGKIT, Row, Sandbox, ms, pct, timed, sized  # noqa: E402
from bench_search import stdlib_root  # noqa: E402

QUERIES = ("parse_args", "urlparse", "ThreadPoolExecutor", "why does json decode fail", "lru_cache",
           "walk a directory tree", "SequenceMatcher", "TimeoutExpired", "heappush", "getaddrinfo")
# Plain-words questions (issue 46: 66-132 ms each): their words' chunks are kept between queries, so
# each is timed the first time any of its words is asked and again once they are known.
PROSE = ("how is a file read in chunks", "parse the arguments of a command line", "convert a date string into a datetime",
         "wait for a child process to exit with a timeout", "compress data with zlib and write it to a file",
         "send an email message over smtp with a login", "quote a string for safe use in a shell command",
         "find the longest common subsequence of two sequences", "encode bytes as base64 text",
         "schedule a callback after a delay in the event loop", "lock a file so two processes do not write at once")


def _runner(box: Sandbox) -> psutil.Process:
    import json

    return psutil.Process(json.loads(Path(box.env["PLUGKIT_HOME"], "port").read_text())["pid"])


def _rpc(box: Sandbox):
    from client.wire.rpc import Client, Connection
    import json

    info = json.loads(Path(box.env["PLUGKIT_HOME"], "port").read_text())
    token = Path(box.env["PLUGKIT_HOME"], "token").read_text().strip()
    return Client(Connection(info["port"], timeout=120), token=token)


def case_perf(n: int, part: str = "") -> list[Row]:
    """`part`: one package of the stdlib instead of all of it (--smoke)."""
    corpus = os.path.join(stdlib_root(), part) if part else stdlib_root()
    box = Sandbox()
    # The BM25 index, whose targets these are: where plugkit[semantic] is installed the runner
    # would also embed every chunk in the background (its cost is bench_search.py's to report).
    box.env["PLUGKIT_SEARCH_SEMANTIC"] = "0"
    rows = []
    try:
        box.cli("runner", "start")
        proc = _runner(box)
        client = _rpc(box)
        rss0, cpu0 = proc.memory_info().rss, sum(proc.cpu_times()[:2])
        began = time.perf_counter()
        params = {"session_id": "bench", "cwd": corpus, "query": "parse_args", "limit": 10}
        while client.call("search.query", params).get("indexing"):
            time.sleep(0.2)
        build = time.perf_counter() - began
        cpu = sum(proc.cpu_times()[:2]) - cpu0
        grow = (proc.memory_info().rss - rss0) / (1 << 20)
        rows.append(Row(f"search: index {f'stdlib/{part}' if part else 'stdlib (668 .py)'}, wall / runner CPU", f"{build:.1f} s / {cpu:.1f} s", "-", "-",
                        "CPU < 60 s", cpu < 60))
        rows.append(Row("search: runner RSS growth after the stdlib index", f"{grow:.0f} MiB", "-", "-", "< 150 MiB",
                        grow < 150))
        lat = []
        for i in range(n):
            t = time.perf_counter()
            client.call("search.query", {**params, "query": QUERIES[i % len(QUERIES)]})
            lat.append(time.perf_counter() - t)
        greps = [timed(["grep", "-rl", "-E", QUERIES[i % len(QUERIES)].split()[0], corpus]) for i in range(min(n, 20))]
        p50, p99, g50 = pct(lat, 50), pct(lat, 99), pct(greps, 50)
        rows.append(Row("search: warm search.query p50 (stdlib)", ms(p50), f"grep -rl {ms(g50)}", f"{p50 / g50:.2f}x",
                        "<= 30 ms", p50 <= 0.030))
        rows.append(Row("search: warm search.query p99 (stdlib)", ms(p99), "-", "-", "<= 100 ms", p99 <= 0.100))
        first, known = [], []
        for q in PROSE:
            for into in (first, known, known):
                t = time.perf_counter()
                client.call("search.query", {**params, "query": q})
                into.append(time.perf_counter() - t)
        f50, k50 = pct(first, 50), pct(known, 50)
        rows.append(Row("search: plain-words question p50, first time / words known", f"{ms(f50)} / {ms(k50)}",
                        "-", "-", "< 50 ms", max(f50, k50) < 0.050))
        with tempfile.TemporaryDirectory() as ws:
            subprocess.run(["git", "init", "-q", ws], check=True)
            Path(ws, "a.py").write_text("def a():\n    pass\n")
            client.call("search.query", {**params, "cwd": ws, "query": "a"})
            Path(ws, "b.py").write_text("def freshly_saved_symbol():\n    pass\n")
            t = time.perf_counter()
            found = client.call("search.query", {**params, "cwd": ws, "query": "freshly_saved_symbol"})["definitions"]
            fresh = time.perf_counter() - t
        rows.append(Row("search: a saved file found by the next query", ms(fresh) if found else "not found", "-", "-",
                        "<= 1 s", bool(found) and fresh <= 1.0))
        client.close()
        env = box.env
        subprocess.run([PLUGKIT, "exec:bash", "true"], env=env, capture_output=True, cwd=corpus)
        ours = [timed([PLUGKIT, "search", "parse_args", "--cwd", corpus], env) for _ in range(min(n, 30))]
        base = [timed([PLUGKIT, "exec:status", "task_1", "--cwd", corpus], env) for _ in range(min(n, 30))]
        o50, b50 = pct(ours, 50), pct(base, 50)
        rows.append(Row("search: `plugkit search` CLI round trip p50", ms(o50), f"exec:status {ms(b50)}",
                        f"{o50 / b50:.2f}x", "<= 1.5x", o50 <= 1.5 * b50))
    finally:
        box.close()
    return rows


CASES = {"search_perf": lambda quick: case_perf(sized(quick, 200, 30), sized(quick, "", "", "json"))}

if __name__ == "__main__":
    for r in case_perf(int(sys.argv[1]) if len(sys.argv) > 1 else 100):
        print(f"{r.case:<55} {r.ours:<18} {r.baseline:<22} {r.ratio:<7} {r.target:<12} {'pass' if r.ok else 'FAIL'}")
