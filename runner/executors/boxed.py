"""An ordinary task in the worker sandbox (`plugkit exec:<lang> --sandbox`, exec_sandbox, and
every exec: of a sandboxed worker): the same bwrap rows as a `command` worker's, with the
task's session root (its workspace, a worker's worktree; else its cwd) as the one writable
tree, and a private dir for its code file and build output.

Fails closed: no sandbox here, no task (Unavailable naming why). Nothing here overrides it:
a task asked for in a sandbox never runs outside one.
"""

import os
import tempfile
from dataclasses import dataclass
from typing import Mapping, Optional

from plugkit.refusals import Unavailable
from runner.system import sandbox

KIND = "command"  # the CACHES row: toolchain caches only, no host's state


def private_dir(tmp_root: str, task_id: int) -> str:
    """Where the task's code file and build output go: bound writable into its sandbox."""
    return tempfile.mkdtemp(prefix=f"task_{task_id}-box-", dir=tmp_root)


@dataclass(frozen=True)
class Box:
    """One task's sandbox: its private dir, and whether it has no network but its own loopback
    (the exec: tasks of a worker under --network loopback-model: its relay is the worker's alone)."""
    dir: str
    offline: bool = False
    docker: Optional[str] = None  # the worker's proxy socket (work_docker): a task in its session gets it too

    def wrap(self, argv: list[str], root: str, cwd: str, home: str, env: Mapping[str, str]) -> list[str]:
        """`argv` run in `cwd` inside the sandbox of `root`; Unavailable when bwrap is missing."""
        lay = sandbox.layout(root, home, {**env, "HOME": env.get("HOME") or os.path.expanduser("~")}, self.dir)
        try:
            return sandbox.argv(lay, KIND, argv, cwd=cwd, extra=("--unshare-net",) if self.offline else (),
                                docker=self.docker)
        except sandbox.SandboxUnavailable as exc:
            raise Unavailable(f"no sandbox for this task: {exc}; run it without --sandbox (and without "
                              "exec_sandbox) only if you trust the code") from None
