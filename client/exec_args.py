"""The exec options, one table: `plugkit exec:<lang>` on the command line and every hook's
`exec:` interception read their options through it, so an option means the same wherever an
agent or a person types it, and one no row names is an error, never code.

A row: the option, whether it takes a value, its metavar and help (the usage is built from
the rows), and, for the few a hook cannot honour, why (said when a hook is given one: a
hook that silently dropped `--sandbox` would run the code unconfined).
"""

from client.args import FLAG, VALUE, UsageError, parse


class Option:
    """One row. A plain class: dataclasses costs ~15 ms to import on `exec`'s hot path."""

    __slots__ = ("kind", "metavar", "help", "not_in_hook")

    def __init__(self, kind: bool, metavar: str, help: str, not_in_hook: str = "") -> None:
        self.kind = kind  # VALUE or FLAG
        self.metavar, self.help = metavar, help
        self.not_in_hook = not_in_hook  # why an exec: caught by a hook refuses it; "" when a hook takes it


OPTIONS: dict[str, Option] = {
    "--timeout": Option(VALUE, "S", "kill the task and its children after S seconds"),
    "--wait": Option(VALUE, "S", "stop waiting after S seconds (default 15, $PLUGKIT_WAIT; in a hook 10,\n"
                     "$PLUGKIT_HOOK_WAIT, at most 45); the task keeps running and the\n"
                     "follow-up commands are printed"),
    "--cwd": Option(VALUE, "D", "run in D (default: the current directory)"),
    "--session": Option(VALUE, "ID", "the session (default: $PLUGKIT_SESSION, else one per directory)",
                        "a hook's session is the one its host names"),
    "--file": Option(VALUE, "F", "run the code in file F"),
    "--json": Option(FLAG, "", "one JSON object at the end instead of streaming",
                     "a hook answers the model in text"),
    "--full": Option(FLAG, "", "no output cap (default: first+last 64 KiB, $PLUGKIT_MAX_OUTPUT)"),
    "--kill-on-interrupt": Option(FLAG, "", "Ctrl-C kills the task (the default when a person is at the terminal)",
                                  "no Ctrl-C reaches a hook; `exec:close task_N` stops a task"),
    "--keep-on-interrupt": Option(FLAG, "", "Ctrl-C leaves it running (the default otherwise: agents, hooks, pipes)",
                                  "no Ctrl-C reaches a hook; the task is kept already"),
    "--stdin": Option(FLAG, "", "the task's stdin stays open for `plugkit exec:type` and nothing of yours\n"
                      "is passed on (a hook's default when the code reads its stdin)"),
    "--no-stdin": Option(FLAG, "", "the task's stdin is empty and closed: a read gets end-of-file at once"),
    "--name": Option(VALUE, "NAME", "a label for the task, shown by exec:tasks and exec:status"),
    "--detach": Option(FLAG, "", "the task outlives its session: its session's end, or its agent host\n"
                       "exiting, does not kill it (exec:tasks marks it; exec:close ends it)"),
    "--sandbox": Option(FLAG, "", "run it in the worker sandbox: the cwd writable, the rest read-only, the\n"
                        "runner's home and your credentials hidden, its own PID namespace\n"
                        "(also: exec_sandbox = true in .plugkit/config.toml); refused if bwrap\n"
                        "cannot build one here"),
    "--explain": Option(FLAG, "", "run nothing: say which program would run the code for you (your PATH,\n"
                        "$VIRTUAL_ENV, $PLUGKIT_PYTHON) and exit"),
}
# `plugkit exec --lang L`: the generic verb names its language with an option.
LANG = {"--lang": Option(VALUE, "L", "the language (plugkit exec --lang L CODE)")}
KINDS = {name: row.kind for name, row in OPTIONS.items()}
EXCLUSIVE = (("--stdin", "--no-stdin"), ("--kill-on-interrupt", "--keep-on-interrupt"))


def kinds(generic: bool = False) -> dict[str, bool]:
    return {**KINDS, **({"--lang": VALUE} if generic else {})}


def parse_exec(argv: list[str], usage: str, *, generic: bool = False, hook: bool = False,
               loose: bool = True) -> tuple[dict, list[str]]:
    """(options, code words) from `argv`, by the CLI's rules (client.args.parse). `hook`: the
    exec: of a hook, which refuses the rows it cannot honour, naming why."""
    opts, words = parse(argv, kinds(generic), loose=loose, usage=usage)
    for a, b in EXCLUSIVE:
        if opts.get(dest(a)) and opts.get(dest(b)):
            raise UsageError(f"give {a} or {b}, not both")
    if hook:
        for name, row in OPTIONS.items():
            if row.not_in_hook and dest(name) in opts:
                raise UsageError(f"{name} is not taken by an exec: a hook runs: {row.not_in_hook}")
    return opts, words


def leading_options(text: str) -> tuple[list[str], str]:
    """The words before the code that are options (and their values), split as a shell
    would, and the rest of the line as written. A dash-word there is an option or an error,
    never code: `exec:bash --sandbx ls` must not run `--sandbx ls` unconfined. For the bare
    `exec:<lang> ...` line a hook catches, whose code is kept as written."""
    import shlex

    lexer = shlex.shlex(text, posix=True)
    lexer.whitespace_split, lexer.commenters = True, ""
    words: list[str] = []
    value_next = False
    while True:
        start = lexer.instream.tell()
        try:
            word = lexer.get_token()
        except ValueError as exc:
            raise ValueError(f"cannot split the options: {exc}") from None
        if word is None:
            return words, ""
        if value_next:
            words.append(word)
            value_next = False
        elif word == "--":
            return words + ["--"], text[lexer.instream.tell():].lstrip()
        elif not word.startswith("-") or word == "-" or word.startswith("<<"):
            return words, text[start:].lstrip()
        else:
            words.append(word)
            value_next = "=" not in word and KINDS.get(word) is VALUE


def dest(name: str) -> str:
    return name.lstrip("-").replace("-", "_")


def option_lines(generic: bool = False) -> str:
    """The options part of the usage, from the rows."""
    rows = {**(LANG if generic else {}), **OPTIONS}
    out = []
    for name, row in rows.items():
        head = f"  {name} {row.metavar}".rstrip()
        first, *rest = row.help.split("\n")
        out.append(f"{head:<23}{first}" if len(head) < 23 else f"{head}\n{'':<23}{first}")
        out.extend(f"{'':<23}{line}" for line in rest)
    return "\n".join(out)
