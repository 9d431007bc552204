"""exec: options and stdin inside a real Claude Code and a real Qwen Code, driven by the
scripted model (issue 40 item 11; issue 42 majors 1 and 6). An agent's
`plugkit exec:bash --sandbox '...'` printed ~/.ssh/id_rsa and wrote outside: the hook's
parser made `--sandbox` part of the code. And an agent's `echo data | plugkit exec:python ...`
lost the data. What the model reads back is what the host handed it.

The hosts' shells give a command /dev/null (Claude Code, Gemini CLI, Codex) or a
pseudo-terminal nobody types into (Qwen Code): an exec that reads its stdin there must come
back at once, never hold the agent until the wait ceiling.

One session per host plays both (a sandboxed exec and a typo, then a piped and a plain exec);
each fact is its own test of it.
"""

import os
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hosts.hosts import HOSTS, Host, Run, installed, project, run
from tests.hosts.script import Say, Script
from tests.hosts.sessions import once_each
from tests.support.attempts import FAKE_KEY
from tests.support.runner_home import Home, cli_argv, free_port

pytestmark = pytest.mark.e2e


NAMES = ["claude", "qwen"]


def with_plugkit_on_path(host_home) -> dict:
    """The host's shell finds this plugkit (for commands the hook lets through to the shell)."""
    return {"PATH": f"{host_home / 'shim'}:{os.path.dirname(cli_argv()[0])}:{os.environ['PATH']}"}


@dataclass
class Session:
    script: Script
    result: Run
    outside: Path  # where the sandboxed exec tried to write
    marker: Path  # what the mistyped --sandbx would have written


def _play(base: Path, name: str) -> Session:
    """One session of the host: a sandboxed exec and a mistyped flag, then a piped exec and a plain
    one under the host's own stdin (a host start is most of a test's time: Qwen Code ~10 s of CPU)."""
    host: Host = installed(HOSTS[name])
    runner = Home(path=base / "plugkit-home", port=free_port())
    try:
        work, host_home = project(base, host, cli_argv(), runner.env)
        (host_home / ".ssh").mkdir()
        (host_home / ".ssh" / "id_rsa").write_text(FAKE_KEY + "secret-key-material\n")
        outside, marker = base / "outside.txt", base / "typo-ran.txt"
        script = Script([
            host.shell(f"plugkit exec:bash --sandbox 'cat ~/.ssh/id_rsa; touch {outside}; echo ran-$((6 * 7))'"),
            host.shell(f"plugkit exec:bash --sandbx 'touch {marker}'"),
            # Not an exec: line (it starts with echo): the host's shell runs the CLI with the pipe.
            host.shell("echo data-in | plugkit exec:python 'import sys; print(\"got\", sys.stdin.read().strip())'"),
            # The CLI under the host's own stdin, reading it: answered at once, not at the ceiling.
            host.shell("cd . && plugkit exec:python --wait 40 'print(6 * 7, flush=True); print(input())'"),
            Say("Done."),
        ])
        env = {**with_plugkit_on_path(host_home), "PLUGKIT_HOME": str(runner.path), "PLUGKIT_PORT": str(runner.port)}
        return Session(script, run(host, script, work, host_home, env=env), outside, marker)
    finally:
        runner.stop_all()  # the host's hooks started it; no test may leave it running


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """host -> its one session (tests/hosts/sessions.py)."""
    return once_each(tmp_path_factory, _play)


@pytest.mark.parametrize("name", NAMES)
def test_sandbox_from_inside_the_host_runs_sandboxed_and_a_typo_is_refused(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    sandboxed, refused = script.reply_to(0), script.reply_to(1)
    assert sandboxed is not None and "ran-42" in sandboxed.newest, why
    assert "secret-key-material" not in sandboxed.newest and not played.outside.exists(), why
    assert refused is not None and "unknown option --sandbx; did you mean --sandbox?" in refused.newest, why
    assert not played.marker.exists(), why


@pytest.mark.parametrize("name", NAMES)
def test_an_agents_piped_stdin_reaches_the_task_and_a_plain_exec_never_waits_on_the_hosts(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    piped, plain = script.reply_to(2), script.reply_to(3)
    assert piped is not None and "got data-in" in piped.newest, why
    assert plain is not None and "42" in plain.newest, why
    assert "after 40s" not in plain.newest, why
    assert "EOFError" in plain.newest or "waiting for input" in plain.newest, why
