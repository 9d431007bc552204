"""`plugkit`: the console script. Finds the verb in a table and turns failures into
one-or-two-line messages with an exit code; no traceback ever reaches the user.

Exit codes: 0 ok; 1 error; 2 usage; 3 runner not running (status); 69 runner
unavailable; a task's own exit code for exec; 124 task timed out; 128+N task killed by signal N.
"""

import os
import sys

from client.rpc import ClientError, RpcFailure

USAGE = """usage: plugkit <verb> [args]

  runner start|stop|status|restart|logs   manage the runner daemon
  --version                               print the version

Run `plugkit <verb> --help` for a verb's options."""


def _runner(argv: list[str]) -> int:
    from client import runner_verbs

    return runner_verbs.main(argv)


# verb -> handler(argv) -> exit code. Adding a verb is adding a row.
VERBS = {
    "runner": _runner,
}


def _version(argv: list[str]) -> int:
    from plugkit import __version__

    print(f"plugkit {__version__}")
    return 0


def _help(argv: list[str]) -> int:
    print(USAGE)
    return 0


SPECIAL = {"--version": _version, "version": _version, "-h": _help, "--help": _help, "help": _help}


def run(argv: list[str]) -> int:
    if not argv:
        print(USAGE, file=sys.stderr)
        return 2
    verb, rest = argv[0], argv[1:]
    handler = VERBS.get(verb) or SPECIAL.get(verb)
    if handler is None:
        print(f"plugkit: unknown verb {verb!r}; run `plugkit help` for the list", file=sys.stderr)
        return 2
    return handler(rest)


def main() -> int:
    try:
        code = run(sys.argv[1:])
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # `plugkit ... | head -1`: the reader left; end quietly, like coreutils.
        _silence_stdout()
        return 141
    except KeyboardInterrupt:
        return 130
    except RpcFailure as exc:
        print(f"plugkit: {exc.message}{_data_hint(exc.data)}", file=sys.stderr)
        return 1
    except ClientError as exc:
        print(f"plugkit: {exc}", file=sys.stderr)
        return exc.exit_code


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
