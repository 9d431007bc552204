"""Whether a task.exec runs in the worker sandbox (runner/executors/boxed.py), and what of its
worker's it is shown there (its network, its work_docker proxy).

Yes when the caller asks (`plugkit exec:<lang> --sandbox`), always for a sandboxed worker's
capability (its exec: tasks must not see what its own sandbox hides: the token, the home,
the credentials), and when the workspace says `exec_sandbox = true`. That setting is held
by the runner (plugkit/lifecycle/config_pin.py): once the gates hold it, an agent's edit
of the file turning it off is a finding, not a change; the file alone can only turn it on.
"""

import os
from typing import Optional

from plugkit.lifecycle import config as config_mod
from plugkit.protocol import TaskExecParams
from plugkit.refusals import Refused
from runner.rpc.context import CALLER, Context

# root -> ((mtime_ns, size), exec_sandbox): the file is read again only when it changed.
_FILE: dict[str, tuple[tuple[int, int], bool]] = {}


def _file_says(root: str) -> bool:
    path = os.path.join(root, ".plugkit", "config.toml")
    try:
        st = os.stat(path)
    except OSError:
        return False
    stamp = (st.st_mtime_ns, st.st_size)
    cached = _FILE.get(root)
    if cached is None or cached[0] != stamp:
        cached = _FILE[root] = (stamp, config_mod.load(path).exec_sandbox)
    return cached[1]


def offline() -> bool:
    """A worker under --network loopback-model: its exec: tasks get loopback only, no relay (the
    relay is its own; a task of it reaching more than the worker could would be a way out)."""
    cap = CALLER.get()
    return cap is not None and cap.network != "host"


def docker() -> Optional[str]:
    """A worker's exec: task gets its attempt's work_docker proxy (the capability names it): the
    same socket, labels and teardown as the worker's own `docker`. Nobody else's task does."""
    cap = CALLER.get()
    return cap.docker if cap is not None else None


async def wanted(ctx: Context, p: TaskExecParams, root: Optional[str]) -> bool:
    """`root`: root_or_none(p.cwd), which the caller has found already."""
    if p.sandbox or CALLER.get() is not None:
        return True
    if root is None or not os.path.exists(os.path.join(root, ".plugkit", "config.toml")):
        return False
    if _file_says(root):
        return True
    gates = ctx.gates.peek() if ctx.gates is not None else None
    if gates is None:  # the gates not up yet: nothing held to read (the file said no)
        return False
    try:
        ws = gates.workspace(p.session_id, p.cwd)
    except Refused:
        return False
    return gates.config(ws).exec_sandbox  # on the loop, as every gate read is: the ledger is the loop's
