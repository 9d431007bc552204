"""SessionRegistry: sessions are (session_id, workspace root of the cwd); each owns its tasks.

The root, not the cwd: Claude Code remembers a `cd` between Bash calls and sends the new
directory, so keyed by cwd an agent lost its tasks after `cd pkg` and its SessionEnd from
`pkg/` killed nothing. Keyed by root, one agent moves around its project, two agents (two
ids) in one directory stay apart, and where there is no workspace the cwd is its own root.

Lookups that fail for any reason — unknown id, another session's id, an empty
session id — raise the same NotFound, so no caller can probe for other sessions.
"""

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

from plugkit.refusals import NotFound
from plugkit.workspace import root_or_none
from runner.core.tasks.kept import FinishedTasks
from runner.core.tasks.task import SessionKey, Task


def not_found(task_id: int) -> NotFound:
    return NotFound(f"no task_{task_id} in this session",
                    {"next": "plugkit exec:tasks lists this session's tasks"})


def session_root(cwd: str) -> str:
    """The workspace root of `cwd` (plugkit/workspace.py's rule), else realpath(cwd): also for
    /, $HOME and $PLUGKIT_HOME, which are never a workspace but may still run tasks."""
    return root_or_none(cwd) or os.path.realpath(cwd)


def session_key(session_id: str, cwd: str) -> SessionKey:
    return SessionKey(session_id, session_root(cwd))


def session_key_at(session_id: str, real_cwd: str, workspace: Optional[str]) -> SessionKey:
    """session_key, with realpath(cwd) and its root_or_none already found (task.exec finds it once)."""
    return SessionKey(session_id, workspace or real_cwd)


@dataclass(eq=False)
class Session:
    key: SessionKey
    tasks: dict[int, Task] = field(default_factory=dict)
    last_activity: float = field(default_factory=time.monotonic)
    host: Any = None  # the agent host process it is tied to (runner/core/tasks/hosts.py)
    host_asked: bool = False


class SessionRegistry:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions: dict[SessionKey, Session] = {}
        self.kept = FinishedTasks()  # every session's finished tasks in memory, oldest first out
        self.clock = clock

    def __len__(self) -> int:
        return len(self._sessions)

    def sessions(self) -> list[Session]:
        return list(self._sessions.values())

    def find(self, key: SessionKey) -> Session | None:
        session = self._sessions.get(key)
        if session is not None:
            session.last_activity = self.clock()
        return session

    def peek(self, key: SessionKey) -> Session | None:
        """The session, if any, without counting as activity."""
        return self._sessions.get(key)

    def open(self, key: SessionKey) -> Session:
        session = self.find(key)
        if session is None:
            session = self._sessions[key] = Session(key, last_activity=self.clock())
        return session

    def task(self, key: SessionKey, task_id: int) -> Task:
        session = self.find(key) if key.session_id else None
        task = session.tasks.get(task_id) if session else None
        if task is None:
            raise not_found(task_id)
        return task

    def task_held(self, task: Task) -> bool:
        """task itself is still in its session (not forgotten, not its session ended)."""
        session = self._sessions.get(task.session)
        return session is not None and session.tasks.get(task.id) is task

    def forget_task(self, task: Task) -> None:
        if self.task_held(task):  # not a later copy of it rehydrated from the ledger
            self._sessions[task.session].tasks.pop(task.id, None)
            self.kept.discard([task.id])

    def finished(self, task: Task) -> None:
        """task has finished (or came back from the ledger): held as the newest finished task;
        past the global cap the oldest leave memory (the ledger still answers for them)."""
        if task.finished and self.task_held(task):
            for old in self.kept.add(task):
                self.forget_task(old)

    def trim_finished(self, session: Session, keep: int) -> None:
        """The per-session cap: the session's oldest finished tasks beyond `keep` leave memory."""
        if len(session.tasks) <= keep:  # every exec asks: most sessions hold fewer
            return
        finished = [t for t in session.tasks.values() if t.finished]
        for old in finished[:max(0, len(finished) - keep)]:
            self.forget_task(old)

    def close(self, key: SessionKey) -> Session | None:
        session = self._sessions.pop(key, None)
        if session is not None:
            self.kept.discard(session.tasks)
        return session

    def idle(self, idle_s: float) -> list[Session]:
        """Sessions untouched for idle_s with no unfinished task (polling counts as a touch)."""
        cutoff = self.clock() - idle_s
        return [s for s in self._sessions.values()
                if s.last_activity < cutoff and all(t.finished for t in s.tasks.values())]

    def all_tasks(self) -> list[Task]:
        return [t for s in self._sessions.values() for t in s.tasks.values()]
