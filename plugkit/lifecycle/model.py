"""The gates' state of one workspace as pydantic models: phase, mutables, transition history,
approvals, the declared emission, the verify run. Models only: where they are stored
(`.plugkit/state.json`, or the runner's ledger) is plugkit.lifecycle.state's and
plugkit.lifecycle.authority's business, and both import these from here.
"""

from typing import Any, Literal, Optional

from pydantic import BaseModel, ConfigDict

from plugkit.lifecycle.mutables import Mutable

Phase = Literal["PLAN", "EXECUTE", "EMIT", "VERIFY", "COMPLETE"]
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


class CiRun(BaseModel):
    """CI on one commit as the runner itself confirmed it (`plugkit gate ci`): never from the agent."""

    model_config = ConfigDict(extra="ignore")

    sha: str
    provider: str  # local | github | gitlab
    state: Literal["green", "red", "pending", "error"]
    note: str = ""  # one line: which run, or which job failed, or why it could not be asked
    at: float = 0.0


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
    # item id -> the git HEAD it first went in_progress at: its check is held to that commit's
    # (runner/core/gates/weaken.py) until it completes.
    item_bases: dict[str, str] = {}
    ci: Optional[CiRun] = None  # the last CI confirmation (`ci` in .plugkit/config.toml)

    def unknown(self) -> list[str]:
        return [m.name for m in self.mutables.values() if m.status != "KNOWN"]

    def notice(self, text: str) -> None:
        self.notices = (self.notices + [text])[-MAX_NOTICES:]
