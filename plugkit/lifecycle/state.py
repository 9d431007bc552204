"""`.plugkit/state.json`: phase, mutables, transition history, approvals — one workspace's gates.

In the runner (ws.ledger set) the state lives in the runner's ledger and this file is its
view (plugkit.lifecycle.authority); what follows describes the file-only model the pure
library and its tests use.

Read from disk on every call (no cache), so a runner restart, or a second runner, loses
nothing. Writes happen only inside `transaction()`: workspace lock, re-read, change,
atomic replace. A missing file is a fresh PLAN state (nothing is written until something
changes). A file that does not parse is moved aside to `state.json.corrupt-<time>`, logged
as an error and noted in the fresh state's `notices`, so a person sees it in
`plugkit gate status` instead of finding the workspace silently reset.
"""

import contextlib
import logging
import os
import time
from typing import Any, Iterator, Literal, Optional

from pydantic import BaseModel, ConfigDict, ValidationError

from plugkit.lifecycle.mutables import Mutable
from plugkit.lifecycle.workspace import Workspace, atomic_write

log = logging.getLogger("plugkit.lifecycle")

Phase = Literal["PLAN", "EXECUTE", "EMIT", "VERIFY", "COMPLETE"]
# Hooks read this file on every tool call: the history keeps its newest entries only.
MAX_HISTORY = 500
MAX_NOTICES = 5


class Transition(BaseModel):
    model_config = ConfigDict(extra="ignore")

    at: float
    from_phase: Phase
    to_phase: Phase
    trigger: str  # the forward row's name, or the backward trigger
    conditions: dict[str, Any] = {}  # name -> value when it was taken
    reason: str = ""


class Approval(BaseModel):
    model_config = ConfigDict(extra="ignore")

    item_id: str
    user: str  # the OS user of the approving process, as the runner found it
    via: str
    at: float
    channel: str = ""  # "terminal" | "host_prompt": how the runner knew a person gave it
    tty: Optional[str] = None  # the terminal it came from
    pid: Optional[int] = None


class EmitDecl(BaseModel):
    model_config = ConfigDict(extra="ignore")

    path: str  # relative to the workspace root
    sha256: str


class VerifyRun(BaseModel):
    """The configured verify command, started by the runner as a task of `session_id`."""

    model_config = ConfigDict(extra="ignore")

    task_id: int
    session_id: str
    started_at: float
    head: Optional[str] = None  # git HEAD when it started: a later commit makes it stale
    outcome: Optional[Literal["green", "red", "lost"]] = None  # None while it runs
    detail: str = ""
    receipt: Optional[str] = None


class State(BaseModel):
    model_config = ConfigDict(extra="ignore")

    version: int = 1
    phase: Phase = "PLAN"
    entered_at: float = 0.0
    mutables: dict[str, Mutable] = {}
    history: list[Transition] = []
    approvals: dict[str, Approval] = {}
    plan_passes: int = 0  # planning passes declared since PLAN was entered
    plan_added: list[str] = []  # mutables/items added since the last declared pass
    last_pass_added: list[str] = []  # what the last declared pass added
    emission: Optional[list[EmitDecl]] = None
    verify: Optional[VerifyRun] = None
    new_work: list[str] = []  # added while COMPLETE
    last_stop_reason: Optional[str] = None
    notices: list[str] = []

    def unknown(self) -> list[str]:
        return [m.name for m in self.mutables.values() if m.status != "KNOWN"]

    def notice(self, text: str) -> None:
        self.notices = (self.notices + [text])[-MAX_NOTICES:]


def load(ws: Workspace) -> State:
    """Without the lock: replacement is atomic, so a reader sees a whole old or new file.
    With the runner's ledger (ws.ledger), the ledger's state: the file is only its view."""
    if ws.ledger is not None:
        from plugkit.lifecycle import authority

        return authority.load(ws).state
    state = _parse(ws)
    if state is None:
        with ws.locked():
            return _read_locked(ws)
    return state


def _parse(ws: Workspace) -> Optional[State]:
    try:
        with open(ws.state_path, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return State()
    try:
        return State.model_validate_json(raw)
    except (ValidationError, ValueError):
        return None


def _read_locked(ws: Workspace) -> State:
    state = _parse(ws)
    if state is not None:
        return state
    aside = f"{ws.state_path}.corrupt-{time.strftime('%Y%m%dT%H%M%S')}-{os.getpid()}"
    os.replace(ws.state_path, aside)
    log.error("lifecycle state %s was unreadable; moved it to %s and started a fresh PLAN state",
              ws.state_path, aside)
    fresh = State()
    fresh.notice(f"state.json was unreadable: moved to {os.path.basename(aside)}; "
                 "the gates restarted from a fresh PLAN state")
    save(ws, fresh)
    return fresh


def save(ws: Workspace, state: State) -> None:
    state.history = state.history[-MAX_HISTORY:]
    atomic_write(ws.state_path, state.model_dump_json(indent=1).encode())


@contextlib.contextmanager
def transaction(ws: Workspace) -> Iterator[State]:
    """The state under the workspace lock; written back when the block ends without error.
    With the runner's ledger: read from and written to it (views follow); work items
    proposed by hand in .prd are adopted first, as new work."""
    if ws.ledger is not None:
        with ws.locked():
            state = _ledger_state_adopting(ws)
            yield state
            from plugkit.lifecycle import authority

            authority.commit(ws, state=state)
        return
    with ws.locked():
        state = _read_locked(ws)
        yield state
        save(ws, state)


def _ledger_state_adopting(ws: Workspace) -> State:
    from plugkit.lifecycle import authority, gating

    snap = authority.load(ws)
    if snap.proposed:
        for item_id in snap.proposed:
            gating.note_item_added(snap.state, item_id, time.time())
            snap.state.notice(f"{item_id} was proposed in .prd by hand and adopted as {item_id} (pending)")
        authority.commit(ws, state=snap.state, items=snap.items)
    return snap.state
