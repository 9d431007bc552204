"""A hidden approve from the shell tool of a real agent host (issue 28, item 4), as turns of a
script and the checks of what came of them: spelled in base64 so the hook never sees `approve`,
once detached with setsid (reparented to init: no host above it, and no terminal), once run
plainly under the host, once detached in a pty of its own (`setsid script`: a terminal, and only
the environment the host gave its shell left to tell). Each is refused. Played by
tests/hosts/test_person_hosts.py (Claude Code) and inside the shared sessions of
tests/hosts/test_more_hosts.py (OpenCode, Kilo, Copilot CLI)."""

import base64
import shlex
from pathlib import Path

from tests.hosts.hosts import Host
from tests.hosts.script import Call

# How the hidden command is started: detached with setsid (no terminal, reparented to init),
# plainly under the host, and detached in a pseudo-terminal of its own (`script`).
STARTS = {
    "setsid": "(setsid sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1 &)",
    "plain": "sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1",
    "pty": "(setsid script -qec \"sh -c \\\"\\$(echo {code} | base64 -d)\\\"\" /dev/null > {out} 2>&1 &)",
}
# Each is refused by the first rule it meets: the host's marker in its environment comes
# before the missing terminal (tests/e2e/test_gates_person.py shows each rule alone).
MARKED = "its environment was set by an agent host"
REASONS = {"setsid": (MARKED, "no terminal of its own"), "plain": ("approval refused",), "pty": (MARKED,)}
# item -> the start that tries to approve it
ITEMS = dict(zip(("c1", "c2", "c3"), STARTS))
# `plugkit` steps making the critical items the hidden approves go for
STEPS = tuple(("prd", "add", f"risky {i}", "--id", i, "--risk", "critical") for i in ITEMS)


def hidden(command: str, how: str, out: str) -> str:
    code = base64.b64encode(f"{command}; echo rc=$?".encode()).decode()
    start = STARTS[how].format(code=code, out=out)
    return f"{start}; for i in $(seq 200); do grep -q rc= {out} && break; sleep 0.1; done; cat {out}"


def turns(host: Host, plugkit: list[str], work: Path) -> list[Call]:
    """One shell call per item, each approving it in its own hidden way."""
    approve = shlex.join(plugkit) + f" approve {{}} --cwd {shlex.quote(str(work))}"
    return [host.shell(hidden(approve.format(i), how, f"{i}.out")) for i, how in ITEMS.items()]


def refusals(work: Path) -> list[tuple]:
    """(start, what it printed) for each hidden approve that was not refused with its reason."""
    missed = []
    for item, how in ITEMS.items():
        said = (work / f"{item}.out").read_text()
        if not ("rc=1" in said and any(r in said for r in REASONS[how])):
            missed.append((how, said))
    return missed
