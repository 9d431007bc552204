"""The checks behind the work policy's rows: each reads one simple command and returns the part
that breaks its row (a flag, a path and where it points), or None. Pure: paths are resolved by
policy.paths.Scope, commands parsed by policy.shell."""

from __future__ import annotations

import os

from plugkit.work.policy.paths import INSIDE, OUTSIDE, Scope, operands, options_end, short_flags, where_text
from plugkit.work.policy.shell import FETCHERS, SHELLS, WRITE_REDIRECTS, Cmd, dynamic, program

EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})

PRIVILEGED = frozenset({"sudo", "doas", "pkexec", "su", "run0"})


def privileged(cmd: Cmd, scope: Scope) -> str | None:
    hits = [w for w in (*cmd.wrappers, cmd.prog) if w in PRIVILEGED]
    return f"`{hits[0]}`" if hits else None


INTERPRETERS = SHELLS | {"python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php", "pwsh", "deno",
                         "bun"}
RUN_TEXT = frozenset({"eval", "source", "."})


def _interpreter(prog: str) -> bool:
    return prog in INTERPRETERS or (prog.startswith("python3.") and prog[8:].isdigit())


def _code_word(argv: tuple[str, ...]) -> str | None:
    """The word an interpreter runs as its program: `-c`/`-e` CODE, or the script operand."""
    for i, w in enumerate(argv[1:], 1):
        if w in ("--eval", "--command") or (w.startswith("-") and not w.startswith("--") and set(w[1:]) & set("ceE")):
            return argv[i + 1] if i + 1 < len(argv) else None
        if w == "-m":
            return None
        if not w.startswith("-"):
            return w
    return None


def _reads_stdin(argv: tuple[str, ...]) -> bool:
    """`sh`, `python3 -`, `bash -s`: the program comes from stdin (not `python3 -c ..`, `jq`, a script)."""
    if "-s" in argv[1:] or "-" in argv[1:]:
        return True
    return not any(w in ("-m", "-p", "--print") or not w.startswith("-") for w in argv[1:]) and _code_word(argv) is None


def pipe_to_shell(cmd: Cmd, scope: Scope) -> str | None:
    prog = cmd.prog
    if not (_interpreter(prog) or prog in RUN_TEXT):
        return None
    code = cmd.argv[1] if prog in RUN_TEXT and len(cmd.argv) > 1 else _code_word(cmd.argv)
    fetched = sorted(cmd.sub_programs & FETCHERS)
    if fetched and code is not None and dynamic(code):
        return f"`{prog}` runs the output of `{fetched[0]}`"
    fed = sorted(cmd.fed_by & FETCHERS)
    if fed and (prog in RUN_TEXT or _reads_stdin(cmd.argv)):
        return f"`{fed[0]}` piped into `{prog}`"
    return None


def _recursive(argv: tuple[str, ...]) -> bool:
    return "--recursive" in argv[1:options_end(argv)] or bool(set(short_flags(argv)) & {"r", "R"})


def find_parts(argv: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """(start paths, expression) of `find [-H|-L|-P|-Ox] START... EXPR`."""
    i = 1
    while i < len(argv) and (argv[i] in ("-H", "-L", "-P") or argv[i].startswith("-O")):
        i += 1
    j = i
    while j < len(argv) and not argv[j].startswith("-") and argv[j] not in ("(", "!", ")"):
        j += 1
    return list(argv[i:j]) or ["."], list(argv[j:])


DELETERS = frozenset({"rm", "rmdir", "unlink", "shred"})


def rm_outside(cmd: Cmd, scope: Scope) -> str | None:
    if cmd.prog == "find":
        starts, expr = find_parts(cmd.argv)
        runs = {program(expr[j + 1]) for j, w in enumerate(expr[:-1]) if w in EXEC_ACTIONS}
        words = starts if "-delete" in expr or runs & DELETERS else []
    elif cmd.prog == "rm" and _recursive(cmd.argv):
        words = operands(cmd.argv)
        if cmd.via_xargs:  # xargs hands rm what the command before it printed: paths under its words
            words += [os.path.join(w, "{}") for w in cmd.upstream[1:] if not w.startswith("-")]
    else:
        return None
    for word in words:
        status, path = scope.where(word, cmd.cwd)  # SCRATCH too: /tmp is not for rm -rf
        if status != INSIDE or (path == scope.root and cmd.prog == "rm"):  # the worktree itself, .git link and all
            return where_text(word, status, path) if status != INSIDE else f"`{word}` is the worktree itself"
    return None


PUSH_VALUE_OPTIONS = frozenset({"-o", "--push-option", "--repo", "--receive-pack", "--exec"})
PUSH_FORCE = ("--force", "--mirror", "--delete", "--prune")  # --force-with-lease, --force-if-includes too


def git_parts(argv: tuple[str, ...]) -> tuple[str, tuple[str, ...], list[str]]:
    """(subcommand, its arguments, the -C/--git-dir/--work-tree directories before it)."""
    dirs: list[str] = []
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        w = argv[i]
        if w in ("-C", "-c", "--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix"):
            if w in ("-C", "--git-dir", "--work-tree") and i + 1 < len(argv):
                dirs.append(argv[i + 1])
            i += 2
            continue
        if w.startswith(("--git-dir=", "--work-tree=")):
            dirs.append(w.split("=", 1)[1])
        i += 1
    return (argv[i] if i < len(argv) else ""), argv[i + 1:], dirs


def push_force(cmd: Cmd, scope: Scope) -> str | None:
    if cmd.prog != "git":
        return None
    sub, args, _ = git_parts(cmd.argv)
    if sub != "push":
        return None
    skip = False
    for w in args:
        if skip:
            skip = False
        elif w in PUSH_VALUE_OPTIONS:
            skip = True
        elif w.startswith(PUSH_FORCE) or (w.startswith("-") and not w.startswith("--") and set(w[1:]) & {"f", "d"}):
            return f"`{w}`"
        elif w.startswith("+") or (w.startswith(":") and len(w) > 1):  # +force refspec, :branch deletes it
            return f"refspec `{w}`"
    return None


def _world_writable(mode: str) -> bool:
    if mode.isdigit():
        return all(c in "01234567" for c in mode) and bool(int(mode[-1]) & 2)
    for clause in mode.split(","):
        who = clause[:len(clause) - len(clause.lstrip("ugoa"))]
        op = ""
        for ch in clause[len(who):]:
            if ch in "+-=":
                op = ch
            elif ch == "w" and op in "+=" and op and set(who) & {"o", "a"}:
                return True
    return False


def chmod_world(cmd: Cmd, scope: Scope) -> str | None:
    if cmd.prog != "chmod":
        return None
    words = operands(cmd.argv)
    return f"mode {words[0]}" if words and _world_writable(words[0]) else None


# program -> which of its words it writes: all operands, the destination, all but the first, dd's of=
WRITERS = {"cp": "dest", "mv": "all", "install": "dest", "ln": "dest", "rsync": "dest", "tee": "all",
           "touch": "all", "mkdir": "all", "rmdir": "all", "truncate": "all", "shred": "all", "unlink": "all",
           "rm": "all", "chmod": "but_first", "chown": "but_first", "chgrp": "but_first", "dd": "of"}
# Run in a directory outside the worktree, these only read; anything else may write there.
READ_ONLY = frozenset({"ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "ag", "find",
                       "echo", "printf", "pwd", "stat", "file", "wc", "du", "df", "which", "type", "test", "[",
                       "true", "false", "diff", "cmp", "sort", "uniq", "cut", "tr", "jq", "tree", "realpath",
                       "readlink", "basename", "dirname", "date", "id", "whoami", "uname", "cd", "pushd", "popd",
                       "export", "unset", "set", "read", "sleep", "exit", "printenv", "sha256sum", "md5sum",
                       "xxd", "od", "nl", "tac", "column"})
GIT_READ_ONLY = frozenset({"status", "log", "diff", "show", "rev-parse", "ls-files", "ls-tree", "cat-file",
                           "describe", "blame", "grep", "shortlog", "rev-list", "show-ref", "for-each-ref",
                           "reflog", "name-rev", "merge-base", "version", "help", "count-objects"})


CHDIR_PROGRAMS = frozenset({"make", "gmake", "tar"})


SED_VALUE_OPTIONS = frozenset({"-e", "-f", "--expression", "--file", "-l", "--line-length"})
GIT_VALUE_OPTIONS = frozenset({"-b", "-B", "--branch", "-o", "--origin", "-c", "--config", "--depth", "--reference",
                               "--separate-git-dir", "-j", "--jobs", "--template", "-u", "--upload-pack", "--filter"})


def _positional(args: tuple[str, ...], takes_value: frozenset[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] in takes_value:
            i += 1
        elif not args[i].startswith("-") or args[i] == "-":
            out.append(args[i])
        i += 1
    return out


def _sed_files(argv: tuple[str, ...]) -> list[str]:
    """The files `sed -i` rewrites: its operands, less the script when no -e/-f gave one."""
    if "i" not in short_flags(argv) and not any(w.startswith("--in-place") for w in argv[1:]):
        return []
    scripted = any(w in ("-e", "-f", "--expression", "--file") or w.startswith(("--expression=", "--file="))
                   for w in argv[1:])
    words = _positional(argv[1:], SED_VALUE_OPTIONS)
    return words if scripted else words[1:]


def _git_written(sub: str, args: tuple[str, ...]) -> list[str]:
    """Where `git clone URL DIR` and `git worktree add DIR` create a tree."""
    if sub == "clone":
        return _positional(args, GIT_VALUE_OPTIONS)[1:2]
    if sub == "worktree" and args[:1] == ("add",):
        return _positional(args[1:], GIT_VALUE_OPTIONS)[:1]
    return []


def _written(cmd: Cmd) -> list[str]:
    if cmd.prog == "sed":
        return _sed_files(cmd.argv)
    if cmd.prog == "git":
        return _git_written(*git_parts(cmd.argv)[:2])
    kind, argv = WRITERS.get(cmd.prog), cmd.argv
    words = operands(argv)
    if kind == "of":
        return [w[3:] for w in argv[1:] if w.startswith("of=")]
    if kind == "dest":
        for i, w in enumerate(argv[1:], 1):
            if w in ("-t", "--target-directory") and i + 1 < len(argv):
                return [argv[i + 1]]
            if w.startswith("--target-directory="):
                return [w.split("=", 1)[1]]
        if cmd.prog == "install" and "d" in short_flags(argv):
            return words
        return words[-1:] if len(words) > 1 else ["."]  # one operand: into the current directory
    if kind == "but_first":
        return words[1:]
    return words if kind == "all" else []


def write_outside(cmd: Cmd, scope: Scope) -> str | None:
    for op, target in cmd.redirects:
        if op in WRITE_REDIRECTS and not (op == ">&" and (target.isdigit() or target == "-")):
            status, path = scope.where(target, cmd.cwd)
            if status == OUTSIDE:
                return f"`{op} {target}` is {path}"
    for word in _written(cmd):
        status, path = scope.where(word, cmd.cwd)
        if status == OUTSIDE:
            return where_text(word, status, path)
    run_dir, reads_only = cmd.cwd, cmd.prog in READ_ONLY
    for i, w in enumerate(cmd.argv[:-1]):  # make -C DIR, tar -C DIR: they work (tar: extracts) there
        if cmd.prog in CHDIR_PROGRAMS and w in ("-C", "--directory"):
            run_dir = None if run_dir is None and not os.path.isabs(cmd.argv[i + 1]) else \
                os.path.join(run_dir or "/", cmd.argv[i + 1])
    if cmd.prog == "git":
        sub, _, dirs = git_parts(cmd.argv)
        reads_only = sub in GIT_READ_ONLY
        for d in dirs:  # git -C A -C B: B is relative to A
            run_dir = None if run_dir is None and not os.path.isabs(d) else os.path.join(run_dir or "/", d)
    if run_dir is not None and not reads_only and cmd.argv:
        status, path = scope.where(run_dir, None, shell=False)
        if status == OUTSIDE and path != scope.tmp:  # what it writes there lands under the temp dir
            return f"runs `{cmd.prog}` in {path}"
    return None


def _targets(cmd: Cmd) -> list[tuple[str, bool]]:
    """(word, whether it goes away) for everything the command writes, moves or deletes."""
    out = [(t, False) for op, t in cmd.redirects
           if op in WRITE_REDIRECTS and not (op == ">&" and (t.isdigit() or t == "-"))]
    written = _written(cmd)
    if cmd.prog == "mv":  # the sources go away, the destination receives
        return out + [(w, True) for w in written[:-1]] + [(w, False) for w in written[-1:]]
    if cmd.prog == "find" and "-delete" in cmd.argv:
        written = find_parts(cmd.argv)[0]
    return out + [(w, cmd.prog in DELETERS or cmd.prog == "find") for w in written]


def hooks_config(cmd: Cmd, scope: Scope) -> str | None:
    for word, deletes in _targets(cmd):
        status, path = scope.where(word, cmd.cwd)
        config = scope.hook_config(path, deletes) if status == INSIDE else None
        if config:
            return config
    return None


RISKY = frozenset({"rm", "rmdir", "shred", "unlink", "sudo", "doas", "su", "pkexec", "run0", "chmod", "chown",
                   "dd", "curl", "wget", "fetch", "mv", "cp", "tee", "install", "ln", "truncate"})


def unparseable(cmd: Cmd, scope: Scope) -> str | None:
    if not cmd.opaque:
        return None
    names = {program(w) for w in cmd.argv}
    risky = sorted(names & RISKY) + (["git push"] if {"git", "push"} <= names else [])
    risky += ["find -delete"] if "find" in names and ("-delete" in names or "-exec" in names) else []
    return f"{cmd.opaque}, and it names `{risky[0]}`" if risky else None
