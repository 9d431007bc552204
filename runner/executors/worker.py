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
session), not autostart another one under some default home. In its sandbox the token's
path shows a capability minted for this attempt instead of the token (plugkit/work/
capabilities.py; what it may call: runner/rpc/scope.py), revoked when the attempt ends.
Only under a person's --no-sandbox does the worker read the token itself. Because this
lang hands out the home, only the runner's own work engine may start it: the wire refuses it.

Every worker runs inside the sandbox (runner/system/sandbox.py), which hides the rest of
that home; it fails closed: no sandbox here, no worker, unless a person ran `plugkit work
--no-sandbox` (the code is then {"argv": [...], "sandbox": false}, and the run shows it).
"""

import asyncio
import json
import os
import re
import shutil
import tempfile
from dataclasses import dataclass
from typing import Optional

import psutil

from plugkit.refusals import Invalid, Unavailable
from plugkit.vocab import SANDBOXED_TAG, WORK_NETWORKS, WORKER_LANG
from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO
from runner.executors.process import ProcessExecutor, make as make_process, outcome_of
from plugkit.work import workers
from runner.system import docker_proxy, netrelay, peers, sandbox, tags
from plugkit.work.capabilities import Capabilities, Capability
from runner.system.cgroups import home_key

LANG = WORKER_LANG
HOME_VAR, PORT_VAR = "PLUGKIT_HOME", "PLUGKIT_PORT"


@dataclass(frozen=True)
class WorkerCode:
    argv: list[str]
    sandboxed: bool = True
    run: str = ""   # whose worker: its capability is scoped to this run's item
    item: str = ""
    network: str = "host"  # plugkit.vocab.WORK_NETWORKS


def parse_code(code: str) -> WorkerCode:
    """A JSON argv list, or {"argv": [...], "sandbox": bool, "run": id, "item": id}."""
    try:
        data = json.loads(code)
    except ValueError:
        data = None
    if (isinstance(data, dict) and set(data) <= {"argv", "sandbox", "run", "item", "network"}
            and isinstance(data.get("sandbox", True), bool) and data.get("network", "host") in WORK_NETWORKS
            and all(isinstance(data.get(k, ""), str) for k in ("run", "item"))):
        return WorkerCode(parse_argv(json.dumps(data.get("argv"))), data.get("sandbox", True),
                          data.get("run", ""), data.get("item", ""), data.get("network", "host"))
    return WorkerCode(parse_argv(code))


def parse_argv(code: str) -> list[str]:
    """The argv in `code`, or Invalid naming what is wrong with it."""
    try:
        argv = json.loads(code)
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) and a for a in argv):
        raise Invalid('a worker task\'s code is a JSON list of non-empty strings: ["program", "arg", ...]')
    return argv


def program_path(program: str, env: Optional[dict]) -> Optional[str]:
    """Where `program` is on the PATH the worker will see (env's PATH if given, else the runner's)."""
    return shutil.which(program, path=(env or {}).get("PATH") or os.environ.get("PATH"))


class WorkerExecutor:
    name = "worker"

    def __init__(self, process: ProcessExecutor, home: str, capabilities: Optional[Capabilities] = None) -> None:
        self.process = process
        self.home = home
        self.capabilities = capabilities
        self.sandbox_problem: Optional[str] = None  # what the last self-test found (None: all denied)
        self._probed = False

    def claims(self, lang: str) -> bool:
        return lang == LANG

    async def prepare(self, spec: ExecSpec) -> Prepared:
        code = parse_code(spec.code)
        found = program_path(code.argv[0], spec.environ or spec.env)
        if found is None:
            raise Unavailable(f"worker program {code.argv[0]!r} is not on PATH; install it or pass "
                              "--worker command --run PROGRAM")
        if code.sandboxed:
            await self.check_sandbox()
        if code.network != "host":
            self._targets(spec)  # an endpoint the namespace cannot relay refuses the worker up front
        return Prepared(LANG, WorkerCode([found, *code.argv[1:]], code.sandboxed, code.run, code.item, code.network))

    async def check_sandbox(self) -> None:
        """Fails closed: before every worker, the self-test tries in a sandbox built the same way
        what must be denied (sandbox.SELF_TEST); Unavailable naming what got through, or why bwrap
        cannot run here, and the override. ~50 ms, against a worker's minutes."""
        self.sandbox_problem = await asyncio.to_thread(sandbox.self_test, self.home)
        self._probed = True
        if self.sandbox_problem:
            raise Unavailable(sandbox_refusal(self.sandbox_problem))

    async def run(self, io: TaskIO, prepared: Prepared, spec: ExecSpec) -> Outcome:
        stdin = spec.stdin if spec.stdin is not None else ""  # closed at once (see the docstring)
        code: WorkerCode = prepared.payload
        argv = code.argv
        tmp = tempfile.mkdtemp(prefix="plugkit-worker-") if code.sandboxed else None
        token = cap_file = relay = None
        try:
            if tmp is not None:
                docker = docker_proxy.existing_socket(self.home, spec.session_id, spec.cwd)
                token, cap_file = await asyncio.to_thread(self._mint, code, spec, docker)
                extra: tuple[str, ...] = ()
                if code.network != "host":
                    relay, extra, argv = await self._relay(spec, os.path.join(tmp + ".net"), argv)
                lay = sandbox.layout(spec.cwd, self.home, spec.environ or spec.env or os.environ, tmp)
                # In a thread: it copies the host's state dir (runner/system/sandbox_home.py).
                argv = await asyncio.to_thread(sandbox.argv, lay, worker_kind(code.argv[0]), argv,
                                               capability=cap_file, extra=extra,
                                               docker=docker)
            rc = await self.process.run_argv(io, argv, stdin, spec.env, self._runner_env(tmp), spec.environ)
        except sandbox.SandboxUnavailable as exc:
            raise Unavailable(f"no worker sandbox: {exc}; `plugkit work --no-sandbox` overrides") from None
        finally:
            if relay is not None:
                await relay.close()
                await asyncio.to_thread(shutil.rmtree, relay.folder, True)
            if token is not None and self.capabilities is not None:
                self.capabilities.revoke(token)  # the attempt is over: its capability with it
            if tmp is not None:
                await asyncio.to_thread(shutil.rmtree, tmp, True)
            if cap_file is not None:
                await asyncio.to_thread(shutil.rmtree, os.path.dirname(cap_file), True)
        return outcome_of(io.id, rc, True)

    def _targets(self, spec: ExecSpec) -> dict[int, tuple[str, int]]:
        return relay_targets(spec.environ or spec.env or {}, runner_port(self.home))

    async def _relay(self, spec: ExecSpec, folder: str, argv: list[str]):
        """(the runner's half of the relay, started; bwrap's arguments; the argv behind the inside half)."""
        targets = self._targets(spec)
        relay = await netrelay.open_relay(folder, targets)
        return relay, netrelay.namespace_args(folder), netrelay.wrap(folder, sorted(targets), argv)

    def _mint(self, code: WorkerCode, spec: ExecSpec, docker: Optional[str]) -> tuple[Optional[str], Optional[str]]:
        """(token, the 0600 file holding it) for this worker; (None, None) in a runner composed
        without capabilities (unit tests): the token's path then shows nothing at all. `docker`:
        its attempt's proxy socket, which its exec: tasks get too (work_docker)."""
        if self.capabilities is None:
            return None, None
        return mint_file(self.capabilities, self.home, Capability(code.run, code.item, spec.session_id,
                                                                  os.path.realpath(spec.cwd), code.network, docker))

    def _runner_env(self, tmp: Optional[str]) -> dict[str, str]:
        """Set after the tags: where the worker's hooks find this runner (see the docstring)."""
        env = {HOME_VAR: self.home}
        if tmp is not None:
            env["TMPDIR"] = tmp  # its private temp dir, the one writable place besides the worktree
            env[SANDBOXED_TAG] = "1"
        port: Optional[str] = os.environ.get(PORT_VAR)
        if port:
            env[PORT_VAR] = port
        return env

    async def end_session(self, key: SessionKey) -> None:
        return None  # a worker holds nothing beyond its tree, which the manager kills

    async def close(self) -> None:
        await self.process.close()

    def snapshot(self) -> dict:
        return {"isolation": self.process.isolation,
                "sandbox": "not tested yet" if not self._probed else
                           (self.sandbox_problem or "bwrap: self-test passed")}


def mint_file(capabilities: Capabilities, home: str, cap: Capability) -> tuple[str, str]:
    """(token, the 0600 file holding it): a capability for one worker attempt, local or hosted
    for a supervisor elsewhere (runner/core/work/hosted.py). The file is in the runner's home,
    which every sandbox hides: no other worker can read it (/tmp could be read by any of them);
    a runner's start removes what a killed one left (make() below)."""
    token = capabilities.mint(cap)
    caps = os.path.join(home, "capabilities")
    os.makedirs(caps, mode=0o700, exist_ok=True)
    folder = tempfile.mkdtemp(prefix="worker-", dir=caps)
    path = os.path.join(folder, "token")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token, path


def relay_targets(environ: dict, port: Optional[int]) -> dict[int, tuple[str, int]]:
    """What a worker's loopback-only network relays: its model endpoints (its *_BASE_URL
    variables) and the runner on `port`; Unavailable when that cannot be done."""
    try:
        targets = netrelay.endpoints(environ)
    except netrelay.Unreachable as exc:
        raise Unavailable(str(exc)) from None
    if port is None or port in targets:
        raise Unavailable("the worker's network cannot reach this runner (no port file, or a model "
                          "endpoint on its port); run with --network host")
    return {**targets, port: ("127.0.0.1", port)}


def drop_file(capabilities: Capabilities, token: str, path: str) -> None:
    """The attempt is over: its capability revoked, its file gone."""
    capabilities.revoke(token)
    shutil.rmtree(os.path.dirname(path), True)


def sandbox_refusal(problem: str) -> str:
    return (f"no worker sandbox: {problem}; a person may run `plugkit work --no-sandbox` "
            "to start workers without it")


async def check_sandbox(home: Optional[str]) -> None:
    """At run start (runner/core/work/manager.py): the self-test, so a machine without a working
    sandbox refuses the run in one line instead of failing every item twice."""
    scratch = None if home else tempfile.mkdtemp(prefix="plugkit-sandbox-home-")
    try:
        problem = await asyncio.to_thread(sandbox.self_test, home or scratch)
    finally:
        if scratch:
            shutil.rmtree(scratch, True)
    if problem:
        raise Unavailable(sandbox_refusal(problem))


def runner_port(home: str) -> Optional[int]:
    """This runner's port, from its port file (the worker executor is built without it)."""
    try:
        with open(os.path.join(home, "port"), encoding="utf-8") as fh:
            return int(json.load(fh)["port"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def worker_kind(program: str) -> str:
    """The worker row whose program this is ("command" for any other): its CACHES row."""
    base = os.path.basename(program)
    return next((r.name for r in workers.WORKERS.values() if r.program == base), "command")


MAX_DEPTH = 64
_TASK_CGROUP = re.compile(r"/plugkit/([0-9a-f]{12})/[^/]+/task_(\d+)$")


def task_of(pid: int, home: str) -> tuple[Optional[int], Optional[str]]:
    """(task id, session id) of the plugkit task process `pid` belongs to, or (None, None).

    Blocking (reads /proc): call it in a thread. Its ancestry first: the first tagged process
    from it up (a worker drops PLUGKIT_TASK_ID from its own environment; its parent still has
    it). Then its cgroup, which a process cannot leave by `setsid` or a double fork: the task's
    own (`.../plugkit/<this home>/<runner>/task_<id>`), when cgroups are in use.
    """
    try:
        chain = [psutil.Process(pid)]
        chain += chain[0].parents()[:MAX_DEPTH]
    except psutil.Error:
        return None, None
    for proc in chain:
        found = tags.read_tags(proc.pid) or {}
        if found.get(tags.HOME) == tags.home_id(home) and (found.get(tags.TASK_ID) or found.get(tags.SESSION_ID)):
            task = found.get(tags.TASK_ID, "")
            return (int(task) if task.isdigit() else None), found.get(tags.SESSION_ID)
    try:
        with open(f"/proc/{pid}/cgroup", encoding="utf-8") as fh:
            lines = fh.read().splitlines()
    except OSError:
        return None, None
    for line in lines:
        m = _TASK_CGROUP.search(line.rsplit(":", 1)[-1])
        if m and m[1] == home_key(home):
            return int(m[2]), None
    return None, None


def make(ctx) -> WorkerExecutor:
    # Capability files a runner killed mid-attempt left: their tokens died with it (memory only).
    shutil.rmtree(os.path.join(ctx.home, "capabilities"), ignore_errors=True)
    return WorkerExecutor(make_process(ctx), os.path.abspath(ctx.home), getattr(ctx, "capabilities", None))


def caller_task(peer: tuple, port: int, home: str) -> tuple[Optional[int], Optional[str]]:
    """Blocking (psutil, /proc): the connection's process, then the plugkit task it belongs to."""
    pid = peers.peer_pid(peer, port)
    return task_of(pid, home) if pid is not None else (None, None)
