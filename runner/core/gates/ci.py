"""CI confirmed by the runner before COMPLETE (`ci` in .plugkit/config.toml, a held setting).

`plugkit gate ci` asks, for the commit HEAD is at: `local` runs the project's CI command
(`ci_command`, default `.ci/run`) as a witnessed task in a clean clone of that commit the
runner makes under its home, so what exists only in the working tree is not there; `github`
and `gitlab` ask the provider's API (runner/core/gates/ci_providers.py) with a token from the
runner's environment or a 0600 file in $PLUGKIT_HOME/ci/, never from the caller. The answer is
recorded in the state (`State.ci`), which COMPLETE's `ci_green` condition reads: nothing the
agent writes can stand in for it.
"""

import asyncio
import os
import shutil
import stat
import tempfile
import time
from typing import TYPE_CHECKING, Optional

from plugkit.lifecycle import gating
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.state import CiRun
from plugkit.lifecycle.workspace import Workspace
from plugkit.refusals import Conflict, Invalid
from runner.core.gates.witness import git_facts
from runner.executors.base import ExecSpec
from runner.system import git as system_git

if TYPE_CHECKING:
    from runner.core.gates.manager import GateManager

FIRST_POLL_S, MAX_POLL_S = 1.0, 15.0  # between two asks while CI is pending: doubling, up to the cap
LOG_TAIL = 2048
DEFAULT_COMMAND = ".ci/run"


def token(provider: str, var: str, home: Optional[str]) -> Optional[str]:
    """The runner's token for the provider: its environment, else $PLUGKIT_HOME/ci/<provider>-token
    (a regular file, the runner's own, readable by nobody else)."""
    if os.environ.get(var):
        return os.environ[var].strip()
    if not home:
        return None
    path = os.path.join(home, "ci", f"{provider}-token")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    with os.fdopen(fd) as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise Invalid(f"{path} must be a regular file of yours, mode 0600 (chmod 600 {path})")
        return fh.read().strip() or None


async def _git(root: str, *args: str) -> str:
    try:  # through the runner's one git (its environment rule; no hooks, no fsmonitor)
        done = await system_git.run(root, *args)
    except (OSError, system_git.GitTimeout) as exc:
        raise Invalid(f"git {args[0]} could not run in {root}: {exc}") from None
    if done.rc != 0:
        raise Invalid(f"git {args[0]} failed: {system_git.why(done.err.decode(errors='replace'))}")
    return done.out.decode().strip()


async def _local(gates: "GateManager", session_id: str, root: str, cfg: GateConfig, sha: str,
                 timeout_s: float) -> tuple[str, str, str]:
    home = gates.home or tempfile.gettempdir()
    os.makedirs(os.path.join(home, "ci"), mode=0o700, exist_ok=True)
    clone = tempfile.mkdtemp(prefix="clone-", dir=os.path.join(home, "ci"))
    try:
        await _git(root, "clone", "--quiet", "--no-local", "--no-checkout", root, clone)
        await _git(clone, "checkout", "--quiet", "--detach", sha)
        command = cfg.ci_command or DEFAULT_COMMAND
        task = await gates.tasks.exec(ExecSpec(session_id=session_id, cwd=clone, lang="bash", code=command,
                                               timeout_s=timeout_s))
        await gates.tasks.wait_done(task, timeout_s + 5)
        got = gates.tasks.read(task, None, 1 << 20)
        log = "".join(text for _stream, text in got.chunks)[-LOG_TAIL:]
        if task.finished and task.exit_code == 0:
            return "green", f"{command!r} passed in a clean clone (task_{task.id})", ""
        how = f"exit {task.exit_code}" if task.finished else "still running at the timeout"
        return "red", f"{command!r} {how} in a clean clone of {sha[:12]} (task_{task.id})", log
    finally:
        await asyncio.to_thread(shutil.rmtree, clone, True)


async def ask_commit(gates: "GateManager", session_id: str, root: str, cfg: GateConfig, sha: str,
                     wait_s: float) -> tuple[str, str, str]:
    """(state, note, log tail) of CI on commit `sha` of the repository at `root`, asked by the runner."""
    deadline = time.monotonic() + max(0.0, wait_s)
    poll_s = FIRST_POLL_S
    if cfg.ci == "local":
        return await _local(gates, session_id, root, cfg, sha, max(60.0, cfg.verify_timeout_s))
    from runner.core.gates import ci_providers  # aiohttp's client: only when a provider is asked

    provider = ci_providers.PROVIDERS[str(cfg.ci)]
    secret = token(str(cfg.ci), provider.token_var, gates.home)
    repo = cfg.ci_repo or ci_providers.repo_of(await _git(root, "remote", "get-url", "origin"))
    if secret is None:
        return "error", (f"the runner holds no {cfg.ci} token: start it with {provider.token_var} set, or write "
                         f"the token to $PLUGKIT_HOME/ci/{cfg.ci}-token (mode 0600)"), ""
    if not repo:
        return "error", "the repository is unknown: set ci_repo in .plugkit/config.toml", ""
    while True:
        v = await ci_providers.ask(str(cfg.ci), cfg.ci_api_url, repo, sha, secret)
        if v.state != "pending" or time.monotonic() + poll_s > deadline:
            return v.state, v.note, v.log
        await asyncio.sleep(poll_s)
        poll_s = min(MAX_POLL_S, poll_s * 2)


async def confirm(gates: "GateManager", session_id: str, ws: Workspace, wait_s: float) -> tuple[CiRun, str]:
    """Ask CI about HEAD (waiting up to wait_s while it is pending), record the answer; (it, log tail)."""
    cfg = gates.config(ws)
    if not cfg.ci:
        raise Conflict('no ci in .plugkit/config.toml: ci = "local" | "github" | "gitlab" makes COMPLETE '
                       "wait for CI green on the pushed HEAD")
    git = await git_facts(ws.root)
    if not git.repo or not git.head:
        raise Conflict("CI is confirmed for a commit: this workspace is not a git repository with a commit")
    state, note, log = await ask_commit(gates, session_id, ws.root, cfg, git.head, wait_s)
    run = CiRun(sha=git.head, provider=cfg.ci, state=state, note=note[:300], at=time.time())
    await gates.call(ws, gating.record_ci, run)
    return run, log
