"""What passes between the runner's Ray placement, its driver process and the Ray task on a node
(`plugkit work --runtime ray`): the driver's program name and exit codes, and one model per message.

    runner (RayPlacement) --DriverSpec (0600 file)--> driver --its path--> gateway --NodeAttempt (Ray arg)--> node task
    runner <--Record (file)-- gateway <--NodeEvent stream (Ray generator)-- node task
                              gateway <--Proof, NodeFacts (Ray tasks)-- node

Each side validates what it receives (never what it sends alone): unknown fields are refused,
so a node, a driver or a runner of another plugkit version fails with a message naming the
field rather than acting on half of what was meant. Bytes travel through Ray's object store as
plain data (model_dump), never pickled classes of ours.
"""

from typing import Annotated, Literal, Optional, Union

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from plugkit.protocol import Cwd, Environment
from plugkit.protocol.lifecycle import ItemId
from plugkit.protocol.work import Network, WorkerName

# The driver: a process the runner starts as the attempt's worker task (runner/node/driver.py),
# relaying to the gateway, the runner's one Ray driver per cluster (runner/node/gateway.py).
# Named, not imported: the runner's core never loads Ray nor the node side's code.
DRIVER_MODULE = "runner.node.driver"
GATEWAY_MODULE = "runner.node.gateway"

NODE_LOST_RC = 75  # the node went away: the attempt is killed/node_lost and placed again
CLUSTER_RC = 76  # the cluster could not be reached or refused the task: a spawn failure
BAD_OBJECTS_RC = 77  # the worker wrote a forged or corrupt object on its node: the item is held

Sha = Annotated[str, Field(pattern=r"^[0-9a-f]{40}([0-9a-f]{24})?$")]  # a sha1 or sha256 object name
Branch = Annotated[str, Field(min_length=1, max_length=255, pattern=r"^[^\x00-\x20~^:?*\[\\]+$")]
Why = Annotated[str, Field(max_length=4096)]  # a reason, shown to a person


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)


class Attempt(Message):
    """What every side knows of the attempt: whose it is, what runs, where it came from."""

    repo_key: str = Field(min_length=1, max_length=4096)  # the supervisor's workspace: the node's clone is keyed by it
    branch: Branch
    local_worktree: Cwd  # the supervisor's worktree: argv and stdin naming it are rewritten to the node's
    argv: list[Annotated[str, Field(max_length=1 << 20)]] = Field(min_length=1, max_length=4096)
    stdin: str = Field(default="", max_length=16 << 20)  # the prompt
    env: Environment  # the worker's scoped environment (cluster.NEVER_TRAVELS already left out)
    session: str = Field(min_length=1, max_length=256)  # the worker's session tag
    run: str = Field(min_length=1, max_length=64)
    item: str = ItemId
    attempt: int = Field(ge=1, le=1000)
    sandbox: bool = True  # False only for a person's --no-sandbox
    network: Network = "host"
    kind: WorkerName  # the worker host (its sandbox's config dirs)
    install: Optional[list[Annotated[str, Field(max_length=256)]]] = Field(default=None, max_length=16)
    hooks_file: Optional[str] = Field(default=None, max_length=256)  # where install writes, kept out of git


class DriverSpec(Attempt):
    """The runner to its driver (RayPlacement.launch -> driver.py): a 0600 file read once."""

    cluster: str = Field(min_length=1, max_length=1024)  # the Ray address
    record: Cwd  # the file the gateway keeps the Record in (absolute)
    gateway: Cwd  # the gateway's socket (absolute), in the runner's 0700 placement directory


class Identity(Message):
    """The project's committer identity (a bundle carries no config): the worker commits on the
    node as it would here."""

    name: str = Field(default="", max_length=1024)  # user.name
    email: str = Field(default="", max_length=1024)  # user.email


class NodeAttempt(Attempt):
    """The driver to the Ray task on the node (runner/node/task.py attempt)."""

    base: Sha  # the commit the attempt starts from (the supervisor worktree's HEAD)
    identity: Identity = Identity()  # the project's committer, as git config here says it


class Record(Message):
    """The driver to the runner (a file RayPlacement.seen reads while the attempt runs): where it
    runs, its heartbeat, what its node refused. Rewritten whole (os.replace) on every change."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    ray_task: Optional[str] = Field(default=None, max_length=128)
    node: Optional[str] = Field(default=None, max_length=128)
    node_ip: Optional[str] = Field(default=None, max_length=256)
    node_dir: Optional[str] = Field(default=None, max_length=4096)
    beats: int = Field(default=0, ge=0)  # the worker's hook calls its node's runner answered so far
    refused: list[Annotated[str, Field(max_length=4096)]] = []  # its calls refused there, oldest first
    refused_nodes: dict[Annotated[str, Field(max_length=256)], Why] = {}  # nodes that failed the challenge: why
    bad_objects: Optional[Why] = None  # why the node held what the worker wrote


# --- the node task's stream, one event per yield -------------------------------

class At(Message):
    kind: Literal["node"] = "node"
    node: str = Field(min_length=1, max_length=128)  # the Ray node id
    ip: str = Field(max_length=256)
    dir: str = Field(max_length=4096)  # the node's plugkit directory
    pid: int = Field(default=0, ge=0)  # the Ray worker process running the attempt (warm: the same between attempts)


class Out(Message):
    kind: Literal["out"] = "out"
    data: bytes = Field(max_length=1 << 20)  # a chunk of the worker's output


class Beat(Message):
    kind: Literal["beat"] = "beat"
    beats: int = Field(ge=0)  # a count, not a time: the machines' clocks differ


class Refused(Message):
    kind: Literal["refused"] = "refused"
    calls: list[Annotated[str, Field(max_length=4096)]] = Field(max_length=1000)


class Lost(Message):
    kind: Literal["lost"] = "lost"
    why: Why  # the node's runner hosting the attempt died or restarted under it


class BadObjects(Message):
    kind: Literal["bad_objects"] = "bad_objects"
    why: Why


class Done(Message):
    kind: Literal["done"] = "done"
    rc: int
    bundle: Optional[bytes] = None  # a thin bundle of the worker's new commits; None: none


NodeEvent = Annotated[Union[At, Out, Beat, Refused, Lost, BadObjects, Done], Field(discriminator="kind")]
_EVENT = TypeAdapter(NodeEvent)


# --- the node's answers to the driver's and doctor's questions ------------------

class Proof(Message):
    """A node's answer to the node-key challenge (runner/node/auth.py)."""

    uid: int
    answer: Optional[str] = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    why: Optional[Why] = None  # why it cannot answer (no key, a key others can read)


class NodeFacts(Message):
    """What `plugkit doctor`'s probe finds on a node (runner/node/probe.py)."""

    plugkit: Optional[str] = None
    python: str
    git: bool
    dir: str
    at: float
    hosts: dict[str, str] = {}  # the worker hosts on its PATH, with their versions
    proof: Proof


Have = TypeAdapter(list[Sha])  # the commits a node's clone holds refs to: what need not travel


class Malformed(ValueError):
    """A message that does not fit its model: one line naming the message and the fields."""


SAME_PLUGKIT = "the runner, driver and node must run the same plugkit; `plugkit doctor` shows each node's version"


def parse(model, raw: object, what: str, hint: str = SAME_PLUGKIT):
    """raw (a dict, or JSON text) as `model` (a Message class or a TypeAdapter), or Malformed
    naming `what`, the first fields that do not fit and `hint` (the next thing to do)."""
    adapter = model if isinstance(model, TypeAdapter) else None
    try:
        if isinstance(raw, (str, bytes)):
            return adapter.validate_json(raw) if adapter else model.model_validate_json(raw)
        return adapter.validate_python(raw) if adapter else model.model_validate(raw)
    except ValidationError as exc:
        fields = "; ".join(f"{'.'.join(str(p) for p in e['loc']) or 'message'}: {e['msg']}"
                           for e in exc.errors()[:3])
        raise Malformed(f"a malformed {what} ({fields}): {hint}") from None


def event(raw: object) -> Union[At, Out, Beat, Refused, Lost, BadObjects, Done]:
    """One event of the node task's stream, checked."""
    return parse(_EVENT, raw, "event from the node")
