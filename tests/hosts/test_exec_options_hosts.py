"""exec: options and stdin inside a real Claude Code and a real Qwen Code, driven by the
scripted model (issue 40 item 11; issue 42 majors 1 and 6). An agent's
`plugkit exec:bash --sandbox '...'` printed ~/.ssh/id_rsa and wrote outside: the hook's
parser made `--sandbox` part of the code. And an agent's `echo data | plugkit exec:python ...`
lost the data. What the model reads back is what the host handed it.

The hosts' shells give a command /dev/null (Claude Code, Gemini CLI, Codex) or a
pseudo-terminal nobody types into (Qwen Code): an exec that reads its stdin there must come
back at once, never hold the agent until the wait ceiling.
"""

import os

import pytest

from tests.hosts.hosts import HOSTS, Host, installed, project, run
from tests.hosts.script import Say, Script
from tests.support.attempts import FAKE_KEY
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


@pytest.fixture(params=["claude", "qwen"])
def host(request) -> Host:
    return installed(HOSTS[request.param])


def with_plugkit_on_path(host_home) -> dict:
    """The host's shell finds this plugkit (for commands the hook lets through to the shell)."""
    return {"PATH": f"{host_home / 'shim'}:{os.path.dirname(cli_argv()[0])}:{os.environ['PATH']}"}


def test_sandbox_from_inside_the_host_runs_sandboxed_and_a_typo_is_refused(tmp_path, home, host):
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    (host_home / ".ssh").mkdir()
    (host_home / ".ssh" / "id_rsa").write_text(FAKE_KEY + "secret-key-material\n")
    outside, marker = tmp_path / "outside.txt", tmp_path / "typo-ran.txt"
    script = Script([
        host.shell(f"plugkit exec:bash --sandbox 'cat ~/.ssh/id_rsa; touch {outside}; echo ran-$((6 * 7))'"),
        host.shell(f"plugkit exec:bash --sandbx 'touch {marker}'"),
        Say("Done."),
    ])
    result = run(host, script, work, host_home, env=with_plugkit_on_path(host_home))
    why = result.explain()
    assert result.proc.returncode == 0, why
    sandboxed, refused = script.reply_to(0), script.reply_to(1)
    assert sandboxed is not None and "ran-42" in sandboxed.newest, why
    assert "secret-key-material" not in sandboxed.newest and not outside.exists(), why
    assert refused is not None and "unknown option --sandbx; did you mean --sandbox?" in refused.newest, why
    assert not marker.exists(), why


def test_an_agents_piped_stdin_reaches_the_task_and_a_plain_exec_never_waits_on_the_hosts(tmp_path, home, host):
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    script = Script([
        # Not an exec: line (it starts with echo): the host's shell runs the CLI with the pipe.
        host.shell("echo data-in | plugkit exec:python 'import sys; print(\"got\", sys.stdin.read().strip())'"),
        # The CLI under the host's own stdin, reading it: answered at once, not at the ceiling.
        host.shell("cd . && plugkit exec:python --wait 40 'print(6 * 7, flush=True); print(input())'"),
        Say("Done."),
    ])
    result = run(host, script, work, host_home, env=with_plugkit_on_path(host_home))
    why = result.explain()
    assert result.proc.returncode == 0, why
    piped, plain = script.reply_to(0), script.reply_to(1)
    assert piped is not None and "got data-in" in piped.newest, why
    assert plain is not None and "42" in plain.newest, why
    assert "after 40s" not in plain.newest, why
    assert "EOFError" in plain.newest or "waiting for input" in plain.newest, why
