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
from plugkit.vocab import TERMINAL_STATES

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


STATUS_USAGE = f"""usage: plugkit exec:status TASK [--full] [--from A [--to B]] [--grep RE] {SESSION_FLAGS}

Prints the output TASK produced since this session last read it (stdout to stdout,
the rest to stderr), then its state. A poll is bounded (PLUGKIT_MAX_OUTPUT, default
12000 bytes) and keeps the newest lines of each stream; one note names what was cut
and the bounded next steps (`--from A --to B`, `--grep RE`, the size of --full). Colour codes and
`\\r`-overwritten progress are cleaned unless stdout is a terminal. --full: all of
it, as written. --from/--to: the output between those byte offsets, marking nothing read.
--grep RE: only the lines matching RE (a Python regex), each after its byte offset,
bounded like a poll (--full: all of them; --from/--to: within that range)."""


def status(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, _, tid, me = _task_verb(argv, {"--full": FLAG, "--from": VALUE, "--to": VALUE, "--grep": VALUE},
                                  STATUS_USAGE, caller, min_pos=1, max_pos=1)
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
        if opts.get("grep") is not None:
            found = poll.grep(client, me.ref(tid), out, str(opts["grep"]), start or 0, stop,
                              None if full else poll.poll_limit(False, me.output_cap))
        elif start is not None:
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
    if opts.get("grep") is not None:
        sink.note(_grep_note(me, tid, str(opts["grep"]), *found))
    sink.note(render.state_line(info, detail=True))
    if render.waiting(info):
        sink.note(render.waiting_line(me, tid))
    return 0


def _grep_note(me: Caller, tid: int, regex: str, shown: int, matched: int, dropped: int) -> str:
    gone = f"; the first {dropped} bytes were dropped before they could be searched" if dropped else ""
    if not matched:
        return f"no line matches {regex!r}{gone}"
    more = (f", the first {shown} shown (a narrower RE, `--from A --to B` or --full shows more)"
            if shown < matched else "")
    return (f"{matched} lines match {regex!r}{more}; each starts at the byte offset before it: "
            f"`{me.command('exec:status', f'task_{tid}', '--from', 'OFFSET', '--to', 'OFFSET+2000')}` "
            f"shows one in context{gone}")


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
    return lambda start, end, whole: render.next_steps(me, tid, start, end, whole)


def _polled_into(follower: follow.Follower, polled: "poll.Polled | None") -> None:
    """The --json document reads these off the follower."""
    if polled is not None:
        follower.cursor, follower.cuts, follower.dropped = polled.end, polled.cuts, polled.dropped
        follower.omitted = polled.skipped


SLEEP_USAGE = f"""usage: plugkit exec:sleep TASK [S] [--until TEXT] [--full] {SESSION_FLAGS}

Waits until TASK ends, TEXT appears, or S seconds (default 30) pass, then prints the
output this session has not read, bounded like exec:status (the newest lines, one note
for what was cut). TEXT counts anywhere in what TASK printed since it started, read or
not (as far as the runner still keeps it); a match names its byte offset and its line,
and `'TEXT' not seen` means it was never printed. --full streams all output as it
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
    info = seen = None
    try:
        read_before = client.call("task.output", me.ref(tid, max_bytes=0))["cursor"]
        if until:
            # From offset 0, not this session's cursor: text the caller was already shown was
            # printed all the same, and "not seen" must mean never printed.
            seen = client.call("task.wait", me.ref(tid, until_text=until, cursor=0, timeout_ms=0))
            info = seen["task"]
            follower.matched = seen["matched"]
            follower.match_at = seen.get("match_cursor")
        follower.cursor = 0  # where a wait for TEXT searches from (a bounded sleep streams nothing)
        if not follower.matched:
            info = follower.follow(info if budget is not None else None, time.monotonic() + secs)
        elif budget is None:
            follower.drain()  # --full: what is unread is shown all the same
        if info is None or budget is None:
            info = client.call("task.status", me.ref(tid))
        if budget is not None:
            polled = poll.poll(client, me.ref(tid), follower.out, budget, _rest(me, tid))
        where = _match_line(client, me.ref(tid), follower.match_at, until) if follower.matched else ""
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
        render.print_json(info, sink, follower, matched=follower.matched, match_cursor=follower.match_at)
        return render.exit_code(info) if done else 0
    if until and follower.matched:
        end = follower.match_at  # just past the match
        at = None if end is None else end - len(until.encode())
        when = "" if at is None else f" at byte {at}" + (" (already read by this session)" if end <= read_before
                                                         else "")
        sink.note(f"saw {until!r}{when}{where}")
    elif until:
        sink.note(f"{until!r} not seen" + (f" in {secs:g}s" if not done else " before the task ended")
                  + _dropped_note(info))
    if done:
        sink.note(render.state_line(info, detail=True))
    elif render.waiting(info):
        render.print_followups(sink, me, tid, render.waiting_head(tid), None, render.input_rows(me, tid))
    elif follower.matched:
        sink.note(render.state_line(info, detail=True))
    else:
        render.print_followups(sink, me, tid, f"task_{tid} is still running after {secs:g}s")
    return render.exit_code(info) if done else 0


MATCH_LINE_CHARS = 160  # of the line a match is in, what the answer quotes


def _match_line(client, ref: dict, at: int | None, needle: str) -> str:
    """`: <the line holding the match>`, cut to MATCH_LINE_CHARS; '' if it is gone."""
    if at is None:
        return ""
    width = len(needle.encode()) + MATCH_LINE_CHARS
    start = max(0, at - width)
    got = client.call("task.output", dict(ref, cursor=start, max_bytes=2 * width))
    raw = "".join(c["text"] for c in got["chunks"]).encode("utf-8", "replace")
    end_of_match = at - max(start, got["cursor"] - len(raw))
    if not 0 < end_of_match <= len(raw):
        return ""
    lo = raw.rfind(b"\n", 0, end_of_match - len(needle.encode())) + 1
    hi = raw.find(b"\n", end_of_match)
    line = raw[lo:hi if hi >= 0 else len(raw)].decode("utf-8", "replace").strip()
    return f": {line[:MATCH_LINE_CHARS]!r}" if line else ""


def _dropped_note(info: dict) -> str:
    """Honest about the ring's cap: text in the dropped head could not be searched."""
    dropped = info.get("dropped") or 0
    if not dropped:
        return " (it was never printed)"
    return (f"; the first {dropped} bytes of its output were dropped (the runner keeps only the newest part), "
            "so it may have been printed there")


CLOSE_USAGE = f"""usage: plugkit exec:close TASK [--forget] {SESSION_FLAGS}

Kills TASK with its whole process tree if it still runs; its record stays (exec:tasks and
exec:status show how it ended). --forget also drops the record. For an exec:serial task
it closes the port instead, and the task ends completed."""


def close(argv: list[str], sink=None, caller: Caller | None = None) -> int:
    opts, _, tid, me = _task_verb(argv, {"--forget": FLAG}, CLOSE_USAGE, caller, min_pos=1, max_pos=1)
    forget = bool(opts.get("forget"))
    before = _call(me, "task.status", me.ref(tid))
    if before["state"] in TERMINAL_STATES and not forget:  # a second close, or one after its end
        _say(sink, json.dumps(before) if opts.get("json") else
             f"task_{tid} already closed: {render.state_line(before)}; its record stays "
             f"({me.command('exec:close', f'task_{tid}', '--forget')} drops it)")
        return 0
    info = _call(me, "task.kill", me.ref(tid, forget=forget))
    if opts.get("json"):
        _say(sink, json.dumps(info))
    elif forget:
        _say(sink, f"closed {render.state_line(info)}; its record is dropped")
    else:
        _say(sink, f"closed {render.state_line(info)}")
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
