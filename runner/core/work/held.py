"""What a worker's branch may not do, checked once the worker ended and before its check runs:
move refs (runner/core/work/refs.py), change the plan or the checks' configuration, or change
the files of its own check (runner/core/work/check.py). Each raises Failed: the item is held
for a person, never retried, never landed."""

import asyncio
import os

from plugkit.lifecycle.workspace import PRD_FILE, STATE_DIR
from plugkit.vocab import WORK_REJECTED as REJECTED
from plugkit.work import scopes
from plugkit.work.policy.paths import HOOK_CONFIGS
from runner.core.gates import collect
from runner.core.work import check as check_files, git
from runner.core.work.model import Failed, ItemRun, Run
from runner.core.work.ready import INCLUDE_FILE
from runner.core.work.refs import RefGuard, owned_by_workers, planted
from runner.system import logs

log = logs.get("plugkit.work")


async def refs_moved(run: Run, it: ItemRun, refs: RefGuard, land_lock: asyncio.Lock) -> None:
    """Every ref but the live workers' own branches is the runner's: what this worker moved is
    put back, what it wrote kept as evidence, and the item never lands."""
    common = os.path.join(refs.root, await git.run(refs.root, "rev-parse", "--git-common-dir"))
    async with land_lock:  # the runner's own moves are all written into the snapshot by now
        links = await asyncio.to_thread(planted, common)  # first: nothing below may follow one
        live = [i.branch for i in run.items.values() if i.active or i is it]
        moves = await refs.moved(it.id, owned_by_workers(live))
        kept, failed = await refs.restore(it.id, moves) if moves else ([], [])
    if links:
        log.warning("work_symbolic_refs", run=run.id, item=it.id, refs=links[:10])
        raise Failed("blocked", "symbolic_ref", f"the worker planted symbolic refs or links where refs are written "
                                                f"({', '.join(links[:4])}): removed, never followed; a person "
                                                f"looks before `plugkit prd update {it.id} --status pending`")
    if not moves:
        return
    log.warning("work_refs_moved", run=run.id, item=it.id, refs=[m.text() for m in moves][:10], failed=failed)
    what = "; ".join(m.text() for m in moves[:4]) + (f" and {len(moves) - 4} more" if len(moves) > 4 else "")
    undo = f"restored, what it wrote kept as {', '.join(kept[:3])}" if kept else "restored"
    raise Failed(REJECTED, "refs_moved", f"the worker moved refs only the runner moves ({what}); {undo}"
                                         f"{'; ' + failed[0] if failed else ''}; a person looks before "
                                         f"`plugkit prd update {it.id} --status pending`")


async def control_files(root: str, it: ItemRun, base: str) -> None:
    """A branch that edits the plan or the checks (`.prd`, `.plugkit/config.toml`'s verify), what
    reaches every later worker (.worktreeinclude), or an agent host's project hook configuration
    (HOOK_CONFIGS: the person's own agent reads it when it starts in the checkout and runs its
    commands unsandboxed, or runs without plugkit's gates), or the git hooks the repository runs
    from its tree, would weaken what judges or confines every later item and the person: it
    never lands."""
    changed = (await git.run(root, "--literal-pathspecs", "diff", "--name-only", "--no-renames",
                             f"{base}..{it.branch}", "--", PRD_FILE, STATE_DIR, INCLUDE_FILE,
                             *HOOK_CONFIGS, *await _hooks_in_tree(root))).splitlines()
    if changed:
        raise Failed(REJECTED, "control_files", f"{it.branch} changes {', '.join(changed[:3])}: the plan, "
                                                "its checks and the agents' hooks are changed by a person, "
                                                "never by a worker")


async def _hooks_in_tree(root: str) -> list[str]:
    """The git hooks dir the repository's config names, when it lies in the tree (husky-style
    core.hooksPath): the runner's own git runs no hook, the person's next commit runs what is there."""
    # The runner's own `-c core.hooksPath=/dev/null` is the command scope: the files' last value counts.
    said = (await git.run(root, "config", "--get-all", "--show-scope", "core.hooksPath", check=False)).splitlines()
    named = next((v for scope, _, v in (ln.partition("\t") for ln in reversed(said)) if scope != "command"), "")
    if not named.strip():
        return []
    rel = os.path.relpath(os.path.normpath(os.path.join(root, os.path.expanduser(named))), root)
    return [] if rel == "." or rel.startswith("..") else [rel]


async def changes_its_check(root: str, run: Run, it: ItemRun, base: str, check: str, cfg) -> None:
    """The check's files are the person's: a branch changing them is held with its diff, unless
    a person allowed this item to change its check (`plugkit work allow-check`)."""
    assert it.branch is not None
    paths = await check_files.files(root, base, check, cfg.work_check_paths)
    changed, diff = await check_files.touched(root, base, it.branch, paths)
    if not changed:
        return
    allowed = run.check_allowed.get(it.id)
    if allowed is not None:
        log.warning("work_check_changed_allowed", item=it.id, files=changed[:10], by=allowed)
        return
    raise Failed("blocked", "touches_check", f"{it.branch} changes its own check ({', '.join(changed[:3])}); "
                                             f"a person reads the diff (`git diff {base[:12]} {it.branch}`) "
                                             f"and, if it is right, runs `plugkit work allow-check {it.id}`, "
                                             f"then `plugkit prd update {it.id} --status pending`\n{diff}")


async def weakens_its_check(p, run: Run, it: ItemRun, base: str, sha: str, check: str, cfg) -> None:
    """A branch may not weaken its check from outside the files the command names: change what
    configures its runner, or (pytest) stop running a test the base ran. Held with the evidence,
    unless a person allowed this item to change its check."""
    assert it.branch is not None and it.session_id is not None
    if run.check_allowed.get(it.id) is not None:
        return
    caller = p.env if "PATH" in p.env else {**os.environ, **p.env}  # as the check itself runs
    environ = scopes.check_env(caller, cfg.work_credentials)
    evidence, what = await collect.weakened(p.tasks, it.session_id, p.ws.root, base, sha, check, cfg, environ,
                                            run.sandbox)
    if not evidence:
        return
    log.warning("work_check_weakened", item=it.id, evidence=evidence[:10])
    more = f"\n... and {len(evidence) - 20} more" if len(evidence) > 20 else ""
    raise Failed("blocked", "touches_check", f"{it.branch} {what} ({', '.join(evidence[:3])}); a person reads "
                                             f"`git diff {base[:12]} {it.branch}` and, if it is right, runs "
                                             f"`plugkit work allow-check {it.id}`, then `plugkit prd update "
                                             f"{it.id} --status pending`\n" + "\n".join(evidence[:20]) + more)
