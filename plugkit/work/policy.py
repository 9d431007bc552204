"""The destructive-command policy of a `plugkit work` worker: which tool calls a worker may not make.

judge() reads a host tool call (any host's spelling of its shell and file tools, from
plugkit.lifecycle.policy's tables) and returns the first row of ROWS it breaks, or None.
judge_code() does the same for code a worker runs through the runner (`exec:bash` ...).

A guard rail for a cooperative but careless agent, not a sandbox. It reads what a command
names, so it cannot see what a program does once it runs: `python -c "shutil.rmtree('/')"`,
`make clean` whose Makefile deletes `..`, a script downloaded to a file and run later, a git
alias, a path taken from a variable for a plain (non-recursive) write. judge_code() therefore
judges only shell code; Python, Node and the rest get None (a command policy cannot read them).
Isolation comes from the worktree and the runner; this stops the common accidents early, with
a one-line reason the agent can act on.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from typing import Callable, Iterator

from plugkit.lifecycle.policy import PATCH_FILES, PATH_KEYS, SHELL_TOOLS, WRITE_TOOLS
from plugkit.work.policy_paths import INSIDE, OUTSIDE, Scope, operands, options_end, short_flags, where_text
from plugkit.work.policy_shell import FETCHERS, SHELLS, WRITE_REDIRECTS, Cmd, dynamic, parse, program

SHELL_LANGS = frozenset({"bash", "sh", "zsh"})
EXTRA_WRITE_TOOLS = frozenset({"edit"})  # Qwen Code's file editor, not in lifecycle's WRITE_TOOLS yet
_MOVE_TO = "*** Move to: "  # Codex's apply_patch renames: the new name is written too


@dataclass(frozen=True)
class Denial:
    rule: str  # the row's name; stable, callers may match on it
    reason: str  # one line for the agent: what was refused and what to do instead


# -- the rows' checks: each returns the offending part of the command, or None ----------------

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
        status, path = scope.where(word, cmd.cwd, scratch=False)
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


def _written(cmd: Cmd) -> list[str]:
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


RISKY = frozenset({"rm", "rmdir", "shred", "unlink", "sudo", "doas", "su", "pkexec", "run0", "chmod", "chown",
                   "dd", "curl", "wget", "fetch", "mv", "cp", "tee", "install", "ln", "truncate"})


def unparseable(cmd: Cmd, scope: Scope) -> str | None:
    if not cmd.opaque:
        return None
    names = {program(w) for w in cmd.argv}
    risky = sorted(names & RISKY) + (["git push"] if {"git", "push"} <= names else [])
    risky += ["find -delete"] if "find" in names and ("-delete" in names or "-exec" in names) else []
    return f"{cmd.opaque}, and it names `{risky[0]}`" if risky else None


@dataclass(frozen=True)
class Row:
    rule: str
    check: Callable[[Cmd, Scope], str | None]
    what: str  # "{detail}" and "{root}" are filled in
    instead: str


# One row per kind of harm; each command meets the rows in order and the first that objects decides.
ROWS: tuple[Row, ...] = (
    Row("sudo", privileged, "asks for root ({detail})",
        "a worker never gets root: do it without privileges inside your worktree, or leave it for a person"),
    Row("pipe_to_shell", pipe_to_shell, "runs code fetched from the network ({detail})",
        "download it to a file inside your worktree (`curl -o f URL`), read it, then run it"),
    Row("rm_outside", rm_outside, "deletes outside your worktree {root} ({detail})",
        "delete only inside it, with literal paths (no $VAR, ~ or ..)"),
    Row("push_force", push_force, "rewrites or deletes remote history ({detail})",
        "push without force (`git push origin BRANCH`); a force-push is a person's decision"),
    Row("chmod_world", chmod_world, "makes files writable by everyone ({detail})", "use 755/644 or u+x"),
    Row("write_outside", write_outside, "writes outside your worktree {root} ({detail})",
        "write only inside it (or under the temp dir)"),
    Row("unparseable", unparseable, "could not be parsed ({detail})",
        "write it with balanced quotes, or put it in a script file inside your worktree and run that"),
)
_WRITE_ROW = next(r for r in ROWS if r.rule == "write_outside")
_UNPARSEABLE_ROW = ROWS[-1]


def judge(tool_name: str, tool_input: dict, cwd: str, worktree: str) -> Denial | None:
    """The first row this host tool call breaks; None when it is not this policy's business."""
    scope = Scope.of(worktree)
    cwd = os.path.join(scope.root, cwd)
    if tool_name in SHELL_TOOLS:
        raw = tool_input.get(SHELL_TOOLS[tool_name])
        if isinstance(raw, list):  # Codex's local_shell: an argv, often ["bash", "-lc", SCRIPT]
            raw = shlex.join(str(a) for a in raw)
        return judge_shell(raw, cwd, scope) if isinstance(raw, str) else None
    if tool_name in WRITE_TOOLS or tool_name in EXTRA_WRITE_TOOLS:
        for path in written_paths(tool_input):
            status, real = scope.where(path, cwd, shell=False)
            if status != INSIDE:
                return _deny(_WRITE_ROW, f"{tool_name} {path}", f"{path} is {real}", scope)
    return None


def written_paths(tool_input: dict) -> list[str]:
    paths = [str(tool_input[k]) for k in PATH_KEYS if isinstance(tool_input.get(k), str)]
    patch = tool_input.get("input") or tool_input.get("patch")
    if isinstance(patch, str):
        paths += [p.strip() for p in PATCH_FILES.findall(patch)]
        paths += [line[len(_MOVE_TO):].strip() for line in patch.splitlines() if line.startswith(_MOVE_TO)]
    return paths


def judge_code(lang: str, code: str, cwd: str, worktree: str) -> Denial | None:
    """Code run through the runner: shell code is judged as a command; other languages -> None."""
    if lang.removeprefix("exec:") not in SHELL_LANGS:
        return None
    scope = Scope.of(worktree)
    return judge_shell(code, os.path.join(scope.root, cwd), scope)


def judge_shell(command: str, cwd: str, scope: Scope) -> Denial | None:
    for cmd in _with_find_execs(parse(command, os.path.normpath(cwd))):
        for row in (_UNPARSEABLE_ROW,) if cmd.opaque else ROWS:
            detail = row.check(cmd, scope)
            if detail is not None:
                return _deny(row, cmd.text(), detail, scope)
    return None


EXEC_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})
MAX_FIND_STARTS = 16


def _with_find_execs(cmds: list[Cmd]) -> Iterator[Cmd]:
    """Each command, and after a `find` what its -exec would run, `{}` standing for each start path
    (`find / -exec rm -rf {} +` is judged as `rm -rf /`). One level: an -exec'd find is not expanded."""
    for cmd in cmds:
        yield cmd
        if cmd.prog != "find" or cmd.opaque:
            continue
        starts, expr = find_parts(cmd.argv)
        for j, w in enumerate(expr):
            if w not in EXEC_ACTIONS:
                continue
            end = next((k for k in range(j + 1, len(expr)) if expr[k] in (";", "+")), len(expr))
            for start in starts[:MAX_FIND_STARTS]:
                # what find hands over lies under a start path: `find . -exec rm -rf {} +` is no `rm -rf .`
                argv = [x.replace("{}", os.path.join(start, "{}")) for x in expr[j + 1:end]]
                if argv:
                    yield from parse(shlex.join(argv), cmd.cwd, 1)


def _deny(row: Row, excerpt: str, detail: str, scope: Scope) -> Denial:
    what = row.what.format(detail=detail, root=scope.root)
    return Denial(row.rule, " ".join(f"plugkit work: `{excerpt}` {what}; {row.instead}".split()))
