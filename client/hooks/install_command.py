"""The command `plugkit install` writes into a host's hook configuration, and how a later
install or --uninstall recognises it among the host's other hooks (every format, so
install.py and install_hosts.py both use it).

Commands name the interpreter and client/hook_entry.py by absolute path, with -S: a bare
`python3` or `plugkit` may resolve, per PATH, to another interpreter or a slow shim, and the
console script's interpreter runs site (~7 ms CPU of every hook process; hook_entry.py says why
the hook path does without). The forms written before (`<dir>/plugkit hook ...`, `<python> -m
client.cli hook ...`) are still recognised, so an install replaces them.
"""

import os
import shlex
import sys

from client.wire.session import _quote


ENTRY = "hook_entry.py"  # in the client package: client/hook_entry.py


def script_command() -> str:
    """`<this venv's python> -S <the installed client/hook_entry.py>`, both absolute. The
    interpreter is the one running now (the console script's), by the path it was started
    as: a venv's python found through a resolved symlink would be the base interpreter."""
    import client

    entry = os.path.join(os.path.dirname(os.path.abspath(client.__file__)), ENTRY)
    return f"{_quote(os.path.abspath(sys.executable))} -S {_quote(entry)}"


def is_ours(command: object) -> bool:
    """`<python> -S <...>/client/hook_entry.py hook ...`, or the older `<dir>/plugkit hook ...` and
    `<python> -m client.cli hook ...`: what install writes and wrote."""
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if len(words) >= 2 and os.path.basename(words[0]) == "plugkit" and words[1] == "hook":
        return True
    if len(words) >= 4 and words[1] == "-S" and words[2].endswith(f"/client/{ENTRY}") and words[3] == "hook":
        return True
    return len(words) >= 4 and words[1:4] == ["-m", "client.cli", "hook"]
