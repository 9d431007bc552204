"""A person at a terminal, for the acts only a person may do (approve, confirm-config): the
command runs as the session leader of a pseudo-terminal of its own (pty.spawn: setsid, then
the pty's slave as its controlling terminal), as a shell in a terminal window would run it.
The runner's person check (runner/system/peers.py) needs exactly that: a process without a
controlling terminal is never a person, whatever ran the test."""

import os
import subprocess
import sys
from pathlib import Path
from typing import Optional

from tests.support.runner_home import cli_argv


def at_terminal(argv: list[str], env: dict, cwd=None, timeout: float = 60) -> subprocess.CompletedProcess:
    """stdout is what the terminal showed (the program's stdout and stderr, CRLF line ends)."""
    env = {**env, "PATH": f"{Path(cli_argv()[0]).parent}:{env.get('PATH', os.environ.get('PATH', ''))}"}
    spawn = f"import pty, sys; sys.exit(pty.spawn({argv!r}) >> 8)"
    done = subprocess.run([sys.executable, "-c", spawn], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=timeout)
    return subprocess.CompletedProcess(done.args, done.returncode, done.stdout.replace("\r\n", "\n"), done.stderr)


def person_cli(home, *args: str, cwd=None, env: Optional[dict] = None, timeout: float = 60) -> subprocess.CompletedProcess:
    """`plugkit ARGS` typed by a person into their own terminal."""
    return at_terminal(cli_argv() + list(args), {**home.env, **(env or {})}, cwd=cwd, timeout=timeout)
