"""lang "worker": a coding agent (a worker of `plugkit work`) run as a task, argv given as JSON.

Wire contract (an ExecSpec the work engine builds; task.exec from the wire refuses this
lang, see runner/rpc/task.py):
  code   a JSON list of non-empty strings: the argv (plugkit/work/workers.py builds it).
  cwd    the item's worktree (the task's session is the worker's own).
  stdin  the prompt for a `command` worker; None for the hosts. Either way stdin is closed
         once written: nobody types into an unattended worker, and a host that finds stdin
         open waits on it (codex exec: "Reading additional input from stdin..." until killed).
  env    the environment of whoever ran `plugkit work` (filtered like any task's).
argv[0] is found on the PATH the child will see (env's PATH if given, else the runner's);
a missing program is refused before any task exists. The task runs through the process
executor's machinery: its own cgroup, the tags, the kill of its whole tree, live output.

Why this task, alone, gets PLUGKIT_HOME: every other task has it scrubbed, because the
home holds the bearer token and a task is the agent's code, which must not drive the
runner. A worker is the agent itself: the host's hooks are plugkit's own client, and
they must reach THIS runner (its gates, its Stop gate, its exec: tasks in the worker's
session), not autostart another one under some default home. So the worker can read the
token: the same trust a person places in a host they run by hand with plugkit's hooks
installed (those hooks read the token of that person's home). Because this lang hands
out the home, only the runner's own work engine may start it: the wire refuses it.
"""

import json
import os
import shutil
from typing import Optional

from plugkit.refusals import Invalid, Unavailable
from plugkit.vocab import WORKER_LANG
from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO
from runner.executors.process import ProcessExecutor, make as make_process, outcome_of

LANG = WORKER_LANG
HOME_VAR, PORT_VAR = "PLUGKIT_HOME", "PLUGKIT_PORT"


def parse_argv(code: str) -> list[str]:
    """The argv in `code`, or Invalid naming what is wrong with it."""
    try:
        argv = json.loads(code)
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise Invalid('a worker task\'s code is a JSON list of non-empty strings: ["program", "arg", ...]')
    return argv


class WorkerExecutor:
    name = "worker"

    def __init__(self, process: ProcessExecutor, home: str) -> None:
        self.process = process
        self.home = home

    def claims(self, lang: str) -> bool:
        return lang == LANG

    async def prepare(self, spec: ExecSpec) -> Prepared:
        argv = parse_argv(spec.code)
        path = (spec.env or {}).get("PATH") or os.environ.get("PATH")
        found = shutil.which(argv[0], path=path)
        if found is None:
            raise Unavailable(f"worker program {argv[0]!r} is not on PATH; install it or pass "
                              "--worker command --run PROGRAM")
        return Prepared(LANG, [found, *argv[1:]])

    async def run(self, io: TaskIO, prepared: Prepared, spec: ExecSpec) -> Outcome:
        stdin = spec.stdin if spec.stdin is not None else ""  # closed at once (see the docstring)
        rc = await self.process.run_argv(io, prepared.payload, stdin, spec.env, self._runner_env())
        return outcome_of(io.id, rc, True)

    def _runner_env(self) -> dict[str, str]:
        """Set after the tags: where the worker's hooks find this runner (see the docstring)."""
        env = {HOME_VAR: self.home}
        port: Optional[str] = os.environ.get(PORT_VAR)
        if port:
            env[PORT_VAR] = port
        return env

    async def end_session(self, key: SessionKey) -> None:
        return None  # a worker holds nothing beyond its tree, which the manager kills

    async def close(self) -> None:
        await self.process.close()

    def snapshot(self) -> dict:
        return {"isolation": self.process.isolation}


def make(ctx) -> WorkerExecutor:
    return WorkerExecutor(make_process(ctx), os.path.abspath(ctx.home))
