"""What the gates take from the runner's own eyes: a task's witnessed output and git's view.

Tasks are found by id across sessions (the gates accept a task of any session working in
the same workspace), in memory first, then in the ledger. git runs as a subprocess off
the event loop through runner.system.git (optional locks off, so a status check never takes
`index.lock` from under the agent's own git command).
"""

import hashlib
import os
import platform
from typing import Mapping, Optional

import plugkit
from plugkit.lifecycle.evidence import RunFacts, TaskWitness
from plugkit.lifecycle.gating import Witnessed
from plugkit.lifecycle.mutables import Witness
from plugkit.lifecycle.phases import GitFacts
from runner.core.tasks.manager import TaskManager
from runner.core.tasks.task import Task
from runner.system import git as system_git

GIT_TIMEOUT_S = 15.0  # git itself runs under runner.system.git's environment rule (no optional locks)
# The variables that change what a check does, hashed into a signed receipt (names kept, values
# only as one digest: a token in the environment never leaves the machine through a receipt).
ENV_VARS = ("PATH", "PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "CONDA_PREFIX", "NODE_PATH", "NODE_OPTIONS",
            "GOPATH", "GOFLAGS", "GOROOT", "CARGO_HOME", "RUSTFLAGS", "RUSTUP_TOOLCHAIN", "JAVA_HOME",
            "LANG", "LC_ALL", "TZ", "CI")
ENV_PREFIXES = ("PYTEST_", "PYTHON", "NODE_", "GO", "CARGO_")


async def find_task(tasks: TaskManager, task_id: int) -> Optional[Task]:
    return await tasks.find(task_id)


async def witness(tasks: TaskManager, task: Task, command: Optional[str] = None,
                  environ: Optional[Mapping[str, str]] = None, with_git: bool = True) -> Witnessed:
    """The finished task's output (stdout and stderr as captured; the runner's own [plugkit]
    notes left out) and the facts a receipt records: `command` is kept only when it is the code
    the task ran (its hash is the ledger's), `environ` is what it started from (None: unknown).
    with_git False: no HEAD asked (a receipt that pins no HEAD binds no commit or tree anyway)."""
    buf = task.buffer
    res = buf.read(buf.start, buf.end - buf.start)
    output = "".join(text for stream, text in res.chunks if stream != "info")
    truncated = buf.dropped > 0 or task.bytes_out_before > 0
    code_sha = await tasks.code_sha256(task)
    seen = Witness(task_id=task.id, state=task.state, exit_code=task.exit_code, output=output, truncated=truncated)
    receipt = TaskWitness(task_id=task.id, session_id=task.session.session_id, lang=task.lang,
                          code_sha256=code_sha, state=task.state, exit_code=task.exit_code, truncated=truncated)
    run = await run_facts(task, code_sha, command, environ, with_git)
    return Witnessed(seen=seen, task=receipt, run=run)


async def run_facts(task: Task, code_sha: Optional[str], command: Optional[str],
                    environ: Optional[Mapping[str, str]], with_git: bool = True) -> RunFacts:
    if command is not None and code_sha is not None and \
            hashlib.sha256(command.encode("utf-8", "surrogatepass")).hexdigest() != code_sha:
        command = None  # the setting changed since the task started: name no command it did not run
    commit, tree = await head_and_tree(task.cwd) if with_git else (None, None)
    names: list[str] = []
    digest = ""
    if environ is not None:
        names = sorted(n for n in environ if n in ENV_VARS or n.startswith(ENV_PREFIXES))
        h = hashlib.sha256()
        for name in names:
            h.update(name.encode() + b"=" + environ[name].encode("utf-8", "surrogatepass") + b"\0")
        digest = h.hexdigest()
    env = {"os": f"{platform.system()} {platform.release()}", "machine": platform.machine(),
           "plugkit": plugkit.__version__}
    duration = round(task.ended_at - task.started_at, 3) if task.ended_at is not None else None
    return RunFacts(commit=commit, tree=tree, command=command, lang=task.lang, env=env, env_vars=names,
                    env_digest=digest, exit_code=task.exit_code, duration_s=duration)


async def head_and_tree(cwd: str) -> tuple[Optional[str], Optional[str]]:
    """HEAD and its tree where the task ran (None, None: no repository, or no commit yet)."""
    try:
        done = await system_git.run(cwd, "rev-parse", "-q", "HEAD", "HEAD^{tree}",
                                    timeout=GIT_TIMEOUT_S)
    except (OSError, system_git.GitTimeout):
        return None, None
    lines = done.out.decode(errors="replace").split()
    return (lines[0], lines[1]) if done.rc == 0 and len(lines) == 2 else (None, None)


async def git_facts(root: str) -> GitFacts:
    """One `git status --porcelain=v2 --branch` tells HEAD, upstream, ahead count and dirt."""
    try:
        done = await system_git.run(root, "status", "--porcelain=v2", "--branch", "-z", "--", ".",
                                    timeout=GIT_TIMEOUT_S)
    except system_git.NotOurs as exc:
        return GitFacts(repo=True, error=str(exc))
    except OSError:  # git missing (or root gone)
        if os.path.exists(os.path.join(root, ".git")):
            return GitFacts(repo=True, error="git is not installed, so the worktree cannot be checked")
        return GitFacts(repo=False)
    except system_git.GitTimeout:
        return GitFacts(repo=True, error=f"git status took over {GIT_TIMEOUT_S:.0f} s")
    out, err = done.out, done.err
    if done.rc != 0:
        message = err.decode(errors="replace").strip().splitlines()
        if message and "not a git repository" in message[0]:
            return GitFacts(repo=False)
        return GitFacts(repo=True, error=f"git status failed: {message[0] if message else done.rc}")
    return parse_status(out.decode(errors="surrogateescape"))


def parse_status(text: str) -> GitFacts:
    head = upstream = None
    ahead: Optional[int] = None
    dirty: list[str] = []
    records = iter(text.split("\0"))
    for rec in records:
        if rec.startswith("# branch.oid "):
            oid = rec[len("# branch.oid "):]
            head = None if oid == "(initial)" else oid
        elif rec.startswith("# branch.upstream "):
            upstream = rec[len("# branch.upstream "):]
        elif rec.startswith("# branch.ab "):
            ahead = int(rec.split()[2].lstrip("+"))
        elif rec.startswith("1 "):
            dirty.append(rec.split(" ", 8)[8])
        elif rec.startswith("2 "):
            dirty.append(rec.split(" ", 9)[9])
            next(records, None)  # a rename's original path travels as its own record
        elif rec.startswith("u "):
            dirty.append(rec.split(" ", 10)[10])
        elif rec.startswith("? "):
            dirty.append(rec[2:])
    return GitFacts(repo=True, dirty=tuple(dirty), upstream=upstream,
                    ahead=(ahead if upstream is not None else 0), head=head)
