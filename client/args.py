"""A tiny table-driven argument parser for the verbs on the hot path.

argparse costs ~2.5 ms to import and ~1 ms to build a parser, on a command
whose whole budget is a few tens of milliseconds; these verbs need only long
flags, valued options and positionals.

Rules: `--name value` and `--name=value`; `--` ends options; a lone `-` is a
positional. Known options are recognised anywhere before `--`. In a *loose*
verb (code or text follows the first positional), an unknown dash-word after
the first positional is part of the positionals, so `exec:bash ls -la` works;
before it, an unknown option is a typo and an error.
"""

from client import ClientError

FLAG = False
VALUE = True
HELP = frozenset({"-h", "--help"})


class UsageError(ClientError):
    exit_code = 2


class Help(Exception):
    """Raised when -h/--help is asked for; the verb prints its usage and exits 0."""


def parse(argv: list[str], options: dict[str, bool], *, loose: bool = False,
          min_pos: int = 0, max_pos: int | None = None, usage: str = "") -> tuple[dict, list[str]]:
    """(options, positionals). `options` maps "--name" to VALUE or FLAG; the result maps
    "name" (dashes inside turned to underscores) to the string value or True."""
    opts: dict[str, object] = {}
    pos: list[str] = []
    i, n = 0, len(argv)
    while i < n:
        word = argv[i]
        i += 1
        if word == "--":
            pos.extend(argv[i:])
            break
        if word in HELP and not (loose and pos):
            raise Help(usage)
        if len(word) < 2 or word[0] != "-" or (loose and pos and _name(word) not in options):
            pos.append(word)
            continue
        name, eq, value = word.partition("=")
        kind = options.get(name)
        if kind is None:
            raise UsageError(f"unknown option {name}{suggest(name, options)}" + (f"; {_brief(usage)}" if usage else ""))
        if kind is FLAG:
            if eq:
                raise UsageError(f"{name} takes no value")
            opts[_dest(name)] = True
            continue
        if not eq:
            if i >= n:
                raise UsageError(f"{name} needs a value")
            value = argv[i]
            i += 1
        opts[_dest(name)] = value
    if len(pos) < min_pos or (max_pos is not None and len(pos) > max_pos):
        raise UsageError(_brief(usage) if usage else "wrong number of arguments")
    return opts, pos


def suggest(word: str, choices) -> str:
    """`; did you mean X?` for the one close choice (difflib's ratio >= 0.75), or the one choice
    a word of three or more characters begins (`claud` -> claude-code), else ''.
    Imported only on a miss: the hot path never pays for difflib."""
    import difflib

    choices = list(choices)
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.75)
    if not close and len(word.lstrip("-")) >= 3:
        close = [c for c in choices if c.startswith(word)][:2]
        close = close if len(close) == 1 else []
    return f"; did you mean {close[0]}?" if close else ""


def _brief(usage: str) -> str:
    """An error shows the synopsis line only (agents read errors through a small window)."""
    return usage.splitlines()[0].strip() + "; --help shows the rest"


def _name(word: str) -> str:
    return word.partition("=")[0]


def _dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def number(opts: dict, key: str, flag: str, default: float | None = None, *,
           env: str | None = None, minimum: float = 0.0) -> float | None:
    """A non-negative number of seconds (or bytes) from an option, else an env var, else default."""
    import os

    raw = opts.get(key)
    source = flag
    if raw is None and env:
        raw, source = os.environ.get(env) or None, env
    if raw is None:
        return default
    try:
        value = float(raw)  # type: ignore[arg-type]
    except ValueError:
        raise UsageError(f"{source} must be a number, not {raw!r}") from None
    if not value >= minimum or value != value or value == float("inf"):
        raise UsageError(f"{source} must be a number >= {minimum:g}, not {raw!r}")
    return value


def task_id(word: str) -> int:
    """`task_7` or `7` -> 7."""
    digits = word[5:] if word.startswith("task_") else word
    if not digits.isdigit() or not digits.isascii():
        raise UsageError(f"{word!r} is not a task id; give it as task_N or N (see `plugkit exec:tasks`)")
    return int(digits)


def parse_or_help(argv: list[str], options: dict[str, bool], usage: str, **kw) -> tuple[dict, list[str]]:
    """parse(), except that -h/--help prints `usage` and ends the command with exit 0."""
    try:
        return parse(argv, options, usage=usage, **kw)
    except Help:
        print(usage)
        raise SystemExit(0) from None
