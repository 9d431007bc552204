"""`work_ci = true`: an item lands only once CI is green on its branch commit, asked by the runner.

After the runner's own check passed, the branch's commit is pushed to `origin` as
`plugkit/<item>` (the runner's name there) and the provider is asked about exactly that commit
the way `plugkit gate ci` asks about HEAD (runner/core/gates/ci.py, the runner's token). Red fails the attempt like a red check, its failing job and log tail handed to
the next attempt's prompt; pending past WAIT_S, or CI that cannot be asked, holds the item
with its branch kept.
"""

from typing import Any

from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.core.gates import ci
from runner.core.work import git
from runner.core.work.model import Failed, ItemRun

# A worker's commit is its code: `ci = "local"` would run the branch's CI script in a clone the
# runner made, outside the worker's sandbox and with the runner's environment. Refused at start
# (and here, whatever changed the setting since): the item's verify is that check, sandboxed.
LOCAL_REFUSED = ('work_ci with ci = "local" would run the branch\'s own CI script outside the worker sandbox: '
                 "put that check in the item's verify (the runner runs it sandboxed on a clean checkout), or "
                 'use ci = "github" | "gitlab"')
WAIT_S = 1800.0  # how long an item waits for CI on its commit before it is held
TAIL_LINES = 30


async def confirm(p: Any, it: ItemRun, cfg: Any, sha: str) -> None:
    """Returns when CI is green on `sha` (or work_ci is off); raises Failed otherwise."""
    if not (cfg.work_ci and cfg.ci):
        return
    if cfg.ci == "local":
        raise Failed("blocked", "ci_unconfirmed", LOCAL_REFUSED)
    try:
        await git.run(p.ws.root, "push", "--quiet", "--force", "origin", f"{sha}:refs/heads/{it.branch}")
    except git.GitError as exc:
        raise Failed("blocked", "ci_unconfirmed", f"work_ci: pushing {sha[:12]} to origin as {it.branch} "
                                                  f"failed ({exc}); branch {it.branch} is kept") from None
    state, note, log = await ci.ask_commit(p.gates, it.session_id or "plugkit-work", p.ws.root, cfg, sha, WAIT_S)
    if state == "green":
        return
    if state == "red":
        raise Failed(REJECTED, "ci_red", f"CI ({cfg.ci}) red on {sha[:12]}: {note}",
                     "\n".join(log.splitlines()[-TAIL_LINES:]))
    raise Failed("blocked", "ci_unconfirmed", f"CI ({cfg.ci}) {state} on {sha[:12]}: {note}; branch {it.branch} "
                                              "is kept")
