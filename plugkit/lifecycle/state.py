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
from typing import Iterator, Optional

from pydantic import ValidationError

from plugkit import confined
from plugkit.lifecycle import authority, items_view, phases
# The models live in plugkit.lifecycle.model (authority and phases need them, and this module
# needs those two); every caller has always taken them from here.
from plugkit.lifecycle.model import (MAX_NOTICES, Approval, EmitDecl, Phase, State, Transition,  # noqa: F401
                                     CiRun, VerifyRun)
from plugkit.lifecycle.workspace import Workspace, atomic_write

log = logging.getLogger("plugkit.lifecycle")

# Hooks read this file on every tool call: the history keeps its newest entries only.
MAX_HISTORY = 500


def load(ws: Workspace) -> State:
    """Without the lock: replacement is atomic, so a reader sees a whole old or new file.
    With the runner's ledger (ws.ledger), the ledger's state: the file is only its view."""
    if ws.ledger is not None:
        return authority.load(ws, items=False).state
    state = _parse(ws)
    if state is None:
        with ws.locked():
            return _read_locked(ws)
    return state


def _parse(ws: Workspace) -> Optional[State]:
    try:
        with confined.open_beneath(ws.root, ws.state_path) as fh:  # never through a link, never a FIFO
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
        with ws.locked(), items_view.writing(ws):
            state = _ledger_state_adopting(ws)
            yield state
            authority.commit(ws, state=state)
        return
    with ws.locked():
        state = _read_locked(ws)
        yield state
        save(ws, state)


def _ledger_state_adopting(ws: Workspace) -> State:
    snap = authority.load(ws, items=False)  # items are read only when .prd holds proposals
    if snap.proposed:
        for item_id in snap.proposed:
            phases.note_item_added(snap.state, item_id, time.time())
            snap.state.notice(f"{item_id} was proposed in .prd by hand and adopted as {item_id} (pending)")
        authority.commit(ws, state=snap.state, items=snap.items)
    return snap.state
