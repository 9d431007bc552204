"""`plugkit exec:<lang>` / `plugkit exec --lang L`: run code through the runner and follow it.

Hot path: `plugkit exec:bash true` imports this, client.args, client.exec_args,
client.verbs.exec_stdin, client.wire.session,
client.show.follow, client.show.render and client.wire.rpc; none of them may import more than
cheap stdlib at module level.

Flow: one task.exec that waits up to FIRST_WAIT_S (a short command finishes
inside it: two requests in all, with the /health check), then task.wait/
task.output pairs that stream output as it arrives, until the task ends or the
wait ceiling passes. Past the ceiling the task is left running and the follow-up
commands are printed. Ctrl-C stops it when a person is at the terminal (as `docker run`
does; --keep-on-interrupt keeps it) and leaves it running otherwise (an agent's or a hook's
call, an agent host's pseudo-terminal included, unless --kill-on-interrupt). Our stdin
becomes the task's as exec_stdin plans it;
a reader that goes away (`| head -1`) kills it, as `yes | head -1` would.
"""

import os
import sys
import time

from client.show import follow
from client.show import render
from client.verbs import exec_stdin
from client.args import Help, UsageError, number
from client.exec_args import option_lines, parse_exec
from client.wire.rpc import ClientError, RpcFailure, RunnerSilent, RunnerUnavailable
from client.wire.session import Caller, connect

# Long enough that short commands finish within the first request, short enough
# that a long one's first lines show up promptly.
FIRST_WAIT_S = 0.2
DEFAULT_WAIT_S = 15.0
# The start of a task.exec refusal -> the command to run next (when the runner names none).
REFUSAL_NEXT = (("unknown language", "plugkit doctor shows which of them this machine can run"),
                ("code is empty", "plugkit exec --help"))

USAGE = """usage: plugkit exec:<lang> [options] [CODE... | --file F | -]
       plugkit exec --lang L [options] [CODE... | --file F | -]

Runs CODE through the runner, streaming its stdout/stderr; exits with its exit code
(124 timed out, 128+N killed by signal N, 69 runner unavailable). Without CODE,
the code is read from stdin when stdin is not a terminal (or with `-`). With CODE, a
piped or redirected stdin is the task's stdin (streamed, end-of-file at its end), and at
a terminal what you type while it runs in the foreground goes to the task (Ctrl-D ends it).
The same options work in an exec: an agent host's hook catches (except --session, --json
and the interrupt ones); an option not listed here, before the code, is an error.

""" + option_lines(generic=True) + """
The task runs in your environment (its variables, PATH and activated venv), minus
plugkit's own token and tags.
Put CODE after `--` if it contains words that look like these options.
If the reader of our output goes away (`| head -1`), the task is killed, as
`yes | head -1` would end `yes`, and plugkit exits 141 without a word."""


def exec_lang(lang: str, argv: list[str]) -> int:
    return _exec(argv, lang)


def exec_generic(argv: list[str]) -> int:
    return _exec(argv, None)


def _exec(argv: list[str], lang: str | None) -> int:
    try:
        opts, words = parse_exec(argv, USAGE, generic=lang is None)
    except Help:
        print(USAGE)
        return 0
    lang = lang or opts.get("lang")  # type: ignore[assignment]
    if not lang:
        raise UsageError("name the language: plugkit exec:<lang> CODE, or plugkit exec --lang L CODE")
    if opts.get("explain"):
        from client.verbs.doctor import explain

        return explain(lang, Caller(opts))
    wait_s: float = number(opts, "wait", "--wait", DEFAULT_WAIT_S, env="PLUGKIT_WAIT")  # type: ignore[assignment]
    timeout_s = number(opts, "timeout", "--timeout", None, minimum=0.001)
    limit = follow.output_limit(bool(opts.get("full")))
    code = read_code(opts, words)
    feed = exec_stdin.plan(opts, code_from_stdin=_code_from_stdin(opts, words))
    me = Caller(opts)
    sink = follow.Collector() if opts.get("json") else follow.Printer()
    deadline = time.monotonic() + wait_s
    client = connect()
    try:
        follower = follow.Follower(client, {}, sink, limit)
        info, first_output = start(client, me, follower, lang, code, wait_s, timeout_s,
                                   detach=bool(opts.get("detach")), sandbox=bool(opts.get("sandbox")),
                                   name=opts.get("name"),
                                   stdin=feed.exec_stdin(), first_wait_s=0.0 if feed.live else FIRST_WAIT_S)
        feed.start(me, info["task_id"])
        return follow_started(client, follower, info, first_output, me, opts, wait_s, deadline, feed=feed)
    finally:
        client.close()


def start(client, me: Caller, follower: follow.Follower, lang: str, code: str, wait_s: float,
          timeout_s: float | None, no_stdin: bool = False, detach: bool = False,
          sandbox: bool = False, stdin: str | None = None, name: str | None = None,
          first_wait_s: float = FIRST_WAIT_S) -> tuple[dict, dict]:
    """task.exec, waiting at most `first_wait_s`; points `follower` at the new task. `stdin`:
    all of the task's stdin (then closed; no_stdin is ""), None leaves it open.
    Returns (TaskInfo, the first output). Shared with the hooks' exec: interception."""
    params = me.params(lang=lang, code=code, wait_ms=int(min(wait_s, first_wait_s) * 1000),
                       max_bytes=follower.read_size())
    environ = me.environ()  # the task runs in our environment (see client/wire/session.py)
    if environ is not None:
        params["environ"] = environ
    if detach:
        params["detach"] = True
    if sandbox:
        params["sandbox"] = True
    if name:
        params["name"] = name
    params["caller_pid"] = os.getpid()  # the runner ties the session to the agent host above us
    if no_stdin:
        stdin = ""
    if stdin is not None:
        params["stdin"] = stdin  # written, then closed: the task reads it, then end-of-file
    if timeout_s is not None:
        params["timeout_ms"] = max(1, round(timeout_s * 1000))
    try:
        result = client.call("task.exec", params, timeout=FIRST_WAIT_S + 30)
    except RpcFailure as exc:
        nxt = next((cmd for start_, cmd in REFUSAL_NEXT if exc.message.startswith(start_)), None)
        if nxt and not exc.data:
            exc.data = {"next": nxt}
        raise
    info = result["task"]
    tid = info["task_id"]
    follower.ref = me.ref(tid)
    follower.next_steps = lambda start, end, whole: render.next_steps(me, tid, start, end, whole)
    return info, result["output"]


def follow_started(client, follower: follow.Follower, info: dict, first_output: dict, me: Caller, opts: dict,
                   wait_s: float, deadline: float, rows: list[tuple[str, str]] | None = None,
                   feed: exec_stdin.Feed | None = None) -> int:
    """Show a just-started task's output until it ends or the deadline, then its exit
    code, or the follow-up commands (`rows`, default render.followups) if it runs on.
    Shared with exec:serial, whose follower may also stop at an --until text."""
    tid = info["task_id"]
    sink = follower.sink
    try:
        follower.take(first_output)
        info = _follow_fed(follower, info, deadline, feed)  # type: ignore[assignment]
        if render.finished(info):
            follower.finish(info["bytes_out"])
    except KeyboardInterrupt:
        return _interrupted(me, tid, _kills_on_interrupt(opts), rows)
    except BrokenPipeError:
        try:
            client.call("task.kill", me.ref(tid), timeout=10)
        except ClientError:
            pass
        raise
    except RunnerSilent as exc:  # there but not answering: task_{tid} runs on
        raise RunnerUnavailable(f"{exc.said()} while following task_{tid}; "
                                f"`plugkit exec:status task_{tid}` asks again") from None
    except RunnerUnavailable:
        raise RunnerUnavailable(
            f"lost the runner while following task_{tid}; check `plugkit runner status` "
            f"(if the runner died, task_{tid} ended with it)") from None
    running = not render.finished(info)
    blocked = render.waiting(info)
    rows = render.input_rows(me, tid) if blocked else rows or render.followups(me, tid)
    extra = {"matched": follower.matched} if follower.until else {}
    if isinstance(sink, follow.Collector):
        nxt = [cmd for cmd, _ in rows] if running else None
        render.print_json(info, sink, follower, nxt, **extra)
    elif running:
        headline = (render.waiting_head(tid) if blocked
                    else f"saw {follower.until!r}; task_{tid} is still running" if follower.matched
                    else f"task_{tid} is still running after {wait_s:g}s")
        render.print_followups(sink, me, tid, headline, follower, rows)
    else:
        # Always one line naming the task: `mutable resolve`, `evidence add` and
        # exec:status need its id, and a foreground run would otherwise never say it.
        sink.note(end_line(info))
    code = 0 if running else render.exit_code(info)
    if feed is not None and feed.failure is not None:  # never an exit 0 on input that never arrived
        end = f"; end it with `plugkit exec:close task_{tid}`" if running else ""
        print(f"plugkit: task_{tid}'s stdin was cut short ({feed.failure}){end}",
              file=sys.stderr)
        return code or 1
    return code


def _follow_fed(follower: follow.Follower, info: dict, deadline: float, feed: exec_stdin.Feed | None):
    """follower.follow, except that a task blocked on its stdin while ours still has more to
    give (a pipe still being written, a person typing) is not "waiting for input" yet."""
    while True:
        seen = feed.progress if feed is not None else 0
        info = follower.follow(info, deadline)
        if feed is None or not render.waiting(info):
            return info
        if feed.progress == seen:  # nothing delivered while that answer was made: it stands
            if not feed.live or not feed.wait_progress(seen, deadline - time.monotonic()):
                return info
        # Else input (or its end) reached the task while the runner answered "waiting": a pipe's
        # last line and its EOF landing then said "waiting for input" of a task whose stdin was
        # already closed, and left its last output unread.
        info = None  # stale: the next task.wait says whether it still waits


def end_line(info: dict) -> str:
    """`task_12 failed: exit 2 (bash, 0.1s)`, or the runner's message for an unusual end."""
    line = render.state_line(info)
    message = info.get("message") if _unusual_end(info) else None
    if not message:
        return line
    return message if message.startswith(f"task_{info['task_id']} ") else f"{line}: {message}"


def _unusual_end(info: dict) -> bool:
    # A plain non-zero exit speaks through the exit code, and a timeout already
    # has the runner's own note in the output.
    return info["state"] not in ("completed", "timed_out") and info.get("reason") != "exit_nonzero"


def _kills_on_interrupt(opts: dict) -> bool:
    """A person at a terminal means Ctrl-C as `stop this`; an agent's tool call is interrupted
    by its host for reasons of its own, and the task it started is still wanted."""
    if opts.get("kill_on_interrupt") or opts.get("keep_on_interrupt"):
        return bool(opts.get("kill_on_interrupt"))
    try:
        return sys.stdin is not None and exec_stdin.person_at_terminal(sys.stdin.fileno())
    except (ValueError, OSError):
        return False


def _interrupted(me: Caller, tid: int, kill: bool, rows: list[tuple[str, str]] | None) -> int:
    sink = follow.Printer()
    if not kill:
        render.print_followups(sink, me, tid, f"interrupted; task_{tid} was not stopped", rows=rows)
        return 130
    # The interrupted call left its connection mid-request: use a fresh one.
    client = connect(start=False)
    if client is not None:
        try:
            info = client.call("task.kill", me.ref(tid), timeout=10)
            sink.note(f"interrupted; {render.state_line(info)}")
        finally:
            client.close()
    return 130


def read_code(opts: dict, words: list[str]) -> str:
    path = opts.get("file")
    if path is not None and words:
        raise UsageError("give either --file F or CODE, not both")
    if path is not None:
        try:
            with open(str(path), "rb") as fh:
                code = _decode(fh.read(), str(path))
        except OSError as exc:
            raise UsageError(f"cannot read --file {path}: {exc.strerror or exc}") from None
    elif _code_from_stdin(opts, words):
        code = _decode(sys.stdin.buffer.read(), "stdin")
    elif not words:
        raise UsageError("no code given: pass CODE, --file F, or pipe it on stdin; see `plugkit exec:bash --help`")
    else:
        code = " ".join(words)
    # Editors on Windows save UTF-8 with a BOM; bash would run it as part of the first word.
    code = code.removeprefix("\ufeff")
    if not code.strip():
        raise UsageError("the code is empty; pass the code to run as CODE, --file F or on stdin")
    return code


def _code_from_stdin(opts: dict, words: list[str]) -> bool:
    return opts.get("file") is None and (
        words == ["-"] or (not words and sys.stdin is not None and not sys.stdin.isatty()))


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
