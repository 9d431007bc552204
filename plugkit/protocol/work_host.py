"""work.run, work.read, work.unhost — a node's runner running an attempt placed on it by a
supervisor elsewhere (`plugkit work --runtime ray`): the wire contract.

Called by plugkit's own node-side code (runner/node/task.py) with the node
runner's token, never by a worker (a worker's capability is refused them: runner/rpc/scope.py).
"""

from typing import Annotated, Optional

from pydantic import Field

from plugkit.protocol import Cwd, Environment, Offset, Params, Result, SessionId, TaskId
from plugkit.protocol.lifecycle import ItemId
from plugkit.protocol.work import Network

Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]  # sha1 or sha256 object names


class WorkRunParams(Params):
    """The attempt hosted and its worker started as a task of this runner (its worker executor:
    the sandbox, the capability, the relay, the cgroup, the kill of its tree), tied to owner_pid's life."""

    worktree: Cwd  # the attempt's worktree on this node
    session_id: str = SessionId  # the worker's session tag (its hooks carry it as worker_session)
    run: str = Field(min_length=1, max_length=64)
    item: str = ItemId
    attempt: int = Field(ge=1, le=1000)
    branch: str = Field(min_length=1, max_length=255)
    base: Sha  # the commit the attempt started from: its Stop counts commits ahead of it
    owner_pid: int = Field(ge=1)  # the node-side process holding the attempt: gone, the task is killed
    # The run's; "loopback-model": this runner holds the worker's relay to the model endpoints its
    # env's *_BASE_URL variables name, and to itself.
    network: Network = "host"
    argv: list[Annotated[str, Field(min_length=1, max_length=1 << 20)]] = Field(min_length=1, max_length=4096)
    stdin: str = Field(default="", max_length=16 << 20)  # the prompt, written then closed
    env: Environment  # the worker's whole environment (the supervisor's scopes, this node's home)
    sandbox: bool = True  # False only for a person's --no-sandbox


class WorkRunning(Result):
    task_id: int  # the worker's task on this runner (exec:tasks in its session, debug.snapshot)


class WorkReadParams(Params):
    session_id: str = SessionId
    cursor: Offset = 0  # where the last read ended (0: from the start)
    wait_s: float = Field(default=0.0, ge=0.0, le=30.0)  # until new output or the end, at most this long


class WorkRead(Result):
    """The worker's output from `cursor`, its heartbeat and its end, in one answer."""

    task_id: TaskId
    data: str = ""  # its output (stdout and stderr as they came)
    cursor: int  # the next read's
    dropped: int = 0  # bytes lost to the output cap before `cursor`
    beats: int = 0  # its calls this runner answered so far (hooks, exec:)
    refusals: int = 0  # its calls its capability was refused, ever
    refused: list[str] = []  # the last of them, newest last
    ended: bool = False  # True: the task is over and `data` held the last of its output
    state: str = "running"
    reason: Optional[str] = None
    exit_code: Optional[int] = None
    signal: Optional[int] = None


class WorkHostedRef(Params):
    session_id: str = SessionId


class WorkUnhosted(Result):
    unhosted: bool
