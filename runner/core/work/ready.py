"""A worktree that starts ready (issue 48 #1, #2): before its worker starts, the untracked files
`work_include` and `.worktreeinclude` name are copied in from the main checkout, the dirs
`work_share` names are copied (copy-on-write where the filesystem allows), a block of ports is
leased (`work_ports`, written into its .env when `work_ports_env`), and `work_setup` runs once,
as a task in the worker's sandbox with the worker's environment.

The attacks this stops: an include is a path inside the repository, read as a regular file with
no symbolic link on the way (a `.env -> ~/.ssh/id_rsa` or a link to the runner's token is
refused, never followed), and written into the worktree the same way (a link the branch tracks
cannot send it elsewhere); a pattern with `..` is refused. A shared dir is the worker's own copy,
never the main checkout's dir bound writable (the copying: runner/system/worktree_files.py).
The setup is the repository's code: it never runs outside the sandbox or with the runner's
environment. `.worktreeinclude` is a control file: a worker's branch that changes it does not
land (runner/core/work/held.py).
"""

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar

from plugkit import confined
from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.core.work import containers, git
from runner.core.work.model import Failed, ItemRun, Run
from runner.executors.base import ExecSpec
from runner.system import port_blocks, worktree_files as files_mod

INCLUDE_FILE = ".worktreeinclude"
MAX_FILES = 1000  # a pattern matching the whole tree is a mistake, not an include
MAX_BYTES = 64 << 20  # per included file
INCLUDE_LIMIT = 64 << 10  # .worktreeinclude itself
SETUP_MIN_S = 600.0
TAIL_BYTES, TAIL_LINES = 4096, 20
_GLOB = frozenset("*?[\\!")
T = TypeVar("T")


def _refuse(line: str) -> Failed:
    return Failed(REJECTED, "not_ready", line)


async def _fs(fn: Callable[..., T], *args: Any) -> T:
    """One of runner/system/worktree_files.py's steps, in a thread, its refusal as the item's."""
    try:
        return await asyncio.to_thread(fn, *args)
    except files_mod.NotCopied as exc:
        raise _refuse(str(exc)) from None
    except files_mod.CopyFailed as exc:
        raise Failed("failed", "spawn_failed", str(exc)) from None


@dataclass(frozen=True)
class Plan:
    files: tuple[str, ...] = ()  # untracked regular files of the main checkout, relative
    shares: tuple[str, ...] = ()  # dirs of the main checkout, relative
    ports: int = 0
    ports_env: bool = False

    @property
    def excludes(self) -> list[str]:
        """Kept out of the worker's `git add -A`: what the worktree got, not what its branch made."""
        return ([f"/{f}" for f in self.files] + [f"/{d}/" for d in self.shares]
                + (["/.env"] if self.ports_env else []))

    @property
    def empty(self) -> bool:
        return not (self.files or self.shares or self.ports)


def patterns(root: str, cfg) -> list[str]:
    """work_include's patterns and .worktreeinclude's lines (gitignore-style), each checked."""
    raw = confined.read_in(root, INCLUDE_FILE, INCLUDE_LIMIT)
    lines = raw.decode(errors="replace").splitlines() if raw else []
    out = []
    for line in [*cfg.work_include, *lines]:
        pat = line.strip()
        if not pat or pat.startswith("#"):
            continue
        body = pat.lstrip("!")
        if ".." in body.split("/") or "\0" in body or body.startswith("~"):
            raise _refuse(f"include pattern {pat!r} reaches outside the repository: plugkit copies only files "
                          f"inside it; fix work_include / {INCLUDE_FILE}")
        out.append(pat)
    return out


async def _matches(root: str, pats: list[str]) -> list[str]:
    """The untracked files the patterns match, by git's own gitignore matching (no link followed:
    git lists a link as itself); plus each literal pattern's path as written."""
    if not pats:
        return []
    out = await git.run(root, "ls-files", "-z", "--others", "--ignored", *(f"--exclude={p}" for p in pats))
    found = [p for p in out.split("\0") if p]
    found += [p.lstrip("/") for p in pats if not (_GLOB & set(p)) and not p.endswith("/")]
    # Never plugkit's own state nor git's: the worktree has its own of each.
    return sorted({p for p in found if not p.startswith((".plugkit/", ".git/")) and p != ".git"})


async def plan(root: str, cfg, run: Run, it: ItemRun) -> Plan:
    """What this attempt's worktree gets, checked against the main checkout (Failed: not_ready)."""
    it.ready = it.setup_task_id = it.ports = it.teardown = None
    files = []
    try:
        matched = await _matches(root, await asyncio.to_thread(patterns, root, cfg))
    except git.GitError as exc:
        raise Failed("failed", "spawn_failed", f"listing the include patterns' files: {exc}") from None
    for rel in matched:
        if await _fs(files_mod.checked_source, root, rel, MAX_BYTES) is not None:
            files.append(rel)
        if len(files) > MAX_FILES:
            raise _refuse(f"the include patterns match over {MAX_FILES} files: name the local files a worker "
                          "needs in work_include / .worktreeinclude, and dependency dirs in work_share")
    shares = [s for s in [await _fs(files_mod.share_source, root, d) for d in cfg.work_share] if s]
    got = Plan(tuple(files), tuple(shares), cfg.work_ports, cfg.work_ports_env)
    if run.runtime != "local" and (not got.empty or cfg.work_setup):
        raise _refuse(f"work_include, work_share, work_ports and work_setup apply to local workers only, not "
                      f"--runtime {run.runtime} yet; run this item with --runtime local")
    return got


async def fill(root: str, worktree: str, got: Plan, it: ItemRun) -> Optional[port_blocks.Lease]:
    """Copies what `got` names into the fresh worktree and leases its ports (the lease is the
    caller's to release when the attempt ends). Sets it.ready and it.ports."""
    said = []
    copied = [rel for rel in got.files if await _fs(files_mod.copy_file, root, worktree, rel)]
    if got.files:
        said.append(f"copied {len(copied)} file{'s' * (len(copied) != 1)} ({', '.join(copied[:4])})")
    for rel in got.shares:
        said.append(await _fs(files_mod.copy_dir, root, worktree, rel))
    lease = None
    if got.ports:
        try:
            lease = await asyncio.to_thread(port_blocks.lease, got.ports)
        except port_blocks.NoPorts as exc:
            raise Failed("failed", "spawn_failed", str(exc)) from None
        it.ports = lease.text
        said.append(f"ports {lease.text} (PORT={lease.first})")
        if got.ports_env:
            try:
                await _fs(files_mod.write_env, worktree, lease.env())
                if await git.run(worktree, "ls-files", "--", ".env"):  # tracked: our lines must not ride along
                    await git.run(worktree, "update-index", "--skip-worktree", "--", ".env")
            except git.GitError as exc:
                lease.release()
                raise Failed("failed", "spawn_failed", f"the ports into a tracked .env: {exc}") from None
            except Failed:
                lease.release()
                raise
            said[-1] += " in .env"
    it.ready = "ready: " + "; ".join(said) if said else None
    return lease


async def setup(p, run: Run, it: ItemRun, cfg, environ: dict[str, str]) -> None:
    """work_setup, once, in the worktree as a task in the worker's sandbox with the worker's own
    environment; red holds the item with the tail of its output."""
    if not cfg.work_setup:
        return
    assert it.worktree is not None and it.session_id is not None
    task = await p.tasks.exec(ExecSpec(session_id=it.session_id, cwd=it.worktree, lang="bash", code=cfg.work_setup,
                                       timeout_s=max(SETUP_MIN_S, cfg.verify_timeout_s), environ=environ,
                                       sandbox=run.sandbox, name=f"work_setup {it.id}",
                                       # a loopback-only worker's setup reaches no more than the worker
                                       offline=run.sandbox and run.network != "host",
                                       docker=containers.socket_of(p.home, it)))  # work_docker: the worker's proxy
    it.setup_task_id = task.id
    await task.done.wait()
    said = f"work_setup ran (task_{task.id})"
    it.ready = f"{it.ready}; {said}" if it.ready else f"ready: {said}"
    if task.state == "completed" and task.exit_code == 0:
        return
    tail = "".join(text for _s, text in p.tasks.read(task, max(0, task.buffer.end - TAIL_BYTES), TAIL_BYTES).chunks)
    tail = "\n".join(tail.splitlines()[-TAIL_LINES:])
    raise Failed("blocked", "setup_failed", f"work_setup `{cfg.work_setup[:80]}` {task.message} (task_{task.id}) "
                                            f"in {it.id}'s fresh worktree; the worker did not start; fix the "
                                            f"setup, then `plugkit prd update {it.id} --status pending && "
                                            f"plugkit work --items {it.id}`\nthe last lines of its output:\n{tail}")
