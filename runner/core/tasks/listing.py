"""What listings say of tasks beyond their state: the code's first line, live CPU and memory,
the TCP ports a running tree listens on, and which task `last` names. A mixin of TaskManager."""

import asyncio
from typing import Optional

from runner.core.tasks.hosts import HostTies
from runner.core.tasks.recall import LedgerRecall
from runner.core.tasks.sessions import SessionRegistry, session_key
from runner.core.tasks.task import Task
from runner.system import ports


def usage_fields(task: Task) -> dict:
    """cpu_s and memory (in use while it runs) where the task's cgroup measures it."""
    usage = task.usage_probe() if task.usage_probe is not None else None
    if usage is None:
        return {}
    return {"cpu_s": usage.cpu_s, "memory_peak_bytes": usage.memory_peak_bytes,
            "memory_bytes": getattr(usage, "memory_bytes", None)}


COMMAND_CHARS = 60  # of a task's first line, what listings show


def first_line(code: str) -> str:
    """The code's first non-blank line, cut to COMMAND_CHARS (`...` marks the cut or more lines)."""
    lines = [line.strip() for line in code.strip().splitlines()]
    line = lines[0] if lines else ""
    more = len(lines) > 1
    if len(line) > COMMAND_CHARS:
        line, more = line[:COMMAND_CHARS - 3].rstrip(), True
    return line + (" ..." if more else "")


class TaskListing(LedgerRecall):
    """Over the manager's session registry, host ties and ledger recall (list_with_history)."""

    _registry: SessionRegistry
    hosts: HostTies

    async def listening_ports(self, tasks: list[Task]) -> dict[int, list[int]]:
        """task id -> the TCP ports its running process tree listens on (a thread reads /proc)."""
        roots = {t.id: t.pid for t in tasks if not t.finished and t.pid}
        if not roots:
            return {}
        return await asyncio.to_thread(ports.listening, roots)

    async def last_finished(self, session_id: str, cwd: str, peer: Optional[tuple],
                            caller_pid: Optional[int]) -> Optional[int]:
        """The newest finished task of the caller's session, or of a session in the same workspace
        tied to the agent host the caller runs under: a host's hooks run its exec: calls in the
        host's session while its shell's plugkit may name another (Qwen Code sets no
        PLUGKIT_SESSION), and to the agent both are "this session". None: no finished task."""
        ended = [t.id for t in await self.list_with_history(session_id, cwd) if t.finished]
        host = await self.hosts.host_of(peer, caller_pid)
        if host is not None:
            root = session_key(session_id, cwd).root
            ended += [t.id for s in self._registry.sessions()
                      if s.key.root == root and s.host is not None and s.host.pid == host.pid
                      for t in s.tasks.values() if t.finished]
        return max(ended, default=None)
