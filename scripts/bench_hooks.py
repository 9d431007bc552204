"""Platform hook benchmark: `plugkit hook PreToolUse --platform claude-code` on a plain,
non-exec Bash call (the allow path every tool call of an agent pays), against a warm
runner, sampled interleaved with `python -S -c pass` in the same run: the command
`plugkit install` writes into the hosts' settings (what they run), and beside it the same
hook through the `plugkit` console script (the form installs wrote before, site included).

CASES plugs into scripts/bench.py's table; `scripts/bench hook_pre_tool` runs it alone.
"""

import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench import PLUGKIT, PY, ROOT, Row, Sandbox, ms, pct, timed, sized  # noqa: E402

TARGET_X = 4.0  # hook p50 over `python -S -c pass` p50 (the floor for a Python client is ~3.2x)


def _precompile() -> None:
    # As in bench_cli: without .pyc files (PYTHONDONTWRITEBYTECODE) we would time the compiler.
    subprocess.run([PY, "-m", "compileall", "-q", str(ROOT / "client"), str(ROOT / "plugkit")],
                   stdout=subprocess.DEVNULL, check=False)


def _hook(argv: list[str], env: dict, stdin: bytes) -> tuple[float, subprocess.CompletedProcess]:
    began = time.perf_counter()
    result = subprocess.run([*argv, "hook", "PreToolUse", "--platform", "claude-code"], input=stdin, env=env,
                            capture_output=True, check=False)
    return time.perf_counter() - began, result


def _installed(env: dict, work: str) -> list[str]:
    """The hook command `plugkit install` writes, without its `hook <Event> ...` words."""
    shown = subprocess.run([PLUGKIT, "install", "--platform", "claude-code", "--print"], cwd=work, env=env,
                           capture_output=True, text=True, check=True).stdout
    settings = json.loads(shown.split("\n", 1)[1])
    words = shlex.split(settings["hooks"]["PreToolUse"][0]["hooks"][0]["command"])
    return words[:words.index("hook")]


def case_pre_tool(n: int) -> list[Row]:
    _precompile()
    box = Sandbox()
    work = tempfile.mkdtemp(prefix="plugkit-bench-work-")
    stdin = json.dumps({"session_id": "bench", "cwd": work, "hook_event_name": "PreToolUse", "tool_name": "Bash",
                        "tool_input": {"command": "ls -la", "description": "List"}}).encode()
    ours, script, py = [], [], []
    try:
        if box.cli("runner", "start").returncode != 0:
            raise SystemExit("runner did not start")
        installed = _installed(box.env, work)
        for _ in range(5):  # warm: the runner's first gate check builds its validators
            _hook(installed, box.env, stdin)
        for _ in range(n):
            for argv, series in ((installed, ours), ([PLUGKIT], script)):
                elapsed, result = _hook(argv, box.env, stdin)
                if result.returncode != 0 or result.stdout or b"fail-open" in result.stderr:
                    raise SystemExit(f"the hook did not take the allow path: {result.stdout!r} {result.stderr!r}")
                series.append(elapsed)
            py.append(timed([PY, "-S", "-c", "pass"]))
    finally:
        box.close()
        os.rmdir(work)
    o50, s50, p50 = pct(ours, 50), pct(script, 50), pct(py, 50)
    return [
        Row("warm `plugkit hook PreToolUse` (allow) p50", ms(o50), f"python -S -c pass {ms(p50)}",
            f"{o50 / p50:.2f}x", f"<= {TARGET_X:g}x", o50 / p50 <= TARGET_X),
        Row("warm `plugkit hook PreToolUse` (allow) p99", ms(pct(ours, 99)),
            f"python -S -c pass p99 {ms(pct(py, 99))}", f"{pct(ours, 99) / pct(py, 99):.2f}x", "(reported)", True),
        Row("  the same through the `plugkit` console script p50", ms(s50), f"python -S -c pass {ms(p50)}",
            f"{s50 / p50:.2f}x", "(reported)", True),
    ]


CASES = {
    "hook_pre_tool": lambda quick: case_pre_tool(sized(quick, 200, 30)),
}
