"""Which of each agent host's tools write files and which run a command line, as the gates read
them: derived from the `tools` fact of each row of plugkit/hosts.py (the one host table).

The gates judge a tool call by its name: a write tool missing here is a write the PLAN phase
does not stop (Qwen Code's `edit` was one). So every tool a pinned host registers is in its row
(write, shell, or other), and tests/hosts/test_host_tools.py re-reads the installed hosts and
fails on a name no row classifies: a version bump that adds a tool is caught, not trusted.
The adapters of hosts that spell arguments otherwise (copilot, opencode, cursor) also rename the
tool to Claude Code's name; both spellings are write tools here, so a missed rename still cannot
let a write by. Stdlib only: the hook's hot path imports this module.
"""

from plugkit.host_row import SHELL, WRITE
from plugkit.hosts import BY_PLATFORM, HOSTS

__all__ = ["SHELL", "WRITE", "names", "matcher", "WRITE_TOOLS", "SHELL_TOOLS"]


def names(host: str, role: str, hooked: bool = False) -> frozenset:
    """One host's tool names in a role (write | shell | other): as it registers them and as its
    hooks carry them, or (hooked) only as its hooks carry them."""
    tools = BY_PLATFORM[host].tools
    raw = getattr(tools, role)
    registered = set(raw.split() if isinstance(raw, str) else raw)
    as_hooked = {tools.hooked_as.get(name, name) for name in registered}
    return frozenset(as_hooked if hooked else registered | as_hooked)


def matcher(host: str, roles: tuple = (SHELL, WRITE)) -> str:
    """The hook matcher (`A|B|...`) for one host's gated tools, spelled as its hooks carry them."""
    return "|".join(sorted(frozenset().union(*(names(host, role, hooked=True) for role in roles))))


# Every host's, as the runner's policy and the hook read them (a name means the same everywhere:
# tests/unit/test_host_tools.py checks no name is a write tool on one host and not on another).
WRITE_TOOLS = frozenset().union(*(names(h.platform, WRITE) for h in HOSTS))
SHELL_TOOLS = {name: key for h in HOSTS for name, key in h.tools.shell.items()}
