"""`plugkit runner start|stop|status|restart|logs`."""

import argparse
import json
import os
import sys
import time

from client.verbs.brief import BriefParser
from client.wire.instance import Holder, lock_holder, terminate, wait_gone
from client.wire.rpc import HEALTH_TIMEOUT_S, Client, ClientError, connect_verified, read_discovery
from plugkit import errors, paths
from plugkit.vocab import LIVE_STATES


def _parser() -> argparse.ArgumentParser:
    p = BriefParser(prog="plugkit runner", description="Manage the plugkit runner daemon.")
    sub = p.add_subparsers(dest="action", required=True)
    sub.add_parser("start", help="start the runner (detached) and wait until it is healthy")
    sub.add_parser("stop", help="stop the runner cleanly")
    rs = sub.add_parser("restart", help="restart in place: the installed code afresh, running tasks keep running")
    rs.add_argument("--force", action="store_true", help="stop, then start: every running task is killed")
    st = sub.add_parser("status", help="pid, port, version, uptime")
    st.add_argument("--json", action="store_true", help="print runner.info and the debug snapshot as JSON")
    st.add_argument("--watch", action="store_true", help="refresh every second until Ctrl-C")
    lg = sub.add_parser("logs", help="show the runner's log")
    lg.add_argument("-n", "--lines", type=int, default=50, help="how many lines (default 50)")
    lg.add_argument("-f", "--follow", action="store_true", help="keep printing new lines")
    lg.add_argument("--json", action="store_true", help="raw JSON lines")
    lg.add_argument("--task", help="only lines about this task (task_N or N)")
    lg.add_argument("--session", help="only lines about this session id")
    return p


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    return ACTIONS[args.action](args)


def start(args: argparse.Namespace) -> int:
    from client.wire.autostart import ensure_runner

    client = Client(ensure_runner())
    try:
        info = client.call("runner.info")
    finally:
        client.close()
    print(f"plugkit runner: running, pid {info['pid']}, port {info['port']}")
    return 0


def _format_uptime(seconds: float) -> str:
    s = int(seconds)
    h, rem = divmod(s, 3600)
    m, s = divmod(rem, 60)
    return f"{h}h {m}m {s}s" if h else (f"{m}m {s}s" if m else f"{s}s")


def _reach() -> tuple[Client | None, str]:
    """A client for the runner, or None and why not ("" when simply none answers)."""
    try:
        conn = connect_verified()
    except ClientError as exc:
        return None, str(exc)
    if conn is None:
        return None, ""
    try:
        return Client(conn), ""
    except ClientError as exc:  # an unreadable or foreign token file
        conn.close()
        return None, str(exc)


def _unreachable_line(holder: Holder) -> str:
    found = read_discovery()
    where = f"port file says {found[0]}" if found else "no readable port file"
    state = "stopped (SIGSTOP or Ctrl-Z)" if holder.stopped else f"{holder.describe()} but not answering"
    return (f"plugkit runner: pid {holder.pid} holds the lock, {state} ({where}); "
            f"`plugkit runner restart` recovers it")


def status(args: argparse.Namespace) -> int:
    if args.watch:
        return _watch(args)
    client, why = _reach()
    info = snap = None
    if client is not None:
        try:
            info = client.call("runner.info", timeout=HEALTH_TIMEOUT_S * 2)
            snap = client.call("debug.snapshot", timeout=HEALTH_TIMEOUT_S * 2)["snapshot"]
        except ClientError as exc:
            why, info = str(exc), None
        finally:
            client.close()
    if info is None:
        # Nobody answered: the instance lock says whether a runner exists all the same.
        holder = lock_holder()
        if holder is not None:
            if args.json:
                print(json.dumps({"running": True, "answering": False, "pid": holder.pid,
                                  "state": holder.describe(), "home": paths.home(), "problem": why}))
            else:
                print(_unreachable_line(holder))
                if why:
                    print(f"plugkit: {why}", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps({"running": False, "home": paths.home()}))
        else:
            print(f"plugkit runner: not running (PLUGKIT_HOME={paths.home()}); start it with `plugkit runner start`")
        return 3
    if args.json:
        print(json.dumps(dict(info, running=True, debug=snap)))
    else:
        print(render_status(info, snap, color=color_ok()))
    return 0


def _watch(args: argparse.Namespace) -> int:
    args.watch = False
    try:
        while True:
            if sys.stdout.isatty():
                sys.stdout.write("\x1b[H\x1b[2J")
            status(args)
            sys.stdout.flush()
            time.sleep(1.0)
    except KeyboardInterrupt:
        return 0


MAX_ROWS = 10


def _browser_line(browser: dict) -> str:
    if browser.get("problem"):
        return f"browser: unavailable ({browser['problem']})"
    state = f"running (pid {browser['pid']})" if browser.get("running") else "not running"
    sandbox = browser.get("sandbox") or {}
    return f"browser: {state}, sandbox {'on' if sandbox.get('on') else 'off'}: {sandbox.get('why', '?')}"


def color_ok(stream=sys.stdout) -> bool:
    """Colour and emphasis only for a person's terminal, and never under NO_COLOR (no-color.org)
    or a dumb terminal: a pipe, a log or an agent reads plain text."""
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def render_status(info: dict, snap: dict, color: bool = False) -> str:
    """A few lines for a person: the runner, then a compact table of tasks (bounded)."""
    bold, dim, reset = ("\x1b[1m", "\x1b[2m", "\x1b[0m") if color else ("", "", "")
    reaper = info.get("reaper", {})
    lines = [
        f"{bold}plugkit runner: running{reset}, pid {info['pid']}, port {info['port']}, "
        f"version {info['version']}, up {_format_uptime(info['uptime_s'])}",
        f"  sessions {info['sessions']}, tasks {info['tasks']} ({info['running_tasks']} running), "
        f"home {info['home']}",
        f"  {dim}reaper: boot killed {reaper.get('boot_killed', 0)}, strays killed "
        f"{reaper.get('strays_killed', 0)}, zombies reaped {reaper.get('zombies_reaped', 0)}; "
        f"requests {info['requests']}{reset}",
    ]
    if (info.get("browser") or {}).get("running"):  # said while it runs; `plugkit doctor` says why not
        lines.append(f"  {_browser_line(info['browser'])}")
    for ws in (snap.get("search") or {}).get("workspaces", []):  # code search's indexes (plugkit search)
        p = ws.get("indexing")
        lines.append(f"  search {ws['root']}: " + (f"indexing {p['done']}/{p['total']} files" if p
                                                   else f"{ws['files']} files indexed"))
    tasks = sorted(snap.get("tasks", []), key=lambda t: (t["state"] != "running", -t["task_id"]))
    if tasks:
        from client.show.render import task_table  # the one task table: exec:tasks prints it too

        lines += ["  " + line for line in task_table(tasks[:MAX_ROWS], session=True).splitlines()]
        if len(tasks) > MAX_ROWS:
            lines.append(f"  ... {len(tasks) - MAX_ROWS} more; `plugkit runner status --json` lists all")
    return "\n".join(lines)


def running_tasks(client) -> list[dict]:
    """The tasks a stop is about to kill, so the stop can name them (empty if it cannot ask)."""
    try:
        snap = client.call("debug.snapshot", timeout=HEALTH_TIMEOUT_S * 2)["snapshot"]
    except ClientError:
        return []
    return sorted((t for t in snap.get("tasks", []) if t["state"] in LIVE_STATES), key=lambda t: t["task_id"])


def killed_line(tasks: list[dict]) -> str:
    """`  killed with it: task_3 (session s, bash), task_9 (...)`; '' when none ran."""
    if not tasks:
        return ""
    named = ", ".join(f"task_{t['task_id']} (session {t['session_id']}, {t['lang']})" for t in tasks)
    return f"  killed with it: {named}; their records stay (killed), `plugkit exec:tasks` lists them"


def stop(args: argparse.Namespace) -> int:
    """Ask the runner to shut down; one that cannot be asked (garbage port or token file,
    stopped, wedged) is found through its instance lock and signalled instead."""
    holder = lock_holder()
    client, why = _reach()
    pid = holder.pid if holder is not None else None
    asked = False
    live: list[dict] = []
    if client is not None:
        found = read_discovery()
        pid = pid or (found[1] if found else None)
        live = running_tasks(client)
        try:
            client.call("runner.shutdown", timeout=HEALTH_TIMEOUT_S * 2)
            asked = True
        except ClientError as exc:
            why = str(exc)
        finally:
            client.close()
    if pid is None:
        print("plugkit runner: not running")
        return 0
    said = killed_line(live)
    if asked and wait_gone(pid, 5.0):
        print(f"plugkit runner: stopped (pid {pid})" + (f"\n{said}" if said else ""))
        return 0
    holder = lock_holder()
    if holder is None or holder.pid != pid:
        if wait_gone(pid, 0.5):
            print(f"plugkit runner: stopped (pid {pid})" + (f"\n{said}" if said else ""))
            return 0
        raise ClientError(f"runner pid {pid} did not stop and no longer holds the lock; `kill {pid}` ends it")
    how = terminate(holder)
    note = f" ({why.split(';')[0]})" if why else ""
    print(f"plugkit runner: {how} (pid {pid}){note}" + (f"\n{said}" if said else ""))
    return 0


RESTART_WAIT_S = 60.0  # the new image: imports, adopting the tasks, serving


def restart(args: argparse.Namespace) -> int:
    """In place: the runner re-executes itself (the installed code read afresh) and its running
    tasks keep running; what cannot cross (a browser page, a serial port, a worker) is named in
    one line. --force, or a runner that cannot be asked (wedged, stopped): stop, then start."""
    client, _why = _reach() if not args.force else (None, "")
    if client is None:
        return _stop_start(args)
    try:
        try:
            before = client.call("runner.info", timeout=HEALTH_TIMEOUT_S * 2)
        except ClientError:  # it answers /health but no call: not one to hand anything over
            client.close()
            return _stop_start(args)
        said = client.call("runner.restart", timeout=RESTART_WAIT_S)
    except ClientError as exc:
        if exc.code != errors.METHOD_NOT_FOUND:
            raise
        return _stop_start(args)  # a runner from before in-place restarts
    finally:
        client.close()
    if not _new_image(before["started_at"]):
        raise ClientError(f"runner pid {said['pid']} did not come back within {RESTART_WAIT_S:.0f} s; "
                          "`plugkit runner logs` says why, `plugkit runner restart --force` starts it afresh")
    print(f"plugkit runner: restarted in place (pid {said['pid']}); {said['message']}")
    return 0


def _new_image(started_at: float) -> bool:
    """Until runner.info answers from an image started after `started_at` (a new connection each
    time: the exec closed ours)."""
    deadline = time.monotonic() + RESTART_WAIT_S
    while time.monotonic() < deadline:
        client, _why = _reach()
        if client is not None:
            try:
                if client.call("runner.info", timeout=RESTART_WAIT_S)["started_at"] != started_at:
                    return True
            except ClientError:
                pass
            finally:
                client.close()
        time.sleep(0.05)
    return False


def _stop_start(args: argparse.Namespace) -> int:
    """Stop (every running task is killed, and named), then start."""
    stop(args)
    return start(args)


def _matches(record: dict, args: argparse.Namespace) -> bool:
    if args.task is not None and str(record.get("task_id")) != args.task.removeprefix("task_"):
        return False
    if args.session is not None and record.get("session_id") != args.session:
        return False
    return True


def _render(line: str, args: argparse.Namespace) -> str | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None if (args.task or args.session) else line.rstrip("\n")
    if not _matches(record, args):
        return None
    if args.json:
        return line.rstrip("\n")
    head = f"{record.pop('timestamp', '')} {record.pop('level', ''):7} {record.pop('event', '')}"
    return head + "".join(f" {k}={v}" for k, v in record.items())


def logs(args: argparse.Namespace) -> int:
    from client.show.terminal_text import guard_output

    guard_output()  # the log holds what workers named (refs, files, errors): no control sequence of theirs
    path = paths.log_file()
    try:
        fh = open(path, encoding="utf-8", errors="replace")
    except FileNotFoundError:
        print(f"plugkit runner: no log yet at {path}")
        return 0
    with fh:
        shown = [r for r in (_render(line, args) for line in fh) if r is not None]
        for line in shown[-args.lines:] if args.lines > 0 else []:
            print(line)
        sys.stdout.flush()
        while args.follow:
            line = fh.readline()
            if not line:
                time.sleep(0.2)
                continue
            rendered = _render(line, args)
            if rendered is not None:
                print(rendered, flush=True)
    return 0


ACTIONS = {"start": start, "stop": stop, "restart": restart, "status": status, "logs": logs}
