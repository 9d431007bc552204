"""work_docker (issue 48 #3): a worker attempt's container engine, behind a labelling proxy.

Opt-in per workspace (`work_docker = true`, a person's setting: config_pin.py), local workers
only. Before the worker (and its work_setup) starts, the runner serves a proxy socket for its
session (runner/system/docker_proxy.py), shown in its sandbox and its exec: tasks' as DOCKER_HOST;
every container, volume, network and image it creates carries its attempt's labels, and what would
hand it the host is refused (runner/system/docker_policy.py). teardown.py removes what carries the labels at the
attempt's end; a runner that died mid-attempt leaves them to the next one's boot (sweep_dead,
called by runner/boot/lifespans.py before the dead runs are settled).
"""

import asyncio
import os
from typing import Optional

from plugkit.vocab import WORK_REJECTED as REJECTED
from runner.core.work.model import Failed, ItemRun, Run
from runner.system import docker_engine, docker_proxy, logs, tags
from runner.system.docker_request import Owner

log = logs.get("plugkit.work")
ENGINES = "engines"  # <home>/docker/engines: the engines proxied to, one socket path a line


def _refuse(line: str) -> Failed:
    return Failed(REJECTED, "not_ready", line)


def _remember(home: str, engine: str) -> None:
    """Blocking: the engine's path, kept for the boot sweep of a runner that died mid-attempt."""
    path = os.path.join(home, "docker", ENGINES)
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    try:
        with open(path, encoding="utf-8") as fh:
            known = fh.read().splitlines()
    except FileNotFoundError:
        known = []
    if engine not in known:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(engine + "\n")


async def open_for(p, run: Run, it: ItemRun, cfg, held: dict) -> dict[str, str]:
    """The worker's DOCKER_HOST ({} when the workspace has not opted in); the proxy goes into
    `held` under the item's id, for teardown.end at the attempt's end."""
    if not cfg.work_docker:
        return {}
    if run.runtime != "local":
        raise _refuse(f"work_docker applies to local workers only, not --runtime {run.runtime} yet; "
                      "run this item with --runtime local")
    if not run.sandbox:  # outside it the worker can write its worktree's parent: swap the worktree for a
        # link to / before the engine (root) mounts it, and a bind of the worktree is the host's root
        raise _refuse("work_docker needs the worker sandbox (a worker outside it could swap its worktree for a "
                      "link before the container engine mounts it); run without --no-sandbox")
    if p.home is None or it.worktree is None or it.session_id is None:
        raise _refuse("work_docker needs the runner's home; start the runner with `plugkit runner start`")
    try:
        engine = docker_proxy.engine_path({**os.environ, **p.env})
    except docker_proxy.NoEngine as exc:
        raise _refuse(str(exc)) from None
    owner = Owner(attempt=it.session_id, run=run.id, item=it.id, home=tags.home_id(p.home),
                  runner=docker_engine.runner_instance(), worktree=os.path.realpath(it.worktree),
                  offline=run.sandbox and run.network != "host")
    try:
        await asyncio.to_thread(_remember, p.home, engine)
        proxy = await docker_proxy.open_proxy(docker_proxy.socket_dir(p.home, it.session_id, it.worktree), engine, owner)
    except OSError as exc:
        raise Failed("failed", "spawn_failed", f"work_docker: the proxy's socket could not be made ({exc})") from None
    held[it.id] = proxy
    return {"DOCKER_HOST": f"unix://{proxy.path}"}


def socket_of(home: Optional[str], it: ItemRun) -> Optional[str]:
    """The attempt's proxy socket while it serves (its work_setup gets it as the worker does), or None."""
    if home is None or it.worktree is None:
        return None
    return docker_proxy.existing_socket(home, it.session_id, it.worktree)


async def sweep_dead(home: Optional[str]) -> list[str]:
    """At boot: every container, image, network and volume this home's workers made under a runner that
    is gone, removed from each engine proxied to. What was removed (logged too)."""
    if home is None:
        return []
    try:
        with open(os.path.join(home, "docker", ENGINES), encoding="utf-8") as fh:
            engines = [line for line in fh.read().splitlines() if line]
    except OSError:
        return []
    removed: list[str] = []
    for engine in engines:
        if not os.path.exists(engine):
            continue
        try:
            gone, notes = await docker_engine.sweep(engine, tags.home_id(home), docker_engine.runner_instance())
        except docker_engine.EngineError as exc:
            log.warning("work_docker_sweep_failed", engine=engine, error=str(exc))
            continue
        removed += gone
        if gone or notes:
            log.warning("work_docker_swept", engine=engine, removed=gone, notes=notes)
    return removed
