"""Real-host hook latency: what plugkit's hooks add to each tool call inside the real agent
hosts (Claude Code, Qwen Code, Gemini CLI, Codex CLI), measured beside the bare host.

Per host, two headless runs of one script against the fake model of tests/hosts: N plain
shell calls (`true`), then the final text; once in a scratch repo without plugkit, once
after `plugkit install --platform P` (runner started by the host's own first hook). The
latency of a call is the time from the fake model finishing the tool-call response to the
host's next model request: the tool, its hooks and the host's own work in between.
A host whose package is missing yields a FAIL row naming why.

CASES plugs into scripts/bench.py's table (hosts_claude, hosts_qwen, hosts_gemini, hosts_codex);
`python scripts/bench_hosts.py [--quick]` runs just these.
"""

import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import PLUGKIT, Row, Sandbox, ms, pct, sized  # noqa: E402
from tests.hosts.hosts import HOSTS, Host, project, run  # noqa: E402
from tests.hosts.script import Call, Say, Script  # noqa: E402

# plugkit's PreToolUse hook is one `plugkit hook` process (~40-60 ms warm, see hook_pre_tool)
# plus the host spawning it and parsing its answer; more than this per call is a regression.
TARGET_ADDED_S = 0.25


def _latencies(script: Script) -> list[float]:
    main = script.main
    return [nxt.at - prev.answered_at for prev, nxt in zip(main, main[1:])
            if isinstance(prev.answer, Call) and nxt.turn == prev.turn + 1]


def _one(host: Host, calls: int, with_plugkit: bool) -> list[float]:
    box = Sandbox()
    try:
        base = Path(tempfile.mkdtemp(prefix=f"plugkit-bench-{host.name}-", dir=box.dir))
        work, home = project(base, host, [PLUGKIT] if with_plugkit else None, box.env)
        script = Script([host.shell(f"true # call {i}") for i in range(calls)] + [Say("Benchmarked.")])
        result = run(host, script, work, home, env={k: box.env[k] for k in ("PLUGKIT_HOME", "PLUGKIT_PORT")})
        samples = _latencies(script)
        if result.proc.returncode != 0 or len(samples) != calls:
            raise RuntimeError(f"{host.name} did not play the script: {result.explain()[-1500:]}")
        return samples
    finally:
        box.close()


def _added(x: float) -> str:
    return f"{x * 1000:+.1f} ms"


def case_host(name: str, calls: int) -> list[Row]:
    host = HOSTS[name]
    label = f"{name}: tool call -> next model request, plugkit hooks installed, p50"
    why = host.missing()
    if why:
        return [Row(label, "-", "-", "-", "host installed", False), Row(f"  ({why})", "-", "-", "-", "-", False)]
    bare = _one(host, calls, with_plugkit=False)
    ours = _one(host, calls, with_plugkit=True)
    o50, b50 = pct(ours, 50), pct(bare, 50)
    return [
        Row(label, ms(o50), f"bare {name} {ms(b50)}", _added(o50 - b50), f"<= +{ms(TARGET_ADDED_S)}",
            o50 - b50 <= TARGET_ADDED_S),
        Row(f"{name}: same, p90", ms(pct(ours, 90)), f"bare {name} {ms(pct(bare, 90))}",
            _added(pct(ours, 90) - pct(bare, 90)), "(reported)", True),
    ]


CASES = {f"hosts_{name}": (lambda quick, name=name: case_host(name, sized(quick, 12, 3))) for name in HOSTS}

if __name__ == "__main__":
    os.execv(sys.executable, [sys.executable, str(Path(__file__).resolve().parent / "bench.py"), *CASES, *sys.argv[1:]])
