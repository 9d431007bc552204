"""`plugkit hook <Event> [--platform P]`: read the platform's event, ask the runner, answer.

Flow: stdin (read with a time budget) -> the platform adapter's event table -> a
canonical Event -> one handler per kind (a hook.* call to the runner, or the exec:
interception) -> a canonical Answer -> the adapter renders the exact bytes and exit code.

Fail-safe: a hook must never wedge the agent. If stdin is late, not JSON, or lacks a
session; if no runner answers; if anything in here fails: one line on stderr and a
no-op answer (allow, no context, no block). With PLUGKIT_HOOKS_FAIL=closed those same
failures deny a tool call (and block a Stop once, never while stop_hook_active). Only
SessionStart and exec: commands start a runner (and prompts, on the hosts in PROMPT_STARTS);
every other event, finding none, fails open at once, except in a workspace that enforces its
gates: there a file write is denied and a Stop turned back once, naming `plugkit runner restart`
(client/hooks/fail_closed.py). Exit code 2 is never used: platforms ignore stdout on 2.

Hot path (a plain tool call): this module, one adapter, client.wire.rpc; os/sys/time/select and
plugkit.codec (json's C half: `import json` brings re, enum and functools, ~6 ms of every hook
process, and Qwen Code runs two per tool call). The exec: machinery is imported only for exec:
commands.
"""

import os
import sys
import time

from client.hooks.events import NOOP, Answer, BadEvent, Event, is_exec, parse_event, shell_command, slim
from plugkit import codec
from client.wire.rpc import ClientError, RpcFailure
from plugkit.errors import LIMIT
from plugkit.hosts import HOSTS
from plugkit.vocab import SESSION_ID_TAG

# platform -> its adapter module, and the hosts whose first prompt may start the runner (they
# fire no SessionStart headless): the one host table.
PLATFORMS = {h.platform: h.adapter for h in HOSTS}
DEFAULT_PLATFORM = "claude-code"
PROMPT_STARTS = frozenset(h.platform for h in HOSTS if h.prompt_starts)
STDIN_BUDGET_S = float(os.environ.get("PLUGKIT_HOOK_STDIN_TIMEOUT") or 2.0)
STDIN_CAP = 16 << 20
RPC_TIMEOUT_S = 5.0  # a gate check reads two small files; a stuck runner must not hold the agent
SLOW_RPC_TIMEOUT_S = 20.0  # Stop may ask git about the tree; SessionStart builds the memory index
USAGE = f"""usage: plugkit hook <Event> [--platform {'|'.join(PLATFORMS)}]

Called by an agent platform's hooks with the event JSON on stdin; prints that
platform's answer. Installed by `plugkit install --platform P`. Fails open (allow,
no-op) when anything goes wrong, unless PLUGKIT_HOOKS_FAIL=closed or the workspace
enforces its gates (then a write it could not check is denied)."""


class RunnerDown(ClientError):
    pass


class TooBig(Exception):
    """The event on stdin is over STDIN_CAP: read no further (the rest is drained unkept)."""


def note(text: str) -> None:
    sys.stderr.write(f"plugkit hook: {text}\n")


def adapter(platform: str):
    return __import__(PLATFORMS[platform], fromlist=["EVENTS"])


def main(argv: list[str]) -> int:
    from client.args import VALUE, Help, UsageError, parse, suggest

    try:
        opts, words = parse(argv, {"--platform": VALUE}, min_pos=1, max_pos=1, usage=USAGE)
        platform = str(opts.get("platform") or DEFAULT_PLATFORM)
        if platform not in PLATFORMS:
            raise UsageError(f"unknown platform {platform!r}{suggest(str(platform), list(PLATFORMS))}; "
                             f"one of {', '.join(PLATFORMS)}")
    except Help:
        print(USAGE)
        return 0
    except UsageError as exc:
        note(str(exc))
        return 1  # a non-blocking error for every platform; 2 would block the agent
    return respond(adapter(platform), words[0], platform)


def respond(module, event_name: str, platform: str) -> int:
    row = module.EVENTS.get(event_name)
    if row is None:
        try:
            read_stdin()  # drained, so the platform's write does not fail
        except TooBig:
            pass
        note(f"{platform} has no event {event_name!r} that plugkit handles; doing nothing")
        return emit(module.NOOP_OUTPUT, 0)
    kind, render = row
    # Anything printed by accident (a stray print deep in a verb) goes to stderr: Gemini CLI
    # reads stdout as one JSON document and every platform parses it.
    real_stdout, sys.stdout = sys.stdout, sys.stderr
    try:
        answer = handle(kind, platform)
    except Exception as exc:  # a bug of ours must still leave the agent unblocked
        answer = failed(kind, internal_error(exc))
    finally:
        sys.stdout = real_stdout
    try:
        out, code = render(answer)
    except Exception as exc:
        note(f"could not render the answer ({exc.__class__.__name__}); doing nothing")
        out, code = module.NOOP_OUTPUT, 0
    return emit(out, code)


def emit(out: bytes, code: int) -> int:
    sys.stdout.buffer.write(out)
    sys.stdout.flush()
    return code


def handle(kind: str, platform: str) -> Answer:
    try:
        raw = read_stdin()
    except TooBig:
        return unread(kind, f"the event is over {STDIN_CAP >> 20} MiB, more than plugkit reads")
    if raw is None:  # no EOF in time (every host closes the hook's stdin): unread, like a cut event
        return unread(kind, f"no whole event JSON arrived on stdin within {STDIN_BUDGET_S:g}s")
    try:
        data = codec.loads(raw)
        # Hosts that spell the fields otherwise (Cursor, Copilot, OpenCode's tools) rename them first.
        normalize = getattr(adapter(platform), "normalize", None)
        event = parse_event(kind, platform, normalize(data) if normalize else data)
    except (ValueError, BadEvent) as exc:
        why = str(exc) if isinstance(exc, BadEvent) else "stdin is not valid JSON"
        return unread(kind, f"malformed event: {why}")
    try:
        return HANDLERS[kind](event)
    except RpcFailure as exc:  # the runner answered: an error of ours or the call's, not a runner down
        if exc.code == LIMIT:  # too big for the runner to take (a padded command): nobody checked it
            return unread(kind, str(exc).splitlines()[0])
        return failed(kind, str(exc).splitlines()[0], event)
    except ClientError as exc:
        return failed(kind, str(exc).splitlines()[0], event, unreachable=True)
    except Exception as exc:
        return failed(kind, internal_error(exc), event)


def unread(kind: str, why: str) -> Answer:
    """No check ran on a tool call whose event could not be read, or that was too big for the
    runner to take: where the hook runs (the host's project directory) enforces its gates, or in
    a `plugkit work` worker (its policy is no advice), that is a call nobody checked, so it is
    denied, as with no runner; elsewhere failed() (open unless PLUGKIT_HOOKS_FAIL=closed)."""
    if kind == "pre_tool":
        from client.hooks.fail_closed import unread_answer

        answer = unread_answer(why, os.getcwd(), worker=bool(os.environ.get(SESSION_ID_TAG)))
        if answer is not None:
            note(f"{why}; denying (gates enforced here)")
            return answer
    return failed(kind, why)


def internal_error(exc: Exception) -> str:
    if os.environ.get("PLUGKIT_DEBUG"):
        import traceback

        traceback.print_exc()
    return f"internal error ({exc.__class__.__name__}: {exc}); rerun with PLUGKIT_DEBUG=1 for the traceback"


def failed(kind: str, why: str, event: Event | None = None, unreachable: bool = False) -> Answer:
    """The fail-safe answer: open by default; closed denies tool calls and blocks a Stop, but
    only one known not to be a continuation (stop_hook_active false): never a loop. A runner
    that does not answer in a workspace that enforces its gates fails closed by itself."""
    if unreachable and event is not None and kind in ("pre_tool", "stop"):
        from client.hooks.fail_closed import enforced_answer  # the failure path alone pays for it

        answer = enforced_answer(kind, why, event)
        if answer is not None:
            note(f"{why}; {'denying' if kind == 'pre_tool' else 'blocking this stop once'} (gates enforced here)")
            return answer
    closed = os.environ.get("PLUGKIT_HOOKS_FAIL", "").strip().lower() == "closed"
    if closed and kind == "pre_tool":
        note(f"{why}; denying (PLUGKIT_HOOKS_FAIL=closed)")
        return Answer("deny", f"plugkit hooks fail closed (PLUGKIT_HOOKS_FAIL=closed) and could not check "
                              f"this call: {why}. Ask the user to check `plugkit runner status`.")
    if closed and kind == "stop" and event is not None and not event.stop_hook_active:
        note(f"{why}; blocking this stop once (PLUGKIT_HOOKS_FAIL=closed)")
        return Answer(block=True, reason=f"plugkit hooks fail closed and could not check whether the work "
                                         f"is done: {why}")
    note(f"{why}; {'allowing' if kind == 'pre_tool' else 'doing nothing'} (fail-open)")
    return NOOP


def read_stdin(budget_s: float | None = None) -> bytes | None:
    """All of stdin, or None if it does not reach EOF within the budget (or is unreadable).
    select(), so a platform that never closes our stdin costs 2 s, not the hook's timeout."""
    import select

    deadline = time.monotonic() + (STDIN_BUDGET_S if budget_s is None else budget_s)
    chunks: list[bytes] = []
    size = 0
    while True:
        left = deadline - time.monotonic()
        try:
            if left <= 0 or not select.select([0], [], [], left)[0]:
                return None
            chunk = os.read(0, 1 << 16)
        except (OSError, ValueError):
            return None
        if not chunk:
            return b"".join(chunks)
        size += len(chunk)
        if size > STDIN_CAP:
            _drain(deadline)
            raise TooBig()
        chunks.append(chunk)


def _drain(deadline: float) -> None:
    """The rest of stdin read and dropped until EOF or the deadline: the platform's write ends."""
    import select

    try:
        while time.monotonic() < deadline and select.select([0], [], [], deadline - time.monotonic())[0]:
            if not os.read(0, 1 << 16):
                return
    except (OSError, ValueError):
        return


def call(method: str, params: dict, start: bool = False, timeout: float = RPC_TIMEOUT_S) -> dict:
    """One runner call. Without start, a missing runner is RunnerDown at once (fail open)."""
    from client.wire.rpc import Client, connect_verified

    conn = connect_verified()
    if conn is None:
        if not start:
            raise RunnerDown("no plugkit runner is running")
        from client.wire.autostart import ensure_runner

        conn = ensure_runner()
    client = Client(conn)
    try:
        return client.call(method, params, timeout=timeout)
    finally:
        client.close()


def _session(event: Event, **more: object) -> dict:
    # The tag the runner set on a `plugkit work` worker's task: its host hands it to its hooks.
    worker = os.environ.get(SESSION_ID_TAG)
    # Sent only from inside a worker (spawned by this runner, so of its version): a runner of
    # the previous version keeps answering every other session's hooks.
    return {"session_id": event.session_id, "cwd": event.cwd, **({"worker_session": worker} if worker else {}),
            **more}


def write_env_file(session_id: str) -> None:
    """Claude Code sources $CLAUDE_ENV_FILE before each Bash call: PLUGKIT_SESSION set there
    lets a `plugkit ...` typed into the shell reach this session. Appended, once."""
    path = os.environ.get("CLAUDE_ENV_FILE")
    if not path:
        return
    from client.wire.session import _quote

    line = f"export PLUGKIT_SESSION={_quote(session_id)}"
    try:
        try:
            with open(path, encoding="utf-8") as fh:
                existing = fh.read()
        except FileNotFoundError:
            existing = ""
        if line in existing.splitlines():
            return
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(("\n" if existing and not existing.endswith("\n") else "") + line + "\n")
    except OSError as exc:
        note(f"could not write $CLAUDE_ENV_FILE ({exc.strerror or exc})")


def on_session_start(event: Event) -> Answer:
    write_env_file(event.session_id)
    result = call("hook.session_start", _session(event, platform=event.platform, source=event.source[:64]),
                  start=True, timeout=SLOW_RPC_TIMEOUT_S)
    return Answer(context=result["context"])


def on_prompt(event: Event) -> Answer:
    starts = event.platform in PROMPT_STARTS
    result = call("hook.prompt", _session(event), start=starts, timeout=SLOW_RPC_TIMEOUT_S if starts else RPC_TIMEOUT_S)
    return Answer(context=result["context"] if result["changed"] else "")


def on_pre_tool(event: Event) -> Answer:
    command = shell_command(event)
    # exec: code that mentions approving is an approval attempt: the gates judge it before
    # anything runs (a substring test keeps the plain exec: path free of an extra call).
    if command is not None and is_exec(command) and "approv" not in command.lower():
        from client.hooks import exec_hook

        return exec_hook.run(event, command)
    # The platform matters only to an approval attempt (can the host ask the person?); sent
    # only then, so a runner of the previous version keeps answering every other call.
    asks = command is not None and "approv" in command.lower()
    result = call("hook.pre_tool", _session(event, tool_name=event.tool_name, tool_input=slim(event.tool_input),
                                            **({"platform": event.platform} if asks else {})),
                  start=command is not None and is_exec(command))
    if result["decision"] == "allow" and command is not None and is_exec(command):
        from client.hooks import exec_hook

        return exec_hook.run(event, command)
    return Answer(result["decision"], result["reason"])


def on_stop(event: Event) -> Answer:
    result = call("hook.stop", _session(event, stop_hook_active=event.stop_hook_active),
                  timeout=SLOW_RPC_TIMEOUT_S)
    return Answer(block=result["block"], reason=result["reason"])


def on_session_end(event: Event) -> Answer:
    call("hook.session_end", _session(event), timeout=SLOW_RPC_TIMEOUT_S)
    return NOOP


# kind -> handler(event) -> Answer. PostToolUse does nothing yet: kept for the gates.
HANDLERS = {
    "session_start": on_session_start,
    "prompt": on_prompt,
    "pre_tool": on_pre_tool,
    "post_tool": lambda event: NOOP,
    "stop": on_stop,
    "session_end": on_session_end,
}
