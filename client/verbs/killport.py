"""`plugkit kill-port PORT`: free a TCP port by killing its listener with its children.

Normally the runner does it (port.kill), so the rules live in one place. The
client does it itself when PORT is the runner's own port (the runner will not
kill itself, and a wedged runner cannot) or when no runner answers: then psutil
is imported here, on this path only.
"""

import json
import os

from client.args import FLAG, VALUE, Help, UsageError, parse
from client.wire.rpc import ClientError, RpcFailure, RunnerUnavailable, read_discovery
from client.verbs.runner import killed_line, running_tasks
from client.wire.session import Caller, connect
from plugkit import errors, paths

USAGE = """usage: plugkit kill-port PORT [--force] [--json]

Kills the processes listening on TCP port PORT, each with its children (TERM, a
grace, KILL), and reports their pids and commands. Without --force it kills only
this session's running tasks (and what they started) and this home's own runner;
it always refuses other users' processes and the process tree running this command."""

LOCAL_GRACE_S = 3.0  # a runner given TERM stops its tasks first; let it finish cleanly


def main(argv: list[str], me: Caller | None = None) -> int:
    """`me`: the session asking (a hook passes its own); else the CLI's, from the flags and env."""
    try:
        opts, words = parse(argv, {"--json": FLAG, "--force": FLAG, "--session": VALUE, "--cwd": VALUE},
                            min_pos=1, max_pos=1, usage=USAGE)
    except Help:
        print(USAGE)
        return 0
    port = _port(words[0])
    force = bool(opts.get("force"))
    me = me or Caller(opts)
    result = None
    if port not in _runner_ports():
        client = connect(start=False)
        if client is not None:
            try:
                result = client.call("port.kill", me.params(port=port, caller_pid=os.getpid(), force=force),
                                     timeout=30)
            except RunnerUnavailable:
                result = None  # it stopped answering mid-call: do it here instead
            except RpcFailure as exc:
                if exc.code != errors.METHOD_NOT_FOUND:
                    raise
                result = None  # a runner from before port.kill existed
            finally:
                client.close()
    if result is None:
        # The runner's own port: its tasks die with it, so name them first (it cannot once gone).
        live = _runner_tasks() if port in _runner_ports() else []
        result = kill_locally(port, force)
        result["tasks"] = live
    if opts.get("json"):
        print(json.dumps(result))
    else:
        print(_report(result))
    return 1 if result["survivors"] else 0


def _runner_tasks() -> list[dict]:
    client = connect(start=False)
    if client is None:
        return []
    try:
        return running_tasks(client)
    finally:
        client.close()


def _port(word: str) -> int:
    if not word.isdigit() or not 0 < int(word) < 65536:
        raise UsageError(f"{word!r} is not a TCP port (1-65535); e.g. plugkit kill-port 8080")
    return int(word)


def _runner_ports() -> set[int]:
    found = set()
    try:
        found.add(paths.port())
    except ValueError:
        pass
    discovery = read_discovery()
    if discovery:
        found.add(discovery[0])
    return found


def _report(result: dict) -> str:
    port = result["port"]
    if not result["killed"]:
        return f"nothing listens on port {port}; it is free"
    lines = []
    runner_pid = result.get("runner_pid")
    for k in result["killed"]:
        kids = k["processes"] - 1
        extra = f" and {kids} child process{'es' if kids != 1 else ''}" if kids else ""
        command = " ".join(k["command"].split())  # `python -c` programs carry newlines
        lines.append(f"killed pid {k['pid']} ({command}){extra}")
        if k["pid"] == runner_pid:
            lines.append("  that was the plugkit runner; the next plugkit command starts a fresh one")
            said = killed_line(result.get("tasks") or [])
            if said:
                lines.append(said)
    if result["survivors"]:
        lines.append(f"still alive after SIGKILL: pid {', '.join(map(str, result['survivors']))}; "
                     f"port {port} may still be held (see `ps -p PID`)")
    else:
        lines.append(f"port {port} is free")
    return "\n".join(lines)


def kill_locally(port: int, force: bool = True) -> dict:
    """The same rules as the runner's port.kill, with this process (and its ancestors) spared.
    Without `force`, only this home's runner (the pid its discovery file names) is killed."""
    import psutil

    try:
        pids = {c.pid for c in psutil.net_connections(kind="tcp")
                if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port}
    except psutil.AccessDenied:
        raise ClientError("not allowed to list this machine's sockets; try `sudo ss -ltnp` to find "
                          f"the holder of port {port}") from None
    if None in pids:
        raise ClientError(f"port {port} is held by a process plugkit cannot see (another user's?); "
                          "plugkit only kills your own processes")
    me = os.getpid()
    plans = []
    for pid in sorted(pids):
        try:
            proc = psutil.Process(pid)
            command = " ".join(proc.cmdline())[:200] or proc.name()
            if proc.uids().real != os.getuid():
                raise ClientError(f"port {port} is held by pid {pid} ({command}) of user {proc.username()}; "
                                  "plugkit only kills your own processes")
            tree = [proc, *proc.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        if me in {p.pid for p in tree}:
            raise ClientError(f"port {port} is held by pid {pid} ({command}), which runs this plugkit "
                              "command; not killing it")
        plans.append((pid, command, tree))
    discovery = read_discovery()  # before the kill: a runner removes its port file as it stops
    ours = discovery[1] if discovery else None
    strangers = [(pid, command) for pid, command, _ in plans if pid != ours]
    if strangers and not force:
        pid, command = strangers[0][0], " ".join(strangers[0][1].split())[:120]
        # No runner answered, or this is its port: no session's task can be holding it.
        raise ClientError(f"port {port} is held by pid {pid} ({command}), which is neither this home's plugkit "
                          f"runner nor one of this session's tasks; `plugkit kill-port {port} --force` kills it anyway")
    survivors = _end([p for _, _, tree in plans for p in tree], LOCAL_GRACE_S)
    return {"port": port, "local": True, "runner_pid": discovery[1] if discovery else None,
            "killed": [{"pid": pid, "command": command, "processes": len(tree)} for pid, command, tree in plans],
            "survivors": survivors}


def _end(procs: list, grace_s: float) -> list[int]:
    import signal
    import time

    import psutil

    def gone(p) -> bool:
        try:
            return p.status() == psutil.STATUS_ZOMBIE  # a zombie holds no socket
        except psutil.NoSuchProcess:
            return True

    for sig in (signal.SIGTERM, signal.SIGKILL):
        for proc in procs:
            try:
                proc.send_signal(sig)
            except psutil.Error:
                pass
        deadline = time.monotonic() + grace_s
        while procs and time.monotonic() < deadline:
            procs = [p for p in procs if not gone(p)]
            time.sleep(0.01)
        procs = [p for p in procs if not gone(p)]
        if not procs:
            break
    return [p.pid for p in procs]
