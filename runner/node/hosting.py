"""The node side's seat at its node's own runner: start it, have it run the attempt's worker as
its task, read that task's output, heartbeats and end, end it (the runner's end:
runner/rpc/work_host.py).

Plugkit's own code running as the node's user, so it uses that runner's real token; the worker
never does (it is shown the capability its worker task is minted). Standard library and plugkit's kernel
only, like task.py: its calls go through plugkit.wire, the one small RPC client the `plugkit`
client uses too (the runner never imports the client).
"""

import os
import socket
import subprocess
import sys
from typing import Any, Optional

from plugkit import codec, locks, paths
from plugkit.protocol.node import NodeAttempt, parse
from plugkit.protocol.work_host import WorkRead, WorkReadParams, WorkRunning, WorkRunParams
from plugkit.vocab import HOME_TAG
from plugkit.wire import Connection

RPC_TIMEOUT_S = 10.0
RUN_TIMEOUT_S = 120.0  # work.run: the sandbox's self-test and its home copied, on a loaded node
PORT_VAR = "PLUGKIT_PORT"
PORT_FILE = "runner-port"  # in the node's directory


class NodeRunnerError(RuntimeError):
    pass


def start(home: str, cwd: str, root: str) -> str:
    """The node's runner, started if it is not running; its port. Its environment is the node's
    own (`ray start`'s), never the worker's: a sandboxed client never starts one. Its port is
    PLUGKIT_PORT of `ray start` when set, else one chosen for this node and kept in its directory
    (PORT_FILE), chosen again when another process took it."""
    port = os.environ.get(PORT_VAR) or _kept_port(root, fresh=False)
    try:
        call(home, "runner.info", {})
        return _running_port(home, port)  # up and answering its token: no client process to spawn on every attempt
    except NodeRunnerError:
        pass
    # One start at a time: the attempts of a wave arriving on a cold node would each spawn a
    # `plugkit runner start` (a second of a loaded core each) for the one runner the first starts.
    with locks.file_lock(os.path.join(root, "runner-start.lock")):
        try:
            call(home, "runner.info", {})
            return _running_port(home, port)
        except NodeRunnerError:
            return _start(home, cwd, root, port)


def _start(home: str, cwd: str, root: str, port: str) -> str:
    for tries_left in (1, 0):
        done = subprocess.run([sys.executable, "-P", "-m", "client.cli", "runner", "start"], cwd=cwd,
                              env={**os.environ, HOME_TAG: home, PORT_VAR: port}, stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)
        if done.returncode == 0:
            return port
        if tries_left and not os.environ.get(PORT_VAR):
            port = _kept_port(root, fresh=True)  # taken since it was chosen (another user's runner, say)
    raise NodeRunnerError(f"plugkit runner start on the node failed: "
                          f"{(done.stderr.strip().splitlines() or ['no output'])[-1][:300]}")


def _running_port(home: str, fallback: str) -> str:
    try:
        with open(paths.port_file(home)) as fh:
            return str(int(codec.loads(fh.read())["port"]))
    except (OSError, ValueError, KeyError, TypeError):
        return fallback


def _kept_port(root: str, fresh: bool) -> str:
    """The port kept for this node's runner in its directory, or a free one chosen and kept."""
    path = os.path.join(root, PORT_FILE)
    if not fresh:
        try:
            with open(path) as fh:
                return str(int(fh.read().strip()))
        except (OSError, ValueError):
            pass
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = str(sock.getsockname()[1])
    with open(path + ".tmp", "w") as fh:
        fh.write(port)
    os.replace(path + ".tmp", path)
    return port


def call(home: str, method: str, params: dict, timeout: float = RPC_TIMEOUT_S) -> Any:
    """One JSON-RPC call to the runner whose home this is (plugkit.wire: the client's own way of
    calling its runner); its result, or NodeRunnerError."""
    try:
        with open(paths.port_file(home)) as fh:
            port = int(codec.loads(fh.read())["port"])
        with open(paths.token_file(home)) as fh:
            token = fh.read().strip()
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise NodeRunnerError(f"the node's runner is not up ({exc.__class__.__name__})") from None
    try:
        conn = Connection(port, timeout=timeout)
        try:
            status, payload = conn.rpc(token, 1, method, params)
        finally:
            conn.close()
        answer = codec.loads(payload)
        if status != 200 or not isinstance(answer, dict):
            raise ValueError(f"HTTP {status}")
    except (OSError, ValueError) as exc:
        raise NodeRunnerError(f"{method} on the node's runner: {exc.__class__.__name__}") from None
    if "error" in answer:
        raise NodeRunnerError(f"{method} on the node's runner: {str(answer['error'].get('message', '?'))[:300]}")
    return answer.get("result")


def run(home: str, wt: str, spec: NodeAttempt, env: dict[str, str], argv: list[str], stdin: str) -> WorkRunning:
    """The attempt's worker started as a task of the node's runner (work.run), tied to this
    process's life: when the Ray worker process running the attempt ends, that runner kills it."""
    params = WorkRunParams(
        worktree=wt, session_id=spec.session, run=spec.run, item=spec.item, attempt=spec.attempt,
        branch=spec.branch, base=spec.base, owner_pid=os.getpid(), network=spec.network,
        argv=argv, stdin=stdin, env=env, sandbox=spec.sandbox)
    return parse(WorkRunning, call(home, "work.run", params.model_dump(), RUN_TIMEOUT_S),
                 "work.run answer of the node's runner")


def read(home: str, session: str, cursor: int, wait_s: float) -> Optional[WorkRead]:
    """The worker's output from cursor, its heartbeat and its end (work.read, waiting up to
    wait_s for news); None when the node's runner does not answer or no longer runs it."""
    try:
        result = call(home, "work.read", WorkReadParams(session_id=session, cursor=cursor, wait_s=wait_s).model_dump(),
                      RPC_TIMEOUT_S + wait_s)
    except NodeRunnerError:
        return None
    return parse(WorkRead, result, "work.read answer of the node's runner")


def unhost(home: str, session: str) -> None:
    """The worker's task killed with its whole tree (answered once it is gone), its capability
    revoked, the hosting ended."""
    try:
        call(home, "work.unhost", {"session_id": session}, RUN_TIMEOUT_S)
    except NodeRunnerError:
        pass  # a runner that is gone hosts nothing: its capabilities died with it
