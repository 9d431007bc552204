"""exec:browser benchmarks, each beside a bare in-process pyppeteer baseline from the same run.

CASES follows scripts/bench.py: name -> fn(quick) -> list[Row]. Run alone with
`scripts/bench browser_cold browser_warm`.
"""

import asyncio
import sys
import shutil
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import Row, Sandbox, ms, pct, sized  # noqa: E402
from plugkit.chromium import find_chromium  # noqa: E402

CHROMIUM = find_chromium()  # the rule the runner uses
# pyppeteer 2.0 passes loop= to websockets 10 on connect; not ours to fix, not worth a line per run.
warnings.filterwarnings("ignore", "remove loop argument", DeprecationWarning)


def _client(box: Sandbox):
    from client.wire.rpc import Client, Connection

    token = Path(box.env["PLUGKIT_HOME"], "token").read_text().strip()
    return Client(Connection(int(box.env["PLUGKIT_PORT"]), timeout=120), token=token)


def _exec(client, cwd: str, code: str) -> dict:
    res = client.call("task.exec", {"session_id": "bench", "cwd": cwd, "lang": "browser", "code": code,
                                    "wait_ms": 60_000, "max_bytes": 1024}, timeout=120)
    if res["task"]["state"] != "completed":
        raise SystemExit(f"browser task did not complete: {res['task']} {res['output']}")
    return res


def _started_box() -> Sandbox:
    box = Sandbox()
    result = box.cli("runner", "start")
    if result.returncode != 0:
        box.close()
        raise SystemExit(f"runner did not start: {result.stderr}")
    return box


async def _bare_pyppeteer(warm_runs: int) -> tuple[float, list[float]]:
    """pyppeteer alone: launch + newPage + evaluate (cold), then page.evaluate round trips (warm)."""
    import pyppeteer

    profile = tempfile.mkdtemp(prefix="bench-pyppeteer-")
    began = time.perf_counter()
    browser = await pyppeteer.launch(executablePath=CHROMIUM, args=["--no-sandbox", f"--user-data-dir={profile}"],
                                     handleSIGINT=False, handleSIGTERM=False, handleSIGHUP=False, autoClose=False)
    try:
        page = await browser.newPage()
        await page.evaluate("() => 1+1")
        cold = time.perf_counter() - began
        for _ in range(5):
            await page.evaluate("() => 1+1")
        warm = []
        for _ in range(warm_runs):
            t = time.perf_counter()
            await page.evaluate("() => 1+1")
            warm.append(time.perf_counter() - t)
        return cold, warm
    finally:
        await browser.close()
        # pyppeteer waits for Chromium to exit only with a profile of its own: ours is removed
        # once the process is gone, else Chromium writes its session files back after the rmtree.
        if browser.process is not None:
            await asyncio.to_thread(browser.process.wait, 10)
        shutil.rmtree(profile, ignore_errors=True)


def case_cold(quick: bool) -> list[Row]:
    runs = sized(quick, 10, 3)
    ours, base = [], []
    for _ in range(runs):
        box = _started_box()
        try:
            client = _client(box)
            began = time.perf_counter()
            _exec(client, box.dir, "return 1")
            ours.append(time.perf_counter() - began)
            client.close()
        finally:
            box.close()
        base.append(asyncio.run(_bare_pyppeteer(0))[0])
    o50, b50 = pct(ours, 50), pct(base, 50)
    return [
        Row(f"cold first exec:browser p50 ({runs} runs)", ms(o50), f"bare pyppeteer.launch+newPage+evaluate {ms(b50)}",
            f"{o50 / b50:.2f}x", "<= 1.5 s", o50 <= 1.5),
        Row("cold first exec:browser max", ms(max(ours)), f"bare max {ms(max(base))}", "-", "(reported)", True),
    ]


def case_warm(quick: bool) -> list[Row]:
    runs = sized(quick, 100, 30)
    box = _started_box()
    try:
        client = _client(box)
        for _ in range(5):
            _exec(client, box.dir, "return 1+1")
        ours = []
        for _ in range(runs):
            began = time.perf_counter()
            _exec(client, box.dir, "return 1+1")
            ours.append(time.perf_counter() - began)
        client.close()
    finally:
        box.close()
    _, base = asyncio.run(_bare_pyppeteer(runs))
    o50, b50, o99, b99 = pct(ours, 50), pct(base, 50), pct(ours, 99), pct(base, 99)
    return [
        Row(f"warm exec:browser `return 1+1` p50 ({runs} runs)", ms(o50), f"bare page.evaluate {ms(b50)}",
            f"+{ms(o50 - b50)}", "<= +10 ms over baseline", o50 - b50 <= 0.010),
        Row("warm exec:browser `return 1+1` p99", ms(o99), f"bare page.evaluate p99 {ms(b99)}",
            f"+{ms(o99 - b99)}", "(reported)", True),
    ]


CASES = {
    "browser_cold": case_cold,
    "browser_warm": case_warm,
}
