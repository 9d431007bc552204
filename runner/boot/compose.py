"""The composition root: the one place the runner's parts are built and wired together
(config -> ledger, executors, TaskManager, gates -> Context -> app). Nothing below boot
builds a part, looks one up by name, or imports the app back."""


from typing import Optional

from aiohttp import web

from plugkit import paths
from plugkit.config import RunnerConfig
from plugkit.lazy import Lazy
from runner.boot.lifespans import (gates_lifespan, hosted_lifespan, lazy_part_lifespan, tasks_lifespan,
                                   work_lifespan)
from runner.core.tasks.manager import TaskManager
from runner.core.work.hosted import HostedAttempts
from runner.executors import registry
from runner.http.app import make_app
from runner.rpc.context import Context, Runtime
from runner.system import peers
from plugkit.work.capabilities import Capabilities
from runner.system.handover import Handover
from runner.system.ledger import Ledger
from runner.system.ledger_worker import LedgerWorker


def compose(config: RunnerConfig, token: str, runner_id: str, namespaces: tuple = (),
            gates: bool = True, handover: Optional[Handover] = None) -> web.Application:
    """The runner's app, every part built but none started (its lifespans start them).
    `namespaces` adds RPC modules (tests); `gates=False` composes a runner without gates;
    `handover`: the tasks this runner's previous image handed over, adopted at startup."""
    limits = config.limits
    runtime = Runtime(home=config.home, port=config.port, token=token, runner_id=runner_id)
    ledger = LedgerWorker(lambda: Ledger(paths.ledger_file(config.home),
                                         retention_s=limits.ledger_retention_s, max_rows=limits.ledger_max_rows),
                          journal=paths.ledger_file(config.home))
    capabilities = Capabilities()  # minted by the worker executor, checked by the HTTP guard
    hosted = HostedAttempts()  # a node's runner: attempts a remote supervisor placed here
    executors = registry.build(registry.ExecutorContext(
        runner_id=runner_id, home=config.home, limits=limits,
        chromium=config.chromium, browser_idle_s=config.browser_idle_s, python=config.python,
        cgroups=config.cgroups, capabilities=capabilities))
    for executor in executors if handover is not None else ():
        if hasattr(executor, "inherit_dirs"):  # where the handed-over tasks' files are
            executor.inherit_dirs(handover.task_dirs)
    # A session is tied to the agent host its first exec came from, and ends when it exits.
    tasks = TaskManager(executors, limits, ledger=ledger, hosts=lambda peer, pid: peers.agent_host(peer, config.port, pid))
    ctx = Context(runtime=runtime, config=config, tasks=tasks, capabilities=capabilities,
                  hosted=hosted,
                  gates=Lazy(lambda: _gate_manager(tasks, config.home)) if gates else None,
                  work=Lazy(lambda: _work_manager(ctx)) if gates else None,  # (ctx: bound by the time it is built)
                  search=Lazy(lambda: _search_manager(config.home, config.semantic)))
    ctx.snapshots["hooks"] = ctx.hooks.snapshot
    ctx.snapshots["hosted"] = hosted.snapshot
    ctx.freeze()
    app = make_app(ctx, namespaces)
    # Started in this order, stopped in reverse: work runs stop before the gates, the gates
    # before the tasks they read.
    app.cleanup_ctx.extend((tasks_lifespan(ctx, ledger, handover), hosted_lifespan(ctx), gates_lifespan(ctx), work_lifespan(ctx),
                            lazy_part_lifespan(ctx, "search", ctx.search, _close_search)))
    return app


def _gate_manager(tasks: TaskManager, home: str):  # -> GateManager, imported on the first gate call
    from runner.core.gates.manager import GateManager

    return GateManager(tasks, home=home)  # its ledger and sealing key live in the home


def _work_manager(ctx: Context):  # -> WorkManager, imported on the first work.* call
    from runner.core.work.manager import WorkManager

    return WorkManager(ctx.tasks, ctx.gate_manager(), home=ctx.runtime.home, port=ctx.runtime.port)


def _search_manager(home: str, semantic: bool):  # -> SearchManager, imported on the first search.* call
    from runner.core.search import tokens
    from runner.core.search.manager import SearchManager
    from runner.system import dirwatch
    from runner.system.search.engine import ThreadEngine

    # Its indexes live under the home, one SQLite file per workspace; the semantic layer where
    # installed and the operator turned it on. The core ranks; the engine is its OS side
    # (SQLite, threads), built here so runner.core does no OS work of its own.
    return SearchManager(home, semantic_layer=semantic, engine=ThreadEngine(tokens.expand, dirwatch.watch))


async def _close_search(manager) -> None:
    import asyncio

    await asyncio.to_thread(manager.close)  # waits for a background build to stop
