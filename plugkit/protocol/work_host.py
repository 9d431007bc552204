"""work.host, work.beats, work.unhost — a node's runner hosting an attempt placed on it by a
supervisor elsewhere (`plugkit work --runtime ray`): the wire contract.

Called by plugkit's own node-side code (runner/node/task.py) with the node
runner's token, never by a worker (a worker's capability is refused them: runner/rpc/scope.py).
"""

from typing import Annotated, Optional

from pydantic import Field

from plugkit.protocol import Cwd, Params, Result, SessionId
from plugkit.protocol.lifecycle import ItemId
from plugkit.protocol.work import Network

Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]  # sha1 or sha256 object names


class WorkHostParams(Params):
    worktree: Cwd  # the attempt's worktree on this node
    session_id: str = SessionId  # the worker's session tag (its hooks carry it as worker_session)
    run: str = Field(min_length=1, max_length=64)
    item: str = ItemId
    attempt: int = Field(ge=1, le=1000)
    branch: str = Field(min_length=1, max_length=255)
    base: Sha  # the commit the attempt started from: its Stop counts commits ahead of it
    owner_pid: int = Field(ge=1)  # the node-side process holding the attempt: gone, the hosting ends
    network: Network = "host"  # the run's; "loopback-model": this runner holds the worker's relay
    # The worker's model endpoints (its *_BASE_URL variables): what its relay reaches besides this runner.
    base_urls: dict[Annotated[str, Field(max_length=256, pattern=r"_BASE_URL$")],
                    Annotated[str, Field(max_length=2048)]] = Field(default={}, max_length=32)


class WorkRelay(Result):
    folder: str  # the relay's sockets and the sandbox's /etc/hosts (netrelay.namespace_args binds them)
    ports: list[int]  # the loopback ports the inside half listens on (netrelay.wrap)


class WorkHosted(Result):
    capability: str  # a 0600 file holding the worker's capability, shown at the token's path in its sandbox
    relay: Optional[WorkRelay] = None  # network "loopback-model" only


class WorkHostedRef(Params):
    session_id: str = SessionId


class WorkBeats(Result):
    beats: int = 0  # the worker's hook calls this runner has answered so far
    hosted: bool = False  # False: not hosted here (never, unhosted, or its owner gone)
    refusals: int = 0  # its calls its capability was refused, ever
    refused: list[str] = []  # the last of them, newest last (what each tried)


class WorkUnhosted(Result):
    unhosted: bool
