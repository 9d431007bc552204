"""Approvals only a person can give (issue 20), tried for real against the runner in a git
repository with gates = "enforce": through the hook in every spelling, from a task's
process tree, over raw RPC with the token, from under an agent host; and the honest ones,
from a terminal and from the host's own permission prompt."""

import base64
import json
import os
import pwd
import shlex
import subprocess
import sys
import textwrap

import pytest

from tests.support.agent import SID
from tests.support.runner_home import cli_argv
from tests.support.approvals import ITEMS, agent, fake_host, run_under_host, waiting  # noqa: F401  (agent: the fixture)

pytestmark = pytest.mark.e2e

SPELLINGS = (
    "plugkit approve c1",
    "p=plugkit; $p approve c6",
    "env -u PLUGKIT_TASK_ID plugkit approve c2",
    "sh -c 'plugkit approve c3'",
    'pl"ug"kit ap"pro"ve c4',
    "/some/where/bin/plugkit approve c5",
    "exec:bash\nenv -u PLUGKIT_TASK_ID plugkit approve c7",
    "exec:python\nimport urllib.request  # then POST {'method': 'approval.grant', ...}",
)



def client_script(home, item: str, unset: str = "env -u PLUGKIT_TASK_ID") -> str:
    """What an agent's task runs to approve: the CLI with the task tag unset, the runner's
    home named by hand (a task is not told it; the default home needs no naming at all)."""
    return f"{unset} PLUGKIT_HOME={shlex.quote(str(home.path))} {shlex.join(cli_argv())} approve {item}"


def test_every_spelling_through_the_hook_goes_to_the_person(agent):
    for command in SPELLINGS:
        decision, reason = agent.bash(command)
        assert decision == "ask" and "person's decision" in reason, command
        # Codex cannot ask from a hook: the same call is denied, naming who must do it.
        out = json.loads(agent.hook("PreToolUse", "codex", tool_name="Bash", tool_input={"command": command}).stdout)
        assert out["hookSpecificOutput"]["permissionDecision"] == "deny", command
    assert waiting(agent) == list(ITEMS)
    assert agent.bash("plugkit approve --list") == ("allow", "")  # reading is not approving
    tasks = agent.hook("PreToolUse", tool_name="Bash", tool_input={"command": "exec:tasks"})
    assert "task_" not in json.loads(tasks.stdout)["hookSpecificOutput"]["permissionDecisionReason"]


def test_a_task_cannot_approve_whatever_it_unsets_or_spells(agent, home):
    # Spelled so the hook cannot see it: the task runs, and the runner refuses by ancestry.
    hidden = base64.b64encode(client_script(home, "c2").encode()).decode()
    _, reason = agent.exec_task(f"echo {hidden} | base64 -d | sh")
    assert "approval refused: asked from inside a plugkit task" in reason, reason

    # Raw RPC with the token read from the home, claiming to be the CLI and someone else.
    code = textwrap.dedent(f"""\
        import json, urllib.request
        home = {str(home.path)!r}
        token = open(home + "/token").read().strip()
        body = json.dumps({{"jsonrpc": "2.0", "id": 1, "method": "approval.grant", "params": {{
            "session_id": "x", "cwd": {str(agent.repo)!r}, "item_id": "c6", "via": "cli", "user": "alice"}}}})
        req = urllib.request.Request("http://127.0.0.1:{home.port}/rpc", body.encode(), {{
            "Authorization": "Bearer " + token, "Content-Type": "application/json"}})
        print(urllib.request.urlopen(req).read().decode())
        """)
    encoded = base64.b64encode(code.encode()).decode()
    _, reason = agent.exec_task(f"echo {encoded} | base64 -d | {shlex.quote(sys.executable)} -")
    assert '"code": -32002' in reason and "plugkit task" in reason, reason

    # Escaped: a double fork with a wiped environment lands on the runner (child subreaper).
    escape = (f"setsid sh -c '(env -i PATH=/usr/bin:/bin PLUGKIT_PORT={home.port} "
              f"{client_script(home, 'c5', unset='')} > escaped.out 2>&1 &)'; "
              "for i in $(seq 100); do [ -s escaped.out ] && grep -q refused escaped.out && break; sleep 0.1; done; "
              "sleep 0.2; cat escaped.out; rm -f escaped.out")
    _, reason = agent.exec_task(f"echo {base64.b64encode(escape.encode()).decode()} | base64 -d | sh", wait="20")
    assert "approval refused" in reason and "escaped task" in reason, reason
    assert waiting(agent) == list(ITEMS)



def test_under_an_agent_host_only_the_hosts_prompt_lets_an_approval_through(agent, home, tmp_path):
    host = fake_host(tmp_path)
    refused = run_under_host(home, agent, host, "plugkit approve c3")
    assert refused.returncode == 1 and "inside Claude Code's process tree" in refused.stderr

    # Codex asked nobody (its hooks cannot): still refused.
    agent.hook("PreToolUse", "codex", tool_name="Bash", tool_input={"command": "plugkit approve c3"})
    assert run_under_host(home, agent, host, "plugkit approve c3").returncode == 1

    # Claude Code asked the person, who said yes: the command it then runs is accepted, once.
    assert agent.bash("plugkit approve c3")[0] == "ask"
    approved = run_under_host(home, agent, host, "plugkit approve c3")
    assert approved.returncode == 0 and approved.stdout.startswith("approved c3 as "), approved.stderr
    [given] = agent.json("approve", "--list")["approvals"]
    assert (given["item_id"], given["channel"]) == ("c3", "host_prompt")
    assert run_under_host(home, agent, host, "plugkit approve c4").returncode == 1  # another item: no prompt
    again = run_under_host(home, agent, host, "plugkit approve c3")  # the prompt was used up
    assert again.returncode == 1 and "without the person confirming it" in again.stderr


def test_a_person_at_a_terminal_is_recorded_with_user_and_tty(agent, home):
    # pty.spawn gives the CLI a terminal of its own, as a person's shell would have.
    argv = cli_argv() + ["approve", "c1", "--session", SID, "--cwd", str(agent.repo)]
    spawn = f"import pty, sys; sys.exit(pty.spawn({argv!r}) >> 8)"
    done = subprocess.run([sys.executable, "-c", spawn], env=home.env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and "approved c1 as " in done.stdout, (done.stdout, done.stderr)
    [given] = agent.json("approve", "--list")["approvals"]
    assert given["channel"] == "terminal" and given["tty"] and given["tty"].startswith("/dev/")
    assert given["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert "c1" not in waiting(agent)
