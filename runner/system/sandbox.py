"""The bubblewrap sandbox a worker runs in: the argv that wraps its own, built from tables.

What the worker sees (rows below, applied in order; a later mount covers an earlier one):
  - the whole filesystem read-only (its toolchains, its interpreters, the system), but /tmp,
    /var/tmp and /run/user empty (runner/system/sandbox_home.py: no one's sockets there);
  - its worktree read-write, and a private temp dir (TMPDIR) nobody else shares;
  - the main checkout's working files: not at all (an empty tmpfs over the repository);
  - the repository's .git read-only, except what a commit on its own branch writes: its own
    worktree admin dir (HEAD, index); its branch's ref and reflog, in its own dirs shown over
    refs/heads/plugkit/ and its reflog dir (runner/system/worker_refs.py: the runner takes the
    tip from there); and objects, which go to the worker's own object dir shown at .git/objects
    (the real store read-only inside it; runner/system/worker_objects.py imports what it wrote, checked). In that admin
    dir what says which repository and config the worktree has (config.worktree, gitdir,
    commondir) and the worktree's own `.git` file stay read-only: git run on the worktree
    outside the sandbox must not run a program the worker named there. A commit updates
    refs/heads/plugkit/<id> through a lock file created in that directory, so the directory
    shown there is writable: the worker's own copy, which no other worker and no git outside
    ever writes through. main, the run's branch, tags and the other items' branches stay read-only;
  - $PLUGKIT_HOME: an empty tmpfs, except what a worker's hooks and `exec:` need to reach this
    runner, read-only: the port file, and at the token's path the worker's own capability
    (plugkit/work/capabilities.py), never the runner's token; the ledger, logs, gates state
    and MAC key stay hidden;
  - the user's credentials (CREDENTIALS): an empty dir or /dev/null over each;
  - the rest of HOME read-only, its caches private and a host's state a private copy, /tmp and
    the runtime dirs empty, no agent variable, no abstract socket made outside
    (runner/system/sandbox_home.py, runner/system/landlock.py);
  - the worktree's own `.git` (a dir, or a linked worktree's file) read-only over its bind;
  - its own PID namespace (it cannot see or signal the runner or other tasks) and it dies
    with the process that started it (--die-with-parent).
Standard library only; argv() copies a host's state and the probe is blocking (call them in a thread).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from typing import Mapping, Optional

from plugkit.hosts import COMMAND, HOSTS
from runner.system import docker_request, landlock, sandbox_home, worker_objects, worker_refs

PROGRAM = "bwrap"
# Under $HOME: hidden unless a scope grants them. A directory gets an empty tmpfs, a file /dev/null.
CREDENTIALS: tuple[str, ...] = (
    ".ssh", ".aws", ".config/gcloud", ".azure", ".kube", ".docker", ".gnupg", ".netrc",
    ".git-credentials", ".config/gh", ".pypirc", ".npmrc", ".terraform.d", ".vault-token",
)
# Per worker kind, the state each host keeps under $HOME (declared, not guessed): the worker
# gets a private copy of each bound over it (sandbox_home.host_state), never the real one,
# which the person's own host reads its settings and hooks from. A row ending in "/" is a dir.
# No row for every kind: the toolchains' caches are private (sandbox_home.CACHE_VARS).
# Each host's worker fact names its own (plugkit/hosts.py).
CACHES: dict[str, tuple[str, ...]] = {
    **{h.platform: h.worker.home_state for h in HOSTS if h.worker is not None}, COMMAND: ()}
# The files of $PLUGKIT_HOME the worker may read: where this runner listens. (The token's path
# shows the worker's capability instead: `capability` below.)
HOME_GRANTS: tuple[str, ...] = ("port",)
TOKEN = "token"


class SandboxUnavailable(Exception):
    """bwrap is missing or cannot build a sandbox on this kernel/user; the message says why."""


@dataclass(frozen=True)
class Layout:
    """Where things are for one worker: derived from its worktree, the runner's home, HOME."""
    worktree: str
    repo: Optional[str]        # the main checkout (hidden), None when not a linked worktree
    git_dir: Optional[str]     # the repository's common .git (read-only)
    admin: Optional[str]       # .git/worktrees/<name>: this worktree's own HEAD and index
    home: str                  # $PLUGKIT_HOME
    user_homes: tuple[str, ...]  # $HOME of the worker and of the runner
    tmp: str                   # the worker's private temp dir
    reads: tuple[str, ...] = ()  # files its environment names by absolute path (read back under a hidden /tmp)
    # The worker's own object dir (runner/system/worker_objects.py), shown at <git_dir>/objects with
    # the real store read-only inside it; None: the real store is only read-only, like the rest.
    objects: Optional[str] = None
    # The worker's own refs dir (runner/system/worker_refs.py), shown over refs/heads/plugkit/ and its
    # reflogs; None: those stay read-only.
    refs: Optional[str] = None


def layout(worktree: str, home: str, env: Mapping[str, str], tmp: str) -> Layout:
    worktree = os.path.realpath(worktree)
    admin = git_dir = repo = None
    try:
        with open(os.path.join(worktree, ".git"), encoding="utf-8") as fh:
            line = fh.read().strip()
        if line.startswith("gitdir:"):
            admin = os.path.realpath(os.path.join(worktree, line.split(":", 1)[1].strip()))
            git_dir = os.path.dirname(os.path.dirname(admin))  # <git>/worktrees/<name>
            repo = os.path.dirname(git_dir) if os.path.basename(git_dir) == ".git" else None
    except OSError:
        pass  # not a linked worktree (a plain dir): only the worktree itself is granted
    homes = {os.path.realpath(h) for h in (env.get("HOME"), os.path.expanduser("~")) if h}
    objects = worker_objects.existing(worktree) if git_dir is not None else None
    refs = worker_refs.existing(worktree) if git_dir is not None else None
    return Layout(worktree, repo, git_dir, admin, os.path.realpath(home), tuple(sorted(homes)), tmp,
                  sandbox_home.named_files(env), objects, refs)


def _exists(path: str) -> bool:
    return os.path.lexists(path)


def mounts(lay: Layout, kind: str, granted: tuple[str, ...] = (), capability: Optional[str] = None,
           reads: tuple[str, ...] = (), extra: tuple[str, ...] = ()) -> list[str]:
    """The bwrap mount arguments, in order (later covers earlier). `capability`: a file holding
    the worker's own capability, shown at the token's path (None: no token there at all).
    `reads`: files the sandbox is handed by name (its argv), read back should /tmp hide them.
    `extra`: more bwrap arguments (a relay's dir under /tmp), before the empty layers go read-only."""
    args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
    # /tmp and the runtime dirs emptied (their path sockets gone); HOME, the interpreter and the
    # regular files the sandbox is handed by name (never a socket, never a dir) read back.
    args += sandbox_home.hide((*lay.user_homes, sandbox_home.interpreter_root(), *sandbox_home.runner_install(),
                               *lay.reads, *reads))
    for user_home in lay.user_homes:
        args += sandbox_home.host_state(user_home, CACHES.get(kind, ()), lay.tmp)
        for rel in CREDENTIALS:
            path = os.path.join(user_home, rel)
            if rel in granted or not _exists(path):
                continue
            args += ["--tmpfs", path] if os.path.isdir(path) else ["--ro-bind", "/dev/null", path]
    if lay.repo is not None:
        args += ["--tmpfs", lay.repo]  # the main checkout's files: gone (other worktrees with them)
    if lay.git_dir is not None:
        args += ["--ro-bind", lay.git_dir, lay.git_dir]
        # The real store stays read-only (a worker that could rewrite a loose object would change
        # main under the same hash): its writes go to its own dir, checked before they are imported.
        store = os.path.join(lay.git_dir, "objects")
        if lay.objects is not None and os.path.isdir(store):
            args += ["--bind", lay.objects, store, "--ro-bind", store, os.path.join(store, worker_objects.STORE)]
        # Its own branch's ref and reflog in its own dirs (runner/system/worker_refs.py): the
        # repository's refs/heads/plugkit/ is shared with every other worker and the runner's git,
        # and a link or symbolic ref planted there is followed outside. None: read-only, like the rest.
        for rel, sub in worker_refs.SHOWN if lay.refs is not None else ():
            path = os.path.join(lay.git_dir, rel)
            if os.path.isdir(path):
                args += ["--bind", os.path.join(lay.refs, sub), path]
        if lay.admin is not None:
            args += ["--bind", lay.admin, lay.admin]
    # Whatever above covered it (the home may sit under $HOME or the repo), the home is hidden.
    args += ["--tmpfs", lay.home]
    for name in HOME_GRANTS:
        path = os.path.join(lay.home, name)
        if _exists(path):
            args += ["--ro-bind", path, path]
    if capability is not None:
        args += ["--ro-bind", capability, os.path.join(lay.home, TOKEN)]
    # Last, so nothing above hides them: the worker's own places.
    args += ["--bind", lay.worktree, lay.worktree, "--bind", lay.tmp, lay.tmp]
    # The worktree's .git (the workspace's own repository for `exec --sandbox`, the gitdir file
    # of a worker's worktree) read-only over that bind: the person's and the runner's next git
    # command there would run what its config and hooks say, unconfined.
    dot_git = os.path.join(lay.worktree, ".git")
    if _exists(dot_git):
        args += ["--ro-bind", dot_git, dot_git]
    args += _git_pointers(lay)  # the admin dir's config.worktree/gitdir/commondir, read-only too
    args += extra
    # The empty tmpfs layers read-only once the binds inside them exist: a write there would
    # land nowhere the runner looks, yet "succeed" (and mislead the worker and its evidence).
    for i, arg in enumerate(list(args)):
        if arg == "--tmpfs":
            args += ["--remount-ro", args[i + 1]]
    return args


# In a worktree's admin dir, the files that say which repository it is and what config it reads:
# the runner's (and the person's) git in or on that worktree would trust them. Read-only mounts
# over files in a writable dir: a write, a rename over them or an unlink fails (EROFS, EBUSY).
GIT_POINTERS: tuple[str, ...] = ("config.worktree", "gitdir", "commondir")


def _git_pointers(lay: Layout) -> list[str]:
    """The worktree's `.git` file and its admin dir's GIT_POINTERS, read-only over the writable
    binds. A missing config.worktree is made empty first: one the worker created would otherwise
    be read as soon as anything turned extensions.worktreeConfig on. (Not /dev/null: a device on
    the nodev bind cannot be opened, and git refuses to run on a config it cannot read.)"""
    if lay.admin is None:
        return []
    dot_git = os.path.join(lay.worktree, ".git")
    args = ["--ro-bind", dot_git, dot_git] if os.path.isfile(dot_git) and not os.path.islink(dot_git) else []
    for name in GIT_POINTERS:
        path = os.path.join(lay.admin, name)
        if name == "config.worktree" and not os.path.lexists(path):
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
            except OSError:
                args += ["--ro-bind", "/dev/null", path]  # unreadable, so git stops: fails closed
                continue
        if os.path.isfile(path) and not os.path.islink(path):
            args += ["--ro-bind", path, path]
    return args


def argv(lay: Layout, kind: str, inner: list[str], granted: tuple[str, ...] = (),
         capability: Optional[str] = None, cwd: Optional[str] = None, extra: tuple[str, ...] = (),
         docker: Optional[str] = None) -> list[str]:
    """The whole command line: bwrap, its mounts, its namespaces, then the worker's argv
    (run in `cwd`, inside the worktree; default: the worktree itself). `extra`: more bwrap
    arguments after the mounts (a network namespace, its relay's dir; runner/system/netrelay.py).
    `docker`: the socket of this worker's proxy to the container engine (work_docker,
    runner/system/docker_proxy.py), in the runner's home: its dir alone is bound back, read-only,
    and DOCKER_HOST names it. The engine's own sockets stay hidden (sandbox_home.HIDDEN_SOCKETS)."""
    if docker is not None:
        folder = os.path.dirname(docker)
        extra = (*extra, "--ro-bind", folder, folder)
    program = shutil.which(PROGRAM)
    if program is None:
        raise SandboxUnavailable("bwrap is not installed (apt-get install bubblewrap, or scripts/setup)")
    # Abstract sockets live in a network namespace: one of its own (extra) keeps them out,
    # else Landlock's scope where the kernel has it (runner/system/landlock.py).
    inner = inner if "--unshare-net" in extra else landlock.wrap(inner)
    return [program, "--die-with-parent", "--unshare-pid", "--new-session",
            *mounts(lay, kind, granted, capability, sandbox_home.named_files(dict(enumerate(inner))), extra),
            *sandbox_home.environment(lay.tmp),
            *(["--setenv", "DOCKER_HOST", f"unix://{docker}", "--setenv", "COMPOSE_PROJECT_NAME",
               docker_request.project_name(lay.worktree)] if docker is not None else []),
            "--chdir", cwd or lay.worktree, "--setenv", "TMPDIR", lay.tmp, "--", *inner]


# What the self-test tries inside a real sandbox; each line must fail. {x} are filled in below.
SELF_TEST: tuple[tuple[str, str], ...] = (
    ("read the runner's home", "cat {canary}"),
    ("read the runner's token", "cat {token}"),
    ("read a credential file", "cat {home}/.ssh/id_rsa"),
    ("write outside the worktree", "echo x > {outside}"),
    ("write the main checkout", "echo x > {repo}/README"),
    ("write the repository's object store", "echo x > {repo}/.git/objects/x"),
    ("signal a process outside", "kill -0 {runner_pid}"),
)


def self_test(home: str) -> Optional[str]:
    """None if every SELF_TEST step is denied in a sandbox built as a worker's is, else what
    got through (blocking). The scratch repo, HOME and canary are made here, then removed."""
    problem = probe()
    if problem is not None:
        return problem
    scratch = tempfile.mkdtemp(prefix="plugkit-sandbox-test-")
    canary = os.path.join(home, f".sandbox-canary-{os.getpid()}")
    try:
        repo, user = os.path.join(scratch, "repo"), os.path.join(scratch, "user")
        worktree = os.path.join(repo, ".plugkit", "worktrees", "t")
        git_admin = os.path.join(repo, ".git", "worktrees", "t")
        for d in (worktree, git_admin, os.path.join(repo, ".git", "objects"), os.path.join(user, ".ssh"),
                  os.path.join(scratch, "tmp")):
            os.makedirs(d)
        for path, text in ((os.path.join(worktree, ".git"), f"gitdir: {git_admin}\n"),
                           (os.path.join(user, ".ssh", "id_rsa"), "secret\n"), (canary, "secret\n"),
                           (os.path.join(repo, "README"), "x\n")):
            with open(path, "w") as fh:
                fh.write(text)
        lay = layout(worktree, home, {"HOME": user}, os.path.join(scratch, "tmp"))
        local = sandbox_home.LocalProbe(user)  # HOME's caches, a host's state, local sockets
        fill = {"canary": canary, "token": os.path.join(home, TOKEN), "home": user, "outside": os.path.join(scratch, "outside"), "repo": repo,
                "runner_pid": os.getpid(), "worktree": worktree, **local.fill()}
        script = "; ".join(f"if {{ {line.format(**fill)}; }} >/dev/null 2>&1; then echo {shlex.quote('GOT ' + name)}; fi"
                           for name, line in SELF_TEST + local.steps())
        script += f"; echo x > {shlex.quote(user)}/.claude/planted 2>/dev/null; true"  # its copy: must not reach out
        try:  # as Claude Code's worker: its host's state row (a private copy) too
            done = subprocess.run(argv(lay, "claude-code", ["sh", "-c", script]), capture_output=True, text=True,
                                  timeout=30, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **local.env()})
        finally:
            local.close()
        got = [line[4:] for line in done.stdout.splitlines() if line.startswith("GOT ")] + local.reached()
        if got:
            return f"the sandbox self-test got through: {', '.join(got)}"
        if done.returncode != 0:
            return f"the sandbox self-test could not run (exit {done.returncode}): {done.stderr.strip()[-200:]}"
        return None
    except (OSError, subprocess.SubprocessError, SandboxUnavailable) as exc:
        return f"the sandbox self-test could not run: {exc}"
    finally:
        shutil.rmtree(scratch, True)
        try:
            os.unlink(canary)
        except OSError:
            pass


def probe() -> Optional[str]:
    """None if bwrap can build a sandbox here, else one line saying why not (blocking)."""
    program = shutil.which(PROGRAM)
    if program is None:
        return "bwrap is not installed (apt-get install bubblewrap, or scripts/setup)"
    try:
        done = subprocess.run([program, "--die-with-parent", "--unshare-pid", "--ro-bind", "/", "/",
                               "--proc", "/proc", "--dev", "/dev", "--", "true"],
                              capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bwrap could not run: {exc}"
    if done.returncode != 0:
        return f"bwrap cannot build a sandbox here: {(done.stderr.strip().splitlines() or ['exit ' + str(done.returncode)])[-1]}"
    return None


if __name__ == "__main__":  # `plugkit doctor` runs this (the client never imports the runner)
    import sys

    home_dir = sys.argv[1] if len(sys.argv) > 1 and os.path.isdir(sys.argv[1]) else tempfile.mkdtemp()
    found = self_test(home_dir)
    print(found or "bwrap; self-test passed: the home, the token, a credential, writes outside the worktree, "
                   "to .git and under HOME, agent sockets and signals out are all denied"
                   + ("" if landlock.scoped() else " (abstract sockets: not on this kernel, no Landlock scope)"))
    sys.exit(1 if found else 0)
