"""SessionRegistry: sessions are (session_id, realpath(cwd)); each owns its tasks.

Lookups that fail for any reason — unknown id, another session's id, an empty
session id — raise the same NotFound, so no caller can probe for other sessions.
"""

import os
import time
from dataclasses import dataclass, field
from typing import Callable

from plugkit.refusals import NotFound
from runner.core.tasks.task import SessionKey, Task


def not_found(task_id: int) -> NotFound:
    return NotFound(f"no task_{task_id} in this session",
                    {"next": "plugkit exec:tasks lists this session's tasks"})


def session_key(session_id: str, cwd: str) -> SessionKey:
    return SessionKey(session_id, os.path.realpath(cwd))


@dataclass(eq=False)
class Session:
    key: SessionKey
    tasks: dict[int, Task] = field(default_factory=dict)
    last_activity: float = field(default_factory=time.monotonic)


class SessionRegistry:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._sessions: dict[SessionKey, Session] = {}
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

    def close(self, key: SessionKey) -> Session | None:
        return self._sessions.pop(key, None)

    def idle(self, idle_s: float) -> list[Session]:
        """Sessions untouched for idle_s with no unfinished task (polling counts as a touch)."""
        cutoff = self.clock() - idle_s
        return [s for s in self._sessions.values()
                if s.last_activity < cutoff and all(t.finished for t in s.tasks.values())]

    def all_tasks(self) -> list[Task]:
        return [t for s in self._sessions.values() for t in s.tasks.values()]
