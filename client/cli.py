"""`plugkit`: the console script. Finds the verb in a table and turns failures into
one-or-two-line messages with an exit code; no traceback ever reaches the user.

Exit codes: 0 ok; 1 error; 2 usage; 3 runner not running (status); 69 runner
unavailable; a task's own exit code for exec; 124 task timed out; 128+N task killed by
signal N; 126 task could not start; 127 interpreter missing; 130 interrupted; 141 the
reader of our output went away.
"""

import os
import sys

from client.wire.rpc import ClientError, RpcFailure
from plugkit import errors

USAGE = """usage: plugkit <verb> [args]

Run code (its stdout/stderr stream through; the exit code is the task's):
  exec:<lang> [CODE... | --file F | -]   lang: {langs}
  exec --lang L [CODE... | --file F | -]
      --timeout S  kill it after S seconds (exit 124)
      --wait S     stop waiting after S seconds (default 15); it keeps running
      --cwd D  --session ID  --json  --full  --no-stdin (EOF at once)
      --kill-on-interrupt | --keep-on-interrupt   Ctrl-C stops the task only at a terminal
Follow this session's tasks (TASK is task_N or N; all take --json):
  exec:status TASK [--full]            its state and the newest output not read yet (12 KB)
  exec:sleep TASK [S] [--until TEXT]   wait until it ends, TEXT appears or S s pass; then as status
  exec:type TASK TEXT [--eol lf|crlf|cr|none] [--eof]   write a line to its stdin (or port)
  exec:close TASK                      kill it (a serial task: close its port) and forget it
  exec:tasks [--all]                   the running tasks and the last 10 that ended
  session-cleanup                      kill and forget every task of this session
Serial devices (a port is a background task: follow it with the verbs above):
  exec:serial PORT [BAUD] [--parity N|E|O|M|S --stopbits 1|1.5|2 --hex ...]   open it
  serial list [--json]                 the ports the system sees
The machine:
  kill-port PORT                       kill what listens on PORT, with its children
  doctor                               check interpreters, Chromium, serial, port, state dir
  runner start|stop|status|restart|logs   manage the runner daemon
  ui [--open]                          a one-time link to the runner's live page
Lifecycle gates, per workspace (all take --json):
  gate status|advance [TO]|retreat TRIGGER REASON|emit PATH...|verify|context
  mutable add|resolve|list      named unknowns, resolved only by witnessed tasks
  prd add|update|verify|list|ready   work items in .prd (verify: run its check, for a receipt)
  evidence add|list|show|verify receipts under .plugkit/evidence
  receipt verify FILE|ID [--key K] [--at REV] | export ID   signed receipts, checked offline; key show
  audit verify|ack              the gate ledger's hash chain: the first record edited, removed or moved
  approve ID | --list           a person approves a critical-risk item
  work [--parallel N] [--worker W] [--afk] ...   agents work the .prd's items, verified by the runner
  work status|stop|logs ITEM|rollback ITEM        follow and steer that run
Code search, from the runner's warm index of this workspace:
  search QUERY [--path GLOB] [--lang L] [--limit N] [--json]   definitions, code, commits
  mcp                                  the same as an MCP tool on stdio (pip install 'plugkit[mcp]')
  digest                               the project in ~900 tokens: stack, entry points, commands, hot files
Memory kept across sessions (all take --json):
  memory add|list|show|forget|search|index
Agent platforms (P: claude-code, qwen, gemini, codex, cursor, copilot, opencode, kilo):
  install --platform P [--project|--user] [--print] [--uninstall]   write P's hook configuration
  hook EVENT [--platform P]     what P's hooks run (event JSON on stdin; fails open)
  --version                            print the version

Session: --session ID, else $PLUGKIT_SESSION, else one per directory. The
environment variables (PLUGKIT_HOME, PLUGKIT_PORT, PLUGKIT_MAX_OUTPUT, ...) are in
the README's Configuration table.
Exit codes: the task's own; 124 timed out; 128+N signal N; 1 error; 2 usage;
69 runner unavailable; 127 interpreter missing; 130 interrupted; 141 reader gone.
Run `plugkit <verb> --help` for a verb's options."""


def _runner(argv: list[str]) -> int:
    from client.verbs import runner as runner_verbs

    return runner_verbs.main(argv)


def _verb(module: str, name: str):
    # Imported on call, so each verb loads only its own module.
    def handler(argv: list[str]) -> int:
        return getattr(__import__(f"client.{module}", fromlist=[name]), name)(argv)

    return handler


def _exec_browser(argv: list[str]) -> int:
    if "-h" in argv or "--help" in argv:  # the command table, without a runner
        from plugkit.browser_help import USAGE as BROWSER_USAGE

        print(BROWSER_USAGE)
        return 0
    return _exec_lang("exec:browser", argv)


def _exec_lang(verb: str, argv: list[str]) -> int:
    from client.verbs import exec as exec_verbs

    return exec_verbs.exec_lang(verb.partition(":")[2], argv)


# verb -> handler(argv) -> exit code. Adding a verb is adding a row.
VERBS = {
    "runner": _runner,
    "exec": _verb("verbs.exec", "exec_generic"),
    "exec:browser": _exec_browser,
    # Found here before PREFIXES is consulted, so it is not taken for a language.
    "exec:serial": _verb("verbs.serial", "exec_serial"),
    "exec:status": _verb("verbs.task", "status"),
    "exec:sleep": _verb("verbs.task", "sleep"),
    "exec:close": _verb("verbs.task", "close"),
    "exec:type": _verb("verbs.task", "type_"),
    "exec:tasks": _verb("verbs.task", "tasks"),
    "session-cleanup": _verb("verbs.task", "session_cleanup"),
    "serial": _verb("verbs.serial", "serial_main"),
    "kill-port": _verb("verbs.killport", "main"),
    "doctor": _verb("verbs.doctor", "main"),
    "memory": _verb("verbs.memory", "main"),
    "search": _verb("verbs.search", "main"),
    "mcp": _verb("verbs.mcp", "main"),
    "digest": _verb("verbs.search", "digest_main"),
    "hook": _verb("hooks.core", "main"),
    "install": _verb("hooks.install", "main"),
    "gate": _verb("verbs.gate", "gate_main"),
    "mutable": _verb("verbs.gate", "mutable_main"),
    "prd": _verb("verbs.gate", "prd_main"),
    "evidence": _verb("verbs.gate", "evidence_main"),
    "approve": _verb("verbs.gate", "approve_main"),
    "work": _verb("verbs.work", "main"),
    "ui": _verb("verbs.ui", "main"),
    "receipt": _verb("verbs.receipt", "receipt_main"), "key": _verb("verbs.receipt", "key_main"),
    "audit": _verb("verbs.audit", "main"),
}

# verb prefix -> handler(verb, argv): `exec:python` is exec with lang "python".
PREFIXES = {
    "exec:": _exec_lang,
}

# JSON-RPC error code -> exit code, where one means more than "error" (1).
RPC_EXIT = {
    errors.INVALID_PARAMS: 2,  # unknown language, bad cwd, a value out of range: usage
    errors.UNAVAILABLE: 127,  # the interpreter is missing, as a shell says for a missing command
}


def _version(argv: list[str]) -> int:
    from plugkit import __version__

    print(f"plugkit {__version__}")
    return 0


def _usage() -> str:
    from plugkit import languages

    return USAGE.format(langs=", ".join(languages.names()))


def _help(argv: list[str]) -> int:
    print(_usage())
    return 0


SPECIAL = {"--version": _version, "version": _version, "-h": _help, "--help": _help, "help": _help}


# Names agents and people reach for that are plugkit's exec: verbs under another word.
MEANT = {**dict.fromkeys(("input", "write", "stdin", "send", "keys"), "exec:type"),
         **dict.fromkeys(("kill", "stop", "rm", "end"), "exec:close"),
         **dict.fromkeys(("wait", "until", "watch"), "exec:sleep"),
         **dict.fromkeys(("ps", "list", "ls", "jobs"), "exec:tasks"),
         **dict.fromkeys(("logs", "log", "output", "read", "tail", "poll", "cat", "show"), "exec:status")}


def _verb_typo(verb: str) -> str:
    """`exec:stauts` reads as language "stauts": when it is no language but close to one of
    the exec: verbs, say which. A language typo (`exec:pyhton`) is the runner's to name, since
    a workspace's .plugkit/lang plugins add languages only it sees. The cheap look first (same
    two first letters, or the same letters shuffled) keeps difflib and the language table off
    the hot path (of the built-in languages only typescript passes it)."""
    name = verb.partition(":")[2].lower()
    verbs = [v.partition(":")[2] for v in VERBS if v.startswith("exec:")]
    if name not in MEANT and not any(v[:2] == name[:2] or sorted(v) == sorted(name) for v in verbs):
        return ""
    from plugkit import languages

    try:
        languages.lookup(name)
        return ""
    except languages.UnknownLanguage:
        if name in MEANT:
            return f"; did you mean {MEANT[name]}?"
        from client.args import suggest

        return suggest(verb, [v for v in VERBS if v.startswith("exec:")])


# Verbs that print what an agent wrote (item subjects and notes, mutables, receipts' notes,
# memories, file names and lines): no control sequence or carriage return of its reaches the
# person's terminal (client/show/terminal_text.py); `work` and `runner logs` guard their own.
GUARDED = frozenset({"gate", "mutable", "prd", "evidence", "approve", "audit", "receipt", "memory", "search",
                     "digest", "exec:tasks"})


def run(argv: list[str]) -> int:
    if not argv:
        print(_usage(), file=sys.stderr)
        return 2
    verb, rest = argv[0], argv[1:]
    if verb in GUARDED:
        from client.show.terminal_text import guard_output

        guard_output(cr=False)
    handler = VERBS.get(verb) or SPECIAL.get(verb)
    if handler is None:
        for prefix, by_prefix in PREFIXES.items():
            if verb.startswith(prefix) and len(verb) > len(prefix):
                typo = _verb_typo(verb)
                if typo:
                    print(f"plugkit: unknown verb {verb!r}{typo}", file=sys.stderr)
                    return 2
                return by_prefix(verb, rest)
        from client.args import suggest

        hint = suggest(verb, [*VERBS, *SPECIAL]) or "; run `plugkit help` for the list"
        print(f"plugkit: unknown verb {verb!r}{hint}", file=sys.stderr)
        return 2
    return handler(rest)


def main() -> None:
    """The console script. Never returns: it ends the process with os._exit (see below)."""
    code = _guarded()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BrokenPipeError:
        _silence_stdout()
        code = code or 141
    except OSError:
        pass
    # Interpreter teardown (freeing every module, the editable-install finder's
    # state) costs 5-8 ms of a ~40 ms call, measured; the shim needs none of it:
    # no atexit hooks, no threads, and its output was flushed just above.
    os._exit(code)


def _guarded() -> int:
    try:
        code = run(sys.argv[1:])
        sys.stdout.flush()
        return code
    except SystemExit as exc:  # argparse, and --help in the table-driven verbs
        if exc.code is None or isinstance(exc.code, int):
            return exc.code or 0
        print(exc.code, file=sys.stderr)
        return 1
    except BrokenPipeError:
        # `plugkit ... | head -1`: the reader left; end quietly, like coreutils.
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except RpcFailure as exc:
        print(f"plugkit: {exc.message}{_data_hint(exc.data)}", file=sys.stderr)
        _json_error(exc.message, exc.code, exc.data)
        return RPC_EXIT.get(exc.code, 1)
    except ClientError as exc:
        print(f"plugkit: {exc}", file=sys.stderr)
        # The runner's code where it refused; else what kind of failure the exit code says.
        _json_error(str(exc), exc.code if exc.code is not None else CLIENT_CODES.get(exc.exit_code, "error"), None)
        return exc.exit_code
    except Exception as exc:  # a bug of ours: one line, the traceback only on request
        if os.environ.get("PLUGKIT_DEBUG"):
            raise
        print(f"plugkit: internal error ({exc.__class__.__name__}: {exc}); rerun with PLUGKIT_DEBUG=1 "
              "for the traceback and report it", file=sys.stderr)
        return 1


CLIENT_CODES = {2: "usage", 69: "unavailable"}  # exit code -> the --json error code of a client-side failure


def _json_error(message: str, code: object, data: object) -> None:
    """With --json, a failure is a JSON document on stdout too: programs get the same facts."""
    if "--json" not in sys.argv[1:]:
        return
    import json

    error = {"message": message, "code": code}
    if isinstance(data, dict) and data.get("next"):
        error["next"] = data["next"]
    elif isinstance(data, list):
        error["fields"] = data
    print(json.dumps({"error": error}))


def _data_hint(data: object) -> str:
    if isinstance(data, list):  # pydantic field problems
        return ": " + "; ".join(f"{d.get('field')}: {d.get('problem')}" for d in data if isinstance(d, dict))
    if isinstance(data, dict) and data.get("next"):
        return f" (next: {data['next']})"
    return ""


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
