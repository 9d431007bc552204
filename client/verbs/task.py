"""The verbs that follow tasks already started: exec:status, exec:sleep, exec:close,
exec:type, exec:tasks, and session-cleanup. Each names its task as task_N or N
and reaches it through the caller's session (--session / $PLUGKIT_SESSION / cwd).

The five exec: verbs also take `sink` and `caller`: the platform hooks run them for a
session named on their stdin and hand what they would print to the model instead."""

import json
import time

from client.show import follow
from client.show import poll
from client.show import render
from client.args import FLAG, VALUE, UsageError, number, parse_or_help, task_id
from client.wire.rpc import RpcFailure
from client.wire.session import Caller, connect, not_found_hint

DEFAULT_SLEEP_S = 30.0
COMMON = {"--session": VALUE, "--cwd": VALUE, "--json": FLAG}
SESSION_FLAGS = "[--json] [--session ID] [--cwd D]"


def _task_verb(argv: list[str], extra: dict, usage: str, caller: Caller | None = None,
               **kw) -> tuple[dict, list[str], int, Caller]:
    opts, words = parse_or_help(argv, {**COMMON, **extra}, usage, **kw)
    return opts, words, task_id(words[0]), caller or Caller(opts)


def _sink(opts: dict, sink=None):
    if sink is not None:
        return sink
    return follow.Collector() if opts.get("json") else follow.Printer()


def _say(sink, text: str) -> None:
    """A line for our stdout, or for the sink when someone else shows the output."""
    if sink is None:
        print(text)
    else:
        sink.write("stdout", text + "\n")


STATUS_USAGE = f"""usage: plugkit exec:status TASK [--full] [--from A [--to B]] {SESSION_FLAGS}

Prints the output TASK produced since this session last read it (stdout to stdout,
the rest to stderr), then its state. A poll is bounded (PLUGKIT_MAX_OUTPUT, default
12000 bytes) and keeps the newest lines of each stream; one note names what was cut
and the `--from A --to B --full` command that prints exactly that. Colour codes and
`\\r`-overwritten progress are cleaned unless stdout is a terminal. --full: all of
it, as written. --from/--to: the output between those byte offsets, marking nothing read."""


def status(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, _, tid, me = _task_verb(argv, {"--full": FLAG, "--from": VALUE, "--to": VALUE}, STATUS_USAGE, caller,
                                  min_pos=1, max_pos=1)
    full = bool(opts.get("full"))
    start, stop = _range(opts)
    sink = _sink(opts, sink)
    out = poll.Cleaner(sink, poll.wants_clean(sink, full))
    client = connect()
    polled = None
    follower = follow.Follower(client, me.ref(tid), sink, None)
    try:
        # State first, output second: a task seen finished has all its output in
        # the buffer already, so nothing it printed can slip past this call.
        info = client.call("task.status", me.ref(tid))
        if start is not None:
            follower.cursor = poll.read_range(client, me.ref(tid), out, start, stop)
        elif full:
            follower.drain()
        else:
            polled = poll.poll(client, me.ref(tid), out, poll.poll_limit(False, me.output_cap),  # type: ignore[arg-type]
                               _rest(me, tid))
    except RpcFailure as exc:
        raise not_found_hint(exc, me) from None
    finally:
        client.close()
    _polled_into(follower, polled)
    if isinstance(sink, follow.Collector):
        render.print_json(info, sink, follower)
        return 0
    sink.note(render.state_line(info))
    if render.waiting(info):
        sink.note(render.waiting_line(me, tid))
    return 0


def _range(opts: dict) -> tuple[int | None, int | None]:
    start, stop = (_offset(opts.get(k), f"--{k}") for k in ("from", "to"))
    if stop is not None and start is None:
        raise UsageError("--to needs --from: give the byte offsets the skip note names")
    return start, stop  # type: ignore[return-value]


def _offset(raw, flag: str) -> int | None:
    if raw is None:
        return None
    if not str(raw).isdigit():
        raise UsageError(f"{flag} must be a byte offset (a whole number >= 0), not {raw!r}")
    return int(raw)


def _rest(me: Caller, tid: int):
    return lambda start, end: me.command("exec:status", f"task_{tid}", "--from", str(start), "--to", str(end),
                                         "--full")


def _polled_into(follower: follow.Follower, polled: "poll.Polled | None") -> None:
    """The --json document reads these off the follower."""
    if polled is not None:
        follower.cursor, follower.cuts, follower.dropped = polled.end, polled.cuts, polled.dropped
        follower.omitted = polled.skipped


SLEEP_USAGE = f"""usage: plugkit exec:sleep TASK [S] [--until TEXT] [--full] {SESSION_FLAGS}

Waits until TASK ends, TEXT appears, or S seconds (default 30) pass, then prints the
output this session has not read, bounded like exec:status (the newest lines, one note
for what was cut). TEXT counts in all unread output, also what was printed before the
call; on a timeout the answer says `'TEXT' not seen`. --full streams all output as it
comes, as written. Exits with the task's exit code if it ended, else 0."""


def sleep(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, words, tid, me = _task_verb(argv, {"--until": VALUE, "--full": FLAG}, SLEEP_USAGE, caller,
                                      min_pos=1, max_pos=2)
    secs: float = number({"s": words[1]} if len(words) > 1 else {}, "s", "S", DEFAULT_SLEEP_S)  # type: ignore[assignment]
    until = opts.get("until")
    if until == "":
        raise UsageError("--until needs some text to wait for")
    full = bool(opts.get("full"))
    sink = _sink(opts, sink)
    client = connect()
    budget = poll.poll_limit(full, me.output_cap)
    # Bounded, nothing streams: the wait ends, then one poll shows the newest lines of all
    # that is new (an agent reads the answer whole anyway). --full streams everything.
    follower = follow.Follower(client, me.ref(tid), sink, None if budget is None else 0,
                               until=until)  # type: ignore[arg-type]
    polled = None
    try:
        if budget is not None:
            # --until counts from the session's cursor: text printed before this call, unread, matches.
            follower.cursor = client.call("task.output", me.ref(tid, max_bytes=0))["cursor"]
        info = follower.follow(None, time.monotonic() + secs)
        if info is None:
            # --until matched in output that was already waiting: follow() returned
            # from its first read, before any task.wait told it the task's state.
            info = client.call("task.status", me.ref(tid))
        if budget is not None:
            polled = poll.poll(client, me.ref(tid), follower.out, budget, _rest(me, tid))
    except RpcFailure as exc:
        raise not_found_hint(exc, me) from None
    except KeyboardInterrupt:
        follow.Printer().note(f"interrupted; task_{tid} keeps running")
        return 130
    finally:
        client.close()
    _polled_into(follower, polled)
    done = render.finished(info)
    if isinstance(sink, follow.Collector):
        render.print_json(info, sink, follower, matched=follower.matched)
        return render.exit_code(info) if done else 0
    if until and not follower.matched:
        sink.note(f"{until!r} not seen" + (f" in {secs:g}s" if not done else " before the task ended"))
    if done:
        sink.note(render.state_line(info))
    elif render.waiting(info):
        render.print_followups(sink, me, tid, render.waiting_line(me, tid), None, render.input_rows(me, tid))
    elif follower.matched:
        sink.note(f"saw {until!r}; {render.state_line(info)}")
    else:
        render.print_followups(sink, me, tid, f"task_{tid} is still running after {secs:g}s")
    return render.exit_code(info) if done else 0


CLOSE_USAGE = f"""usage: plugkit exec:close TASK {SESSION_FLAGS}

Kills TASK with its whole process tree (if it still runs) and forgets it. For an
exec:serial task it closes the port instead, and the task ends completed."""


def close(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, _, tid, me = _task_verb(argv, {}, CLOSE_USAGE, caller, min_pos=1, max_pos=1)
    info = _call(me, "task.kill", me.ref(tid, forget=True))
    _say(sink, json.dumps(info) if opts.get("json") else f"closed {render.state_line(info)}")
    return 0


# The line ending exec:type appends. "cr" is there because many device consoles (modems,
# MicroPython's raw REPL, bootloaders) act on a carriage return alone.
EOLS = {"lf": "\n", "crlf": "\r\n", "cr": "\r", "none": ""}

TYPE_USAGE = f"""usage: plugkit exec:type TASK TEXT... [--eol lf|crlf|cr|none] [--eof] {SESSION_FLAGS}

Writes TEXT and a line ending (--eol, default lf) to TASK's stdin, or to the port of an
exec:serial task. --no-newline is --eol none. --eof: close its stdin afterwards (TEXT
may then be left out; a serial port takes no more input after it). Read the answer
with exec:sleep. A serial task opened with --hex takes TEXT as hex digits
('41 54 0d 0a'), sent exactly: --eol has no effect there (line-ending characters are
whitespace to the hex reader), so include 0d 0a yourself."""


def type_(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, words, tid, me = _task_verb(argv, {"--eol": VALUE, "--no-newline": FLAG, "--eof": FLAG}, TYPE_USAGE,
                                      caller, loose=True, min_pos=1)
    eof = bool(opts.get("eof"))
    eol = _eol(opts)  # checked even when unused, so a typo is never silently ignored
    if len(words) == 1 and not eof:
        raise UsageError("give the TEXT to send (or --eof to close its stdin)\n" + TYPE_USAGE)
    data = " ".join(words[1:])
    if len(words) > 1:
        data += eol
    info = _call(me, "task.input", me.ref(tid, data=data, eof=eof))
    if opts.get("json"):
        _say(sink, json.dumps(info))
    else:
        _say(sink, f"sent {len(data.encode())} bytes to task_{tid}" + ("; its stdin is now closed" if eof else ""))
    return 0


def _eol(opts: dict) -> str:
    name = str(opts.get("eol", "none" if opts.get("no_newline") else "lf")).lower()
    if name not in EOLS:
        raise UsageError(f"--eol must be one of {', '.join(EOLS)}, not {name!r}")
    if opts.get("no_newline") and name != "none":
        raise UsageError(f"--no-newline and --eol {name} disagree; give one of them")
    return EOLS[name]


RECENT = 10  # finished tasks exec:tasks shows besides the running ones

TASKS_USAGE = f"""usage: plugkit exec:tasks [--all] {SESSION_FLAGS}

Lists this session's running tasks and the last {RECENT} that ended, with a count of
the rest; --all lists every one."""


def tasks(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, _ = parse_or_help(argv, {**COMMON, "--all": FLAG}, TASKS_USAGE, max_pos=0)
    me = caller or Caller(opts)
    listed = sorted(_call(me, "task.list", me.params())["tasks"], key=lambda t: t["task_id"])
    if opts.get("json"):
        _say(sink, json.dumps({"session_id": me.session_id, "cwd": me.cwd, "tasks": listed}))
        return 0
    if not listed:
        _say(sink, f"no tasks in {me.describe()}")
        return 0
    shown = listed if opts.get("all") else _recent(listed)
    _say(sink, render.task_table(shown))
    if len(shown) < len(listed):
        _say(sink, f"{len(listed) - len(shown)} older ended tasks not shown ({len(listed)} in all); "
                   f"`{me.command('exec:tasks', '--all')}` lists them")
    for t in shown:
        if render.waiting(t):
            _say(sink, render.waiting_line(me, t["task_id"]))
    return 0


def _recent(listed: list[dict]) -> list[dict]:
    """Every running task, and the last RECENT that ended, in id order."""
    ended = [t for t in listed if render.finished(t)]
    keep = {t["task_id"] for t in ended[-RECENT:]} | {t["task_id"] for t in listed if not render.finished(t)}
    return [t for t in listed if t["task_id"] in keep]


CLEANUP_USAGE = f"""usage: plugkit session-cleanup {SESSION_FLAGS}

Kills every task of this session (whole process trees) and forgets them all, but
those started with --detach: they run on (exec:close ends one).
Starts no runner: with none running there is nothing to clean up."""


def session_cleanup(argv: list[str]) -> int:
    opts, _ = parse_or_help(argv, COMMON, CLEANUP_USAGE, max_pos=0)
    me = Caller(opts)
    client = connect(start=False)
    killed: list[int] = []
    if client is not None:
        try:
            killed = client.call("session.end", me.params())["killed"]
        finally:
            client.close()
    if opts.get("json"):
        print(json.dumps({"session_id": me.session_id, "cwd": me.cwd, "killed": killed,
                          "runner": client is not None}))
    elif client is None:
        print("no runner is running, so no task of this session is either")
    elif killed:
        print(f"ended {me.describe()}: killed {', '.join(f'task_{t}' for t in killed)}")
    else:
        print(f"ended {me.describe()}: nothing was running")
    return 0


def _call(me: Caller, method: str, params: dict) -> dict:
    client = connect()
    try:
        return client.call(method, params)
    except RpcFailure as exc:
        raise not_found_hint(exc, me) from None
    finally:
        client.close()
