"""exec: commands caught in PreToolUse: run through the runner, answered as a deny.

A shell tool call whose command is `exec:<lang>` (code on the lines below, or after it on
the first line, or in a `<<EOF` heredoc), `exec:<verb> args` (status, sleep, close, type,
tasks, kill-port), or either of those after `plugkit`, is run by the runner in the
session named on the hook's stdin (never an environment variable). The result goes
back as the reason of a deny: the one channel every platform hands to the model, and
the one that keeps the shell from also running the command. Output is bounded (head and
tail, with the task id and `exec:status` for the rest); a task still running after the
hook's wait (PLUGKIT_HOOK_WAIT, default 10 s) comes back backgrounded with its id.
"""

import contextlib
import io
import os
import re
import shlex
import time

from client.verbs import exec as exec_verbs
from client.show import follow
from client.show import render
from client.verbs import task as task_verbs
from client import exec_args
from client.args import Help, UsageError, number
from client.hooks.events import Answer, Event
from client.wire.rpc import ClientError
from client.wire.session import Caller, connect

DEFAULT_WAIT_S = 10.0
MAX_WAIT_S = 45.0  # installed PreToolUse hooks get 60 s from the platform
DEFAULT_LIMIT = 12000  # bytes of output per answer: about 3000 tokens for the model
VERBS = {"status": task_verbs.status, "sleep": task_verbs.sleep, "close": task_verbs.close,
         "type": task_verbs.type_, "tasks": task_verbs.tasks, "kill-port": None, "serial": None}
# Code that reads its stdin keeps it open, for exec:type (and a task blocked on it is
# reported as waiting for input); any other code gets end-of-file at once, so a stray
# read (a tool that reads stdin when given no file) never holds a hook call. `--stdin` /
# `--no-stdin` decide it outright. The hook's own stdin (the host's JSON) is never a task's.
ASKS_INPUT = re.compile(r"\binput\s*\(|stdin|STDIN|\bread\b|\bgets\b|scanf|Scanner\s*\(|[Rr]ead[Ll]ine|"
                        r"getline|getchar|fgets|io\.read|\bprompt\s*\(")
DELIVERY = "this denial only delivers the result: do not run it again in the shell"


class HookCaller(Caller):
    """The hook's session, from stdin. Follow-up commands are given in the intercepted
    form (`exec:status task_7`), which reaches this same session through the hook."""

    def __init__(self, session_id: str, cwd: str) -> None:
        self.session_flag = self.session_id = session_id
        self.cwd_flag = cwd
        self.cwd = os.path.abspath(cwd)
        # The verbs cap what they show by this, not $PLUGKIT_MAX_OUTPUT: the hook has its own.
        self.output_cap = _limit()

    def command(self, verb: str, *words: str) -> str:
        return " ".join([verb, *words])


class Transcript:
    """A follow sink that keeps everything in order as one text, for the model."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def write(self, stream: str, text: str) -> int:
        self.parts.append(text)
        return len(text.encode("utf-8", "replace"))

    def note(self, text: str) -> None:
        lead = "\n" if self.parts and not self.parts[-1].endswith("\n") else ""
        self.parts.append(f"{lead}[plugkit] {text}\n")

    def check_reader(self) -> None:
        pass

    def text(self) -> str:
        return "".join(self.parts)


class Request:
    __slots__ = ("verb", "args", "code", "opts", "timeout_s", "wait_s")

    def __init__(self, verb: str, args: list[str], code: str = "", opts: dict | None = None) -> None:
        self.verb, self.args, self.code = verb, args, code
        self.opts = opts or {}  # the exec options, as client.exec_args read them
        try:
            self.timeout_s = number(self.opts, "timeout", "--timeout", None, minimum=0.001)
            self.wait_s = number(self.opts, "wait", "--wait", None)
        except UsageError as exc:
            raise ValueError(str(exc)) from None

    def keeps_stdin(self) -> bool:
        """Open for exec:type: asked for (--stdin), refused (--no-stdin), else if the code reads it."""
        if self.opts.get("stdin") or self.opts.get("no_stdin"):
            return bool(self.opts.get("stdin"))
        return bool(ASKS_INPUT.search(self.code))


def parse(command: str) -> Request:
    """The command line -> what to run. ValueError says, in one line, what is wrong; Help
    when --help was asked for. The options are the CLI's (client.exec_args), read by its
    parser: `plugkit exec:...` as the shell would split it, bare `exec:...` up to the code."""
    first, _, body = command.strip().partition("\n")
    head, rest = _split(first)
    prefixed = head == "plugkit" or head.endswith("/plugkit")
    if prefixed:
        head, rest = _split(rest)
    name = "kill-port" if prefixed and head == "kill-port" else head[5:]
    if not name:
        raise ValueError("name the language or verb: exec:python, exec:bash, exec:status task_N, ...")
    if name in VERBS:
        if body.strip():
            raise ValueError(f"exec:{name} takes its arguments on one line")
        return Request(name, _words(rest))
    words, remainder = exec_args.leading_options(rest)
    if remainder.startswith("<<"):
        opts, _ = _options(words, name)
        code = _heredoc(remainder, body)
    elif prefixed:
        # A shell would split the line and plugkit's CLI read every word: options anywhere, as there.
        opts, pos = _options(words + _words(remainder), name)
        code = "\n".join(part for part in (" ".join(pos) if pos != ["-"] else "", body) if part)
    else:
        opts, _ = _options(words, name)  # the rest of the line is code, as written
        code = "\n".join(part for part in (remainder, body) if part)
    if opts.get("file") is not None and code.strip():
        raise ValueError("give either --file F or the code, not both")
    if opts.get("file") is None and not opts.get("explain") and not code.strip():
        raise ValueError(f"no code: put it on the lines after exec:{name}")
    return Request(name, [], code, opts)


def _options(words: list[str], lang: str) -> tuple[dict, list[str]]:
    try:
        return exec_args.parse_exec(words, exec_verbs.USAGE, hook=True)
    except UsageError as exc:
        raise ValueError(str(exc)) from None


def _split(text: str) -> tuple[str, str]:
    parts = text.strip().split(None, 1)
    return (parts[0], parts[1] if len(parts) > 1 else "") if parts else ("", "")


def _words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise ValueError(f"cannot split the arguments: {exc}") from None


def _heredoc(rest: str, body: str) -> str:
    strip_tabs = rest.startswith("<<-")
    delimiter = rest[3 if strip_tabs else 2:].strip().strip("'\"")
    lines = []
    for line in body.split("\n"):
        if (line.lstrip("\t") if strip_tabs else line) == delimiter:
            break
        lines.append(line.lstrip("\t") if strip_tabs else line)
    return "\n".join(lines)


def _seconds(env: str, default: float, given: float | None = None) -> float:
    try:
        value = given if given is not None else float(os.environ.get(env) or default)
    except ValueError:
        value = default
    return min(max(value, 0.2), MAX_WAIT_S)


def _limit() -> int:
    try:
        return max(1024, int(os.environ.get("PLUGKIT_HOOK_MAX_OUTPUT") or DEFAULT_LIMIT))
    except ValueError:
        return DEFAULT_LIMIT


def run(event: Event, command: str) -> Answer:
    try:
        request = parse(command)
    except ValueError as exc:
        return Answer("deny", f"[plugkit] this exec: command was not run: {exc}")
    except Help as usage:
        return Answer("deny", f"[plugkit] the exec: options ({DELIVERY}):\n{usage}")
    cwd = request.opts.get("cwd")
    me = HookCaller(event.session_id, os.path.join(event.cwd, os.path.expanduser(str(cwd))) if cwd else event.cwd)
    sink = Transcript()
    label = f"exec:{request.verb}" if request.verb != "kill-port" else "kill-port"
    printed = io.StringIO()  # what a verb print()s (kill-port's report, a --help) is output too
    try:
        with contextlib.redirect_stdout(printed):
            head = (_run_verb if request.verb in VERBS else _run_code)(request, me, sink)
    except ClientError as exc:  # a usage error, a task not found, no runner: said as it is
        return Answer("deny", f"[plugkit] `{label}` was not run: {exc}")
    except SystemExit:  # --help prints the usage and ends the verb
        head = f"[plugkit] `{label} --help`:"
    body = sink.text() + printed.getvalue()
    return Answer("deny", _bound(head + ("\n" + body if body else "\n(no output)"), 4 * _limit()))


def _run_verb(request: Request, me: HookCaller, sink: Transcript) -> str:
    args = list(request.args)
    if request.verb == "sleep" and len(args) > 1 and args[1].replace(".", "", 1).isdigit():
        args[1] = str(min(float(args[1]), MAX_WAIT_S))  # the platform would kill a longer hook
    if request.verb == "kill-port":
        from client.verbs import killport

        killport.main(args, me)  # prints its report: run() collects it; the hook's session asks
        return f"[plugkit] `kill-port` ran outside the shell ({DELIVERY}):"
    if request.verb == "serial":
        # A port is not code: `exec:serial PORT [BAUD] [--flags]` becomes the same JSON spec
        # and long timeout the CLI verb sends, then runs like any task of the hook's session.
        from client.verbs import serial as serial_verbs
        from client.args import parse_or_help

        opts, words = parse_or_help(args, serial_verbs.OPTIONS, serial_verbs.USAGE, min_pos=1, max_pos=2)
        code, _spec = serial_verbs.build_code(opts, words)
        timeout = number(opts, "timeout", "--timeout", None, minimum=0.001) or serial_verbs.max_timeout_s()
        wait = number(opts, "wait", "--wait", 2.0)
        return _run_code(Request("serial", [], code, {"timeout": timeout, "wait": wait, "stdin": True}), me, sink)
    VERBS[request.verb](args, sink=sink, caller=me)
    return f"[plugkit] `exec:{request.verb}` ran in the plugkit runner ({DELIVERY}):"


def _run_code(request: Request, me: HookCaller, sink: Transcript) -> str:
    lang, opts = request.verb, request.opts
    if opts.get("explain"):
        from client.verbs.doctor import explain

        explain(lang, me)  # prints: run() collects it
        return f"[plugkit] `exec:{lang} --explain` ran nothing ({DELIVERY}):"
    code = _file_code(str(opts["file"]), me.cwd) if opts.get("file") is not None else request.code
    wait_s = _seconds("PLUGKIT_HOOK_WAIT", DEFAULT_WAIT_S, request.wait_s)
    deadline = time.monotonic() + wait_s
    client = connect()  # an exec: call is worth starting the runner for
    try:
        follower = follow.Follower(client, {}, sink, follow.output_limit(True) if opts.get("full") else _limit())
        info, first = exec_verbs.start(client, me, follower, lang, code, wait_s, request.timeout_s,
                                       no_stdin=not request.keeps_stdin(), detach=bool(opts.get("detach")),
                                       sandbox=bool(opts.get("sandbox")), name=opts.get("name"))
        follower.take(first)
        info = follower.follow(info, deadline)
        done = render.finished(info)
        if done:
            follower.finish(info["bytes_out"])
    finally:
        client.close()
    tid = info["task_id"]
    if not done and render.waiting(info):
        render.print_followups(sink, me, tid, render.waiting_head(tid), follower, render.input_rows(me, tid))
        return (f"[plugkit] `exec:{lang}` started as task_{tid} in the plugkit runner instead of the shell "
                f"({DELIVERY}); {render.waiting_head(tid)}. Output so far:")
    if not done:
        render.print_followups(sink, me, tid, f"task_{tid} is still running after {wait_s:g}s", follower)
        return (f"[plugkit] `exec:{lang}` started as task_{tid} in the plugkit runner instead of the shell "
                f"({DELIVERY}); it is still running, in the background. Output so far:")
    if info["state"] not in ("completed", "timed_out") and info.get("reason") != "exit_nonzero":
        sink.note(info.get("message") or render.state_line(info))
    return (f"[plugkit] `exec:{lang}` ran as task_{tid} in the plugkit runner instead of the shell "
            f"({DELIVERY}): {render.state_line(info)}. Output:")


def _file_code(path: str, cwd: str) -> str:
    """--file F, relative to the directory the host names (not the hook process's own)."""
    full = os.path.join(cwd, os.path.expanduser(path))
    try:
        with open(full, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read --file {path}: {exc.strerror or exc}") from None
    try:
        code = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise UsageError(f"{path} is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
    if not code.strip():
        raise UsageError(f"--file {path} is empty")
    return code


def _bound(text: str, cap: int) -> str:
    """A last guard on the answer's size (with --full the verbs are not capped)."""
    if len(text) <= cap:
        return text
    half = cap // 2
    # Cut at line ends, so the model never reads half a line (a line longer than half stays cut).
    head_end = text.rfind("\n", 0, half) + 1 or half
    tail_start = text.find("\n", len(text) - half) + 1 or len(text) - half
    return (text[:head_end] + f"[plugkit] ... {tail_start - head_end} characters left out here ...\n"
            + text[tail_start:])
