"""What plugkit's answers cost an agent's context: bytes and lines of the answers issue 42 names.

Runs the real CLI against a runner in a scratch PLUGKIT_HOME on a free port and prints one
markdown table: a failing exec, a 2 MB output and the next step its note offers, exec:tasks
with 30 running tasks, the waiting-for-input notice, and `work status`.

    .venv/bin/python scripts/context_cost.py
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

BIG = "import sys\nfor i in range(20972): sys.stdout.write(f'{i:07d} ' + 'y' * 91 + '\\n')"  # 2,097,200 bytes


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _plugkit() -> list[str]:
    script = Path(sys.executable).parent / "plugkit"
    return [str(script)] if script.exists() else [sys.executable, "-m", "client.cli"]


class Cli:
    def __init__(self, home: str, cwd: str) -> None:
        self.env = dict(os.environ, PLUGKIT_HOME=home, PLUGKIT_PORT=str(_port()), PLUGKIT_SESSION="cost")
        self.cwd = cwd

    def run(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run(_plugkit() + list(args), env=self.env, cwd=self.cwd, capture_output=True,
                              stdin=subprocess.DEVNULL, timeout=120)


def _cost(proc: subprocess.CompletedProcess) -> tuple[int, int]:
    text = proc.stdout + proc.stderr
    return len(text), text.count(b"\n")


def _next_step(answer: subprocess.CompletedProcess) -> list[str] | None:
    """The first command in backquotes the cut note offers (today's or the new one)."""
    notes = [line for line in answer.stderr.decode().splitlines() if line.startswith("[plugkit]")]
    for line in notes:
        for cmd in re.findall(r"`(plugkit [^`]+)`", line):
            if "exec:status" in cmd:
                return cmd.split()[1:]
    return None


def main() -> int:
    rows: list[tuple[str, int, int]] = []
    with tempfile.TemporaryDirectory() as tmp:
        cli = Cli(os.path.join(tmp, "home"), tmp)
        try:
            rows.append(("failing exec (`exec:bash 'ls /nonexistent'`)", *_cost(cli.run("exec:bash", "ls /nonexistent"))))
            big = cli.run("exec:python", BIG)
            rows.append(("2 MB output (`exec:python` printing 2,097,200 bytes)", *_cost(big)))
            step = _next_step(big)
            if step:
                rows.append((f"its next step (`{' '.join(step)}`)", *_cost(cli.run(*step))))
            for _ in range(30):
                cli.run("exec:bash", "--wait", "0", "sleep 120")
            rows.append(("`exec:tasks` with 30 running tasks", *_cost(cli.run("exec:tasks"))))
            rows.append(("waiting-for-input notice (`exec:python 'input()'`)",
                         *_cost(cli.run("exec:python", "--wait", "2", "input('name? ')"))))
            subprocess.run(["git", "init", "-q", tmp], check=True)
            rows.append(("`work status` (no run yet)", *_cost(cli.run("work", "status"))))
        finally:
            cli.run("session-cleanup")
            cli.run("runner", "stop")
    print("| answer | bytes | lines |\n|---|---:|---:|")
    for what, size, lines in rows:
        print(f"| {what} | {size} | {lines} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
