"""`plugkit exec:<lang>` / `plugkit exec --lang L`: run code through the runner and follow it.

Hot path: `plugkit exec:bash true` imports this, client.args, client.wire.session,
client.show.follow, client.show.render and client.wire.rpc; none of them may import more than
cheap stdlib at module level.

Flow: one task.exec that waits up to FIRST_WAIT_S (a short command finishes
inside it: two requests in all, with the /health check), then task.wait/
task.output pairs that stream output as it arrives, until the task ends or the
wait ceiling passes. Past the ceiling the task is left running and the follow-up
commands are printed. Ctrl-C stops it when stdin is a terminal (a person, as `docker run`
does; --keep-on-interrupt keeps it) and leaves it running otherwise (an agent's or a hook's
call, unless --kill-on-interrupt);
a reader that goes away (`| head -1`) kills it, as `yes | head -1` would.
"""

import os
import sys
import time

from client.show import follow
from client.show import render
from client.args import FLAG, VALUE, UsageError, number, parse_or_help
from client.wire.rpc import ClientError, RpcFailure, RunnerUnavailable
from client.wire.session import Caller, connect

# Long enough that short commands finish within the first request, short enough
# that a long one's first lines show up promptly.
FIRST_WAIT_S = 0.2
DEFAULT_WAIT_S = 15.0
# The start of a task.exec refusal -> the command to run next (when the runner names none).
REFUSAL_NEXT = (("unknown language", "plugkit doctor shows which of them this machine can run"),
                ("code is empty", "plugkit exec --help"))

OPTIONS = {"--session": VALUE, "--cwd": VALUE, "--json": FLAG, "--timeout": VALUE, "--wait": VALUE,
           "--file": VALUE, "--full": FLAG, "--kill-on-interrupt": FLAG, "--keep-on-interrupt": FLAG,
           "--no-stdin": FLAG, "--detach": FLAG, "--explain": FLAG, "--sandbox": FLAG,
           "--name": VALUE}

USAGE = """usage: plugkit exec:<lang> [options] [CODE... | --file F | -]
       plugkit exec --lang L [options] [CODE... | --file F | -]

Runs CODE through the runner, streaming its stdout/stderr; exits with its exit code
(124 timed out, 128+N killed by signal N, 69 runner unavailable). Without CODE,
the code is read from stdin when stdin is not a terminal (or with `-`).

  --timeout S          kill the task and its children after S seconds
  --wait S             stop waiting after S seconds (default 15, $PLUGKIT_WAIT); the task
                       keeps running and the follow-up commands are printed
  --cwd D              run in D (default: the current directory)
  --session ID         the session (default: $PLUGKIT_SESSION, else one per directory)
  --json               one JSON object at the end instead of streaming
  --full               no output cap (default: first+last 64 KiB, $PLUGKIT_MAX_OUTPUT)
  --kill-on-interrupt  Ctrl-C kills the task (the default when stdin is a terminal)
  --keep-on-interrupt  Ctrl-C leaves it running (the default otherwise: agents, hooks, pipes)
  --no-stdin           the task's stdin is empty and closed: a read gets end-of-file at once
                       (default: open for exec:type; a task blocked reading it is reported
                       as waiting for input)
  --name NAME          a label for the task, shown by exec:tasks and exec:status
  --detach             the task outlives its session: its session's end, or its agent host
                       exiting, does not kill it (exec:tasks marks it; exec:close ends it)
  --sandbox            run it in the worker sandbox: the cwd writable, the rest read-only, the
                       runner's home and your credentials hidden, its own PID namespace
                       (also: exec_sandbox = true in .plugkit/config.toml); refused if bwrap
                       cannot build one here
  --explain            run nothing: say which program would run the code for you (your PATH,
                       $VIRTUAL_ENV, $PLUGKIT_PYTHON) and exit
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
    opts, words = parse_or_help(argv, OPTIONS if lang else {**OPTIONS, "--lang": VALUE}, USAGE, loose=True)
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
    me = Caller(opts)
    sink = follow.Collector() if opts.get("json") else follow.Printer()
    deadline = time.monotonic() + wait_s
    client = connect()
    try:
        follower = follow.Follower(client, {}, sink, limit)
        info, first_output = start(client, me, follower, lang, code, wait_s, timeout_s,
                                   no_stdin=bool(opts.get("no_stdin")), detach=bool(opts.get("detach")),
                                   sandbox=bool(opts.get("sandbox")), name=opts.get("name"))
        return follow_started(client, follower, info, first_output, me, opts, wait_s, deadline)
    finally:
        client.close()


def start(client, me: Caller, follower: follow.Follower, lang: str, code: str, wait_s: float,
          timeout_s: float | None, no_stdin: bool = False, detach: bool = False,
          sandbox: bool = False, name: str | None = None) -> tuple[dict, dict]:
    """task.exec, waiting at most FIRST_WAIT_S; points `follower` at the new task.
    Returns (TaskInfo, the first output). Shared with the hooks' exec: interception."""
    params = me.params(lang=lang, code=code, wait_ms=int(min(wait_s, FIRST_WAIT_S) * 1000),
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
        params["stdin"] = ""  # written, then closed: the task's first read is end-of-file
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
                   wait_s: float, deadline: float, rows: list[tuple[str, str]] | None = None) -> int:
    """Show a just-started task's output until it ends or the deadline, then its exit
    code, or the follow-up commands (`rows`, default render.followups) if it runs on.
    Shared with exec:serial, whose follower may also stop at an --until text."""
    tid = info["task_id"]
    sink = follower.sink
    try:
        follower.take(first_output)
        info = follower.follow(info, deadline)  # type: ignore[assignment]
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
        headline = (render.waiting_line(me, tid) if blocked
                    else f"saw {follower.until!r}; task_{tid} is still running" if follower.matched
                    else f"task_{tid} is still running after {wait_s:g}s")
        render.print_followups(sink, me, tid, headline, follower, rows)
    else:
        # Always one line naming the task: `mutable resolve`, `evidence add` and
        # exec:status need its id, and a foreground run would otherwise never say it.
        sink.note(end_line(info))
    return 0 if running else render.exit_code(info)


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
        return sys.stdin is not None and sys.stdin.isatty()
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
    elif words == ["-"] or (not words and sys.stdin is not None and not sys.stdin.isatty()):
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


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{source} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
