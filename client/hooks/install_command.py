"""The command `plugkit install` writes into a host's hook configuration, and how a later
install or --uninstall recognises it among the host's other hooks (every format, so
install.py and install_hosts.py both use it).

Commands name the installed console script by its absolute path: a bare `python3` or
`plugkit` may resolve, per PATH, to another interpreter or a slow shim.
"""

import os
import shlex
import sys

from client.wire.session import _quote


def script_command() -> str:
    """The absolute path of the plugkit console script running now (else of this venv's)."""
    argv0 = sys.argv[0]
    if os.path.basename(argv0) == "plugkit" and os.path.isfile(argv0):
        return _quote(os.path.abspath(argv0))
    beside = os.path.join(os.path.dirname(sys.executable), "plugkit")
    if os.path.isfile(beside):
        return _quote(beside)
    # No console script (run as a module): the interpreter itself, by absolute path.
    return f"{_quote(os.path.abspath(sys.executable))} -m client.cli"


def is_ours(command: object) -> bool:
    """`<dir>/plugkit hook ...` or `<python> -m client.cli hook ...`: what install writes."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 2 and os.path.basename(words[0]) == "plugkit" and words[1] == "hook":
        return True
    return len(words) >= 4 and words[1:4] == ["-m", "client.cli", "hook"]
