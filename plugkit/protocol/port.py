"""port.* — freeing a TCP port. Params and results as pydantic models (the wire contract)."""

from typing import Optional

from pydantic import Field

from plugkit.protocol import PID_MAX, Cwd, Params, Result


# --- port.* ------------------------------------------------------------------

class PortKillParams(Params):
    port: int = Field(ge=1, le=65535)
    # The plugkit command asking: a listener whose tree holds it is refused,
    # so `kill-port` never kills the agent (or shell) that typed it.
    caller_pid: Optional[int] = Field(default=None, ge=1, le=PID_MAX)
    # The caller's session: a listener that is not one of its running tasks (or their
    # descendants) is refused unless `force`, so a typo'd port never kills a stranger's server.
    session_id: Optional[str] = Field(default=None, max_length=256)
    cwd: Optional[Cwd] = None
    force: bool = False


class KilledProcess(Result):
    pid: int
    command: str
    processes: int  # the listener and its descendants that were signalled


class PortKillResult(Result):
    port: int
    killed: list[KilledProcess]  # empty: nothing was listening
    survivors: list[int] = []  # pids still alive after TERM, grace and KILL
