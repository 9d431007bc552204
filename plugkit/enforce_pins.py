"""Which workspaces enforce their gates, known without the runner, so a hook whose runner does
not answer fails closed there and only there (client/hooks/core.py).

Two signs, either enough:
- a pin, $PLUGKIT_HOME/enforced/<sha256 of the root>, written by the runner the first time a
  hook finds that workspace's gates in "enforce" (runner/rpc/hook.py), and never removed by
  it: `sed -i s/enforce/off/ .plugkit/config.toml` plus a killed runner still fails closed;
- `gates = "enforce"` in a .plugkit/config.toml at or above the cwd (the workspace opted in
  before any hook reached a runner).

Every directory from the cwd up is asked, not only the one the runner would call the root:
a `.git` made in a subdirectory must not move a cwd out of an enforcing workspace. The pin
is in the runner's home (the token's directory), not in the workspace the agent edits.
Standard library only: the hook imports this on its failure path alone.
"""

import hashlib
import os
import re
from typing import Optional

from plugkit import paths

PIN_DIR = "enforced"
_ENFORCE = re.compile(rb"""^\s*gates\s*=\s*["']enforce["']""", re.MULTILINE)


def pin_path(home: str, root: str) -> str:
    digest = hashlib.sha256(os.fsencode(os.path.realpath(root))).hexdigest()[:32]
    return os.path.join(home, PIN_DIR, digest)


def pin(home: str, root: str) -> bool:
    """Record that `root` enforces; True when this call wrote the pin (a stat otherwise)."""
    path = pin_path(home, root)
    if os.path.exists(path):
        return False
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    paths.write_private(path, os.path.realpath(root) + "\n")  # the root, for a person reading the dir
    return True


def _config_enforces(directory: str) -> bool:
    try:
        with open(os.path.join(directory, ".plugkit", "config.toml"), "rb") as fh:
            return bool(_ENFORCE.search(fh.read(1 << 16)))
    except OSError:
        return False


def enforcing(cwd: str, home: Optional[str] = None) -> Optional[str]:
    """The enforcing workspace holding `cwd` (the directory pinned or configured), else None.
    / and $HOME are never workspaces (plugkit/workspace.py): a config there is not read."""
    home = paths.home() if home is None else home
    never = {os.path.realpath(os.path.expanduser("~"))}
    current = os.path.realpath(cwd)
    while True:
        if os.path.exists(pin_path(home, current)):
            return current
        parent = os.path.dirname(current)
        if parent == current:
            return None
        if current not in never and _config_enforces(current):
            return current
        current = parent
