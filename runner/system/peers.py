"""Who is on the other end of an RPC connection: the peer's pid, its ancestry, user and terminal.

The token says only that a caller could read a file of this user; an approval must also
come from a person. So for approval.grant the runner finds the process holding the
client end of the TCP connection (the socket whose local port is the peer's port and
whose remote port is ours: psutil reads /proc/net/tcp and maps the socket inode to a
pid) and walks its parents. A plugkit task anywhere in that chain (tagged environment),
an orphan the runner adopted as child subreaper (an escaped task), or a known agent
host (Claude Code, Codex, ...) means the agent is asking, not a person.

Same-uid limits, on purpose stated: a process can fake its name, detach from its
parents (setsid + double fork lands on the runner, which is caught; `systemd-run` or
`at` land elsewhere), or clear its environment. This catches the easy paths and is
recorded; the README says what a real boundary needs.
"""

import os
import pwd
from dataclasses import dataclass
from typing import Optional

import psutil

from runner.system import tags

# (label, process names, command-line fragments): a row per agent host. Names are what
# /proc/PID/comm shows; fragments catch node-launched CLIs whose comm is just "node".
AGENT_HOSTS: tuple[tuple[str, frozenset[str], tuple[str, ...]], ...] = (
    ("Claude Code", frozenset({"claude"}), ("@anthropic-ai/claude-code", "/claude-code/cli")),
    ("Qwen Code", frozenset({"qwen"}), ("@qwen-code/qwen-code",)),
    ("Gemini CLI", frozenset({"gemini"}), ("@google/gemini-cli",)),
    ("Codex CLI", frozenset({"codex"}), ("@openai/codex", "codex-cli")),
)
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


def peer_pid(peer: tuple, local_port: int) -> Optional[int]:
    """The pid holding the client end of the connection from `peer` to our `local_port`."""
    port = peer[1]
    for conn in psutil.net_connections(kind="inet"):
        if conn.laddr and conn.raddr and conn.laddr.port == port and conn.raddr.port == local_port:
            return conn.pid
    return None


def _agent(proc: psutil.Process) -> Optional[str]:
    try:
        name = proc.name()
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return None
    for label, names, fragments in AGENT_HOSTS:
        if name in names or any(f in cmdline for f in fragments):
            return label
        if os.path.basename(cmdline.split(" ", 1)[0]) in names:
            return label
    return None


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
    task = agent = None
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
    return Caller(pid=pid, user=_user(proc), tty=tty, chain=tuple(chain), task=task, agent=agent,
                  agent_pid=agent_pid, shell_cmdline=shell_cmdline)


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


INTERPRETERS = frozenset({"node", "bun", "deno"})


def is_agent_host(proc: psutil.Process) -> Optional[str]:
    """Which agent host `proc` is (its label), or None. The one place the session tie asks;
    repoint it at a shared host table when there is one. Besides _agent's rule, a host run
    by its interpreter through npm's bin link (`node .../node_modules/.bin/qwen -p ...`:
    comm "node", no package name on the line) is known by the script's name."""
    label = _agent(proc)
    if label is not None:
        return label
    try:
        argv = proc.cmdline()
    except psutil.Error:
        return None
    if len(argv) > 1 and os.path.basename(argv[0]) in INTERPRETERS:
        script = os.path.basename(argv[1])
        return next((row[0] for row in AGENT_HOSTS if script in row[1]), None)
    return None


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
