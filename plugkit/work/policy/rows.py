"""The destructive-command policy of a `plugkit work` worker: which tool calls a worker may not make.

judge() reads a host tool call (any host's spelling of its shell and file tools, from
plugkit.lifecycle.hook_policy's tables) and returns the first row of ROWS it breaks, or None.
judge_code() does the same for code a worker runs through the runner (`exec:bash` ...).

A guard rail for a cooperative but careless agent, not a sandbox: it reads what a command
names, never what a program does once it runs. Knowingly not caught: code in another language
(`python -c "shutil.rmtree('..')"`, `perl -e`, `node -e`; judge_code() returns None for every
language but the shells: a command policy cannot read them); what a program does by itself
(`make clean` whose Makefile deletes `..`, `npm install -g`, `pip install --user`, a git alias,
`git config core.hooksPath`); a script fetched to a file and run by a later command; a plain
(non-recursive) write to a path held in a variable (`> "$OUT"`, `cp a "$DEST"`); a here-doc fed
to a shell through a pipe (`cat <<EOF | sh`); text only the running shell makes (`eval "$X"`,
`$cmd` alone: an unnamed program is judged by its words, see STAND_INS); `sed -i`/`perl -i` on
files outside; `rsync`/`scp` to remote hosts; `-exec` inside an `-exec`'d find; a `cd` inside `$(..)` leaking out. Isolation
is the worktree and the runner's; this stops the common accidents early, with a one-line reason
the agent can act on.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, replace
from typing import Callable, Iterator

from plugkit.lifecycle.hook_policy import PATCH_FILES, PATH_KEYS, SHELL_TOOLS, WRITE_TOOLS
from plugkit.work.policy.checks import (EXEC_ACTIONS, chmod_world, find_parts, hooks_config, pipe_to_shell, privileged,
                                        push_force, rm_outside, unparseable, write_outside)
from plugkit.work.policy.paths import INSIDE, OUTSIDE, UNKNOWN, Scope
from plugkit.work.policy.refs import other_ref
from plugkit.work.policy.lift import MARK
from plugkit.work.policy.shell import SHELLS, Cmd, dynamic, parse

_MOVE_TO = "*** Move to: "  # Codex's apply_patch renames: the new name is written too
# Where a shell tool runs its command when it says so: Codex's `workdir`, Gemini/Qwen's `directory`.
RUN_DIR_KEYS = ("workdir", "directory")


@dataclass(frozen=True)
class Denial:
    rule: str  # the row's name; stable, callers may match on it
    reason: str  # one line for the agent: what was refused and what to do instead


@dataclass(frozen=True)
class Row:
    rule: str
    check: Callable[[Cmd, Scope], str | None]
    what: str  # "{detail}" and "{root}" are filled in
    instead: str


# What a command name only the running shell knows (`$cmd`, `${X:-rm}`, `$(..)`, `` `..` ``) may stand
# for: the programs the rows judge by name. Such a command is risky, and denied, when read as any of
# them a row would deny it (`$cmd -rf /` as rm, `$G push -f` as git, `curl u | $SH` as bash), or when
# what follows the name would be denied on its own (the name may be a wrapper: `$SUDO rm -rf /`).
# Not every unnamed program: `$(which python) -m pytest` is harmless read as each, and a worker's
# scripts do spell interpreters that way. Data, so a new row's program is added here too.
STAND_INS = ("rm", "find", "git", "chmod", "cp", "mv", "dd", "tee", "bash")


def unnamed_program(cmd: Cmd, scope: Scope) -> str | None:
    if not cmd.argv or not dynamic(cmd.prog):
        return None
    name = MARK.sub("$(..)", cmd.argv[0])
    readings = [(f"read as `{s}` it", replace(cmd, argv=(s, *cmd.argv[1:]))) for s in STAND_INS]
    if len(cmd.argv) > 1:
        readings.append(("what it runs", replace(cmd, argv=cmd.argv[1:])))
    for reading, as_named in readings:
        for row in _NAMED_ROWS:
            detail = row.check(as_named, scope)
            if detail is not None:
                return f"`{name}`; {reading} {row.what.format(detail=detail, root=scope.root)}"
    return None


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
    Row("other_ref", other_ref, "moves a ref that is not the worker's ({detail})",
        "commit on your own branch only: the runner lands it after its check and moves every other "
        "branch and tag itself (a moved ref is put back and the item rejected)"),
    Row("chmod_world", chmod_world, "makes files writable by everyone ({detail})", "use 755/644 or u+x"),
    Row("write_outside", write_outside, "writes outside your worktree {root} ({detail})",
        "write only inside it (or under the temp dir)"),
    Row("hooks_config", hooks_config, "edits the hook configuration that runs this policy ({detail})",
        "leave it as the runner installed it; if a hook is in the way, say so in your final message"),
    Row("unnamed_program", unnamed_program, "names its program only when it runs "
        "({detail})", "name the program literally (`rm`, not `$cmd` or `$(..)`) so it can be judged"),
    Row("unparseable", unparseable, "could not be parsed ({detail})",
        "write it with balanced quotes, or put it in a script file inside your worktree and run that"),
)
_NAMED_ROWS = tuple(r for r in ROWS if r.rule not in ("unnamed_program", "unparseable"))
_WRITE_ROW = next(r for r in ROWS if r.rule == "write_outside")
_HOOKS_ROW = next(r for r in ROWS if r.rule == "hooks_config")
_UNPARSEABLE_ROW = ROWS[-1]


def judge(tool_name: str, tool_input: dict, cwd: str, worktree: str) -> Denial | None:
    """The first row this host tool call breaks; None when it is not this policy's business."""
    scope = Scope.of(worktree)
    cwd = os.path.join(scope.root, cwd)
    if tool_name in SHELL_TOOLS:
        raw = tool_input.get(SHELL_TOOLS[tool_name])
        if isinstance(raw, list):  # Codex's local_shell: an argv, often ["bash", "-lc", SCRIPT]
            raw = shlex.join(str(a) for a in raw)
        run_in = next((v for k in RUN_DIR_KEYS if isinstance(v := tool_input.get(k), str) and v), "")
        return judge_shell(raw, os.path.join(cwd, os.path.expanduser(run_in)), scope) if isinstance(raw, str) else None
    if tool_name in WRITE_TOOLS:
        for path in written_paths(tool_input):
            status, real = scope.where(path, cwd, shell=False)
            if status in (OUTSIDE, UNKNOWN):
                return _deny(_WRITE_ROW, f"{tool_name} {path}", f"{path} is {real}", scope)
            config = scope.hook_config(real) if status == INSIDE else None
            if config:
                return _deny(_HOOKS_ROW, f"{tool_name} {path}", config, scope)
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
    if lang.strip().lower().removeprefix("exec:") not in SHELLS:  # names as task.exec takes them, any case
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
