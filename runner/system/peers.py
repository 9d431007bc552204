"""Who is on the other end of an RPC connection: the peer's pid, its ancestry, user and terminal.

The token says only that a caller could read a file of this user; an approval must also
come from a person. So for approval.grant the runner finds the process holding the
client end of the TCP connection (the socket whose local port is the peer's port and
whose remote port is ours: psutil reads /proc/net/tcp and maps the socket inode to a
pid) and judges two things, both read from /proc, never from what the caller says:

- its ancestry: a plugkit task (tagged environment), an orphan the runner adopted as
  child subreaper (an escaped task), or an agent host (the one table, plugkit.hosts)
  anywhere above it means the agent is asking;
- the environment of each of those: the variables a host sets in its tools' shells
  (CLAUDECODE, OPENCODE, ...: the table's markers) stay in a process that detached from
  the host (setsid, a pty of its own) unless it clears them;
- its controlling terminal (/proc/PID/stat tty_nr): a person types at one. A process
  with none (setsid, a tool's pipe, a daemon) is not a person; and every process of the
  session holding that terminal is checked like the ancestry, so an agent host running
  in the terminal (or a task that opened one) holds it, not a person.

Same-uid limits, on purpose stated (README, "What the gates can and cannot stop"): a
process can fake its name, and a pseudo-terminal the agent opens in a process it
detached with its environment cleared (`setsid env -i script ...`), or keys it types into
a person's terminal (`tmux send-keys`), look like a person's.
"""

import os
import pwd
from dataclasses import dataclass
from typing import Optional

import psutil

from plugkit.hosts import host_of, marked_by
from runner.system import procstate, tags

MAX_DEPTH = 64


@dataclass(frozen=True)
class Caller:
    pid: Optional[int]
    user: str
    tty: Optional[str]
    chain: tuple[str, ...]  # "name[pid]" from the caller up
    task: Optional[str] = None  # why it is a plugkit task, when it is one
    agent: Optional[str] = None  # the agent host found above it
    agent_pid: Optional[int] = None
    shell_cmdline: tuple[str, ...] = ()  # the process right under the agent host (its tool's shell)
    ctty: bool = False  # whether the caller has a controlling terminal
    tty_holder: Optional[str] = None  # why that terminal is not a person's: who else is in its session
    marked: Optional[str] = None  # a host's marker in the environment of the caller or an ancestor


def peer_pid(peer: tuple, local_port: int) -> Optional[int]:
    """The pid holding the client end of the connection from `peer` to our `local_port`."""
    port = peer[1]
    for conn in psutil.net_connections(kind="inet"):
        if conn.laddr and conn.raddr and conn.laddr.port == port and conn.raddr.port == local_port:
            return conn.pid
    return None


def _agent(proc: psutil.Process) -> Optional[str]:
    try:
        host = host_of(proc.name(), tuple(proc.cmdline()))
    except psutil.Error:
        return None
    return host.label if host is not None else None


def _marker(proc: psutil.Process) -> Optional[str]:
    """A host's marker variable in the process's environment: a shell a host started, or a
    process that inherited its environment (detached with setsid, in a pty of its own)."""
    try:
        found = marked_by(proc.environ())
    except psutil.Error:
        return None
    return None if found is None else f"{found[1]} from {found[0].label} ({proc.pid})"


def _not_a_person(proc: psutil.Process, runner_pid: int) -> Optional[str]:
    """Why one process of a terminal's session is the agent's, or None."""
    found = tags.read_tags(proc.pid) or {}
    if found.get(tags.TASK_ID) or found.get(tags.RUNNER_ID):
        return f"plugkit task {found.get(tags.TASK_ID, '?')} ({proc.pid})"
    try:
        if proc.ppid() == runner_pid:
            return f"an orphan the runner adopted ({proc.pid})"
    except psutil.Error:
        return None
    agent = _agent(proc)
    return f"{agent} ({proc.pid})" if agent else _marker(proc)


def terminal_holder(pid: int, runner_pid: int) -> tuple[bool, Optional[str]]:
    """(has a controlling terminal, who of the agent's holds it): the session on that terminal."""
    st = procstate.stat(pid)
    if st is None or st.tty_nr == 0:
        return False, None
    for other in procstate.on_terminal(st.tty_nr):
        try:
            why = _not_a_person(psutil.Process(other), runner_pid)
        except psutil.Error:
            continue
        if why:
            return True, why
    return True, None


def _user(proc: psutil.Process) -> str:
    try:
        uid = proc.uids().real
    except psutil.Error:
        uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def describe(pid: int, runner_pid: int) -> Caller:
    """The caller's ancestry, judged: a plugkit task, an agent host, or neither."""
    proc = psutil.Process(pid)
    chain: list[str] = []
    task = agent = marked = None
    agent_pid = None
    tty = None
    below: Optional[psutil.Process] = None
    shell: Optional[psutil.Process] = None
    current: Optional[psutil.Process] = proc
    depth = 0
    while current is not None and depth < MAX_DEPTH:
        try:
            name = current.name()
        except psutil.Error:
            break
        chain.append(f"{name}[{current.pid}]")
        if tty is None:
            try:
                tty = current.terminal()
            except psutil.Error:
                pass
        found = tags.read_tags(current.pid) or {}
        if task is None and (found.get(tags.TASK_ID) or found.get(tags.RUNNER_ID)):
            task = f"{name}[{current.pid}] is plugkit task {found.get(tags.TASK_ID, '?')}"
        if task is None and current.pid == runner_pid and depth > 0:
            task = "its parent is the runner itself (an orphan the runner adopted: an escaped task)"
        if marked is None:
            marked = _marker(current)
        if agent is None:
            agent = _agent(current)
            if agent is not None:
                agent_pid = current.pid
                shell = below
        below = current
        try:
            current = current.parent()
        except psutil.Error:
            current = None
        depth += 1
    shell_cmdline: tuple[str, ...] = ()
    if agent is not None and shell is not None:
        try:
            shell_cmdline = tuple(shell.cmdline())
        except psutil.Error:
            pass
    ctty, holder = terminal_holder(pid, runner_pid)
    return Caller(pid=pid, user=_user(proc), tty=tty if ctty else None, chain=tuple(chain), task=task,
                  agent=agent, agent_pid=agent_pid, shell_cmdline=shell_cmdline, ctty=ctty, tty_holder=holder,
                  marked=marked)


def caller(peer: Optional[tuple], local_port: int, runner_pid: int) -> Optional[Caller]:
    """Blocking (scans /proc): call it in a worker thread. None when the peer is unknown."""
    if not peer:
        return None
    pid = peer_pid(peer, local_port)
    if pid is None:
        return None
    try:
        return describe(pid, runner_pid)
    except psutil.Error:
        return None


# --- the agent host a session runs in -------------------------------------------------------
# Hosts without a session-end event (`qwen -p`) leave the tasks their agent started running
# after they exit; the runner ties a session to the host process its calls come from and
# ends the session when that process is gone (runner/core/tasks/hosts.py).

@dataclass(frozen=True)
class AgentHost:
    pid: int
    create_time: float  # psutil's: with the pid, names this process even after the pid is reused
    label: str

    def alive(self) -> bool:
        """Blocking (one /proc read). A zombie counts as gone: the host has exited."""
        try:
            proc = psutil.Process(self.pid)
            return proc.create_time() == self.create_time and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False


def is_agent_host(proc: psutil.Process) -> Optional[str]:
    """Which agent host `proc` is (its label), or None: the one host table (plugkit/hosts.py),
    which also knows a host run by its interpreter through npm's bin link
    (`node .../node_modules/.bin/qwen -p ...`: comm "node", the script names the host)."""
    return _agent(proc)


def holds(pid: int, peer: tuple, local_port: int) -> bool:
    """Whether `pid` holds the client end of the connection from `peer` to our port: a caller's
    word for its pid, checked by reading that one process's sockets (a few ms, where finding
    the holder among every process, as peer_pid does, costs tens)."""
    try:
        return any(c.laddr and c.raddr and c.laddr.port == peer[1] and c.raddr.port == local_port
                   for c in psutil.Process(pid).net_connections(kind="inet"))
    except psutil.Error:
        return False


def agent_host(peer: Optional[tuple], local_port: int, pid: int) -> Optional[AgentHost]:
    """The nearest ancestor of the caller's process `pid` (a hook or the CLI) that is an agent
    host; None for a person's terminal, a pid that does not hold this connection, or a process
    already gone. Blocking."""
    if not peer or not holds(pid, peer, local_port):
        return None
    try:
        current: Optional[psutil.Process] = psutil.Process(pid).parent()
        for _ in range(MAX_DEPTH):
            if current is None or current.pid <= 1:
                return None
            label = is_agent_host(current)
            if label is not None:
                return AgentHost(current.pid, current.create_time(), label)
            current = current.parent()
    except psutil.Error:
        return None
    return None
