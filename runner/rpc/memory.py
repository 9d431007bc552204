"""memory.* — cross-session memories of a workspace (`.plugkit/memory/`) and of the user
(`$PLUGKIT_HOME/memory/`). The workspace is plugkit.workspace.find_root(cwd), the gates'
one; a cwd of /, $HOME or $PLUGKIT_HOME has none (user-wide memories only). Every recalled memory carries `stale`: what it names
(paths, backticked functions and flags) that the workspace no longer has. File work
and the staleness scan run in a worker thread, never on the event loop.

Errors: -32602 a rule refused the memory (message says which and why; data.rule names
it), cwd is not a directory, or a project memory was asked for where there is no workspace; -32005 the name is taken; -32001 no such memory;
-32002 the memory directory is not writable.
"""

import asyncio
import os
from typing import Callable, TypeVar

from plugkit import errors
from plugkit.memory import recall, rules
from plugkit.memory.store import Memory, MemoryStore, NotFound
from plugkit.protocol import SessionParams
from plugkit.workspace import NotAWorkspace
from plugkit.protocol.memory import (
    MemoryAddParams, MemoryIndex, MemoryIndexParams, MemoryInfo, MemoryList, MemoryNameParams,
    MemorySearchParams,
)
from runner.rpc.dispatch import Context, rpc

# The hook code's entry point, importable from here too.
index_for_context = recall.index_for_context

T = TypeVar("T")


def _info(m: Memory, stale: dict[str, list[str]], body: bool = False, score: float | None = None) -> MemoryInfo:
    return MemoryInfo(name=m.name, description=m.description, type=m.type, scope=m.scope, created=m.created,
                      updated=m.updated, file=m.path, stale=stale.get(m.key, []),
                      body=m.body if body else None, score=score)


async def _run(ctx: Context, p: SessionParams, work: Callable[[MemoryStore], T]) -> T:
    """work(store) in a thread, its domain errors turned into RPC errors without paths."""
    def job() -> T:
        if not os.path.isdir(p.cwd):
            raise errors.RpcError(errors.INVALID_PARAMS, "cwd is not an existing directory")
        return work(MemoryStore.for_cwd(p.cwd, ctx.runtime.home))

    try:
        return await asyncio.to_thread(job)
    except rules.Refused as exc:
        code = errors.CONFLICT if exc.rule == "unique" else errors.INVALID_PARAMS
        data = {"rule": exc.rule, **({"next": exc.hint} if exc.hint else {})}
        raise errors.RpcError(code, exc.reason, data) from None
    except NotAWorkspace as exc:
        raise errors.RpcError(errors.INVALID_PARAMS, str(exc)) from None
    except NotFound as exc:
        raise errors.RpcError(errors.NOT_FOUND, str(exc), {"next": "plugkit memory list"}) from None
    except PermissionError:
        raise errors.RpcError(errors.FORBIDDEN, "the memory directory is not writable by the runner") from None


@rpc(MemoryAddParams)
async def add(ctx: Context, p: MemoryAddParams) -> MemoryInfo:
    """memory.add {session_id, cwd, type, name, description?, text, scope?, replace?} -> MemoryInfo (with body)

    type: user | feedback | project | reference. scope: "project" (the workspace's
    .plugkit/memory/) or "user" ($PLUGKIT_HOME/memory/); default "user" for type user
    (always), else "project". feedback and project memories need a `Why:` line and a
    `How to apply:` line. A text that is only a file path or only a git hash is refused
    (the repository already has it). description (under 80 characters) defaults to the
    text's first line. Names are unique by slug across both scopes; replace overwrites,
    keeping `created`. MEMORY.md of the scope is rewritten atomically.
    Errors: -32602 (data.rule: name, type, scope, description, text, reasons, derived), -32005 (name taken).
    Example: {"method":"memory.add","params":{"session_id":"s","cwd":"/w","type":"feedback",
              "name":"no mocks","text":"Use fakes.\\nWhy: mocks hid a bug\\nHow to apply: in tests/"}}
    """
    draft = rules.Draft(type=p.type, name=p.name, body=p.text, description=p.description, scope=p.scope)

    def work(store: MemoryStore) -> MemoryInfo:
        memory = store.add(draft, replace=p.replace)
        return _info(memory, recall.stale_reasons([memory], store.workspace), body=True)

    return await _run(ctx, p, work)


@rpc(SessionParams)
async def list_(ctx: Context, p: SessionParams) -> MemoryList:
    """memory.list {session_id, cwd} -> {memories: [MemoryInfo], problems: [str]}

    Workspace and user-wide memories, newest first, each with its stale flags; a
    workspace memory hides a user-wide one of the same name. `problems` names memory
    files that could not be read.
    """
    def work(store: MemoryStore) -> MemoryList:
        memories, problems = store.all()
        stale = recall.stale_reasons(memories, store.workspace)
        return MemoryList(memories=[_info(m, stale) for m in memories], problems=problems)

    return await _run(ctx, p, work)


@rpc(MemoryNameParams)
async def show(ctx: Context, p: MemoryNameParams) -> MemoryInfo:
    """memory.show {session_id, cwd, name} -> MemoryInfo (with body and stale)

    name matches by slug ("Test Runner" finds test-runner.md). A non-empty `stale`
    means the memory names something the workspace no longer has: show it as history,
    not as fact. Errors: -32001 no such memory.
    """
    def work(store: MemoryStore) -> MemoryInfo:
        memory = store.get(p.name)
        return _info(memory, recall.stale_reasons([memory], store.workspace), body=True)

    return await _run(ctx, p, work)


@rpc(MemoryNameParams)
async def forget(ctx: Context, p: MemoryNameParams) -> MemoryInfo:
    """memory.forget {session_id, cwd, name} -> MemoryInfo (the memory removed)

    Deletes its file and rewrites that scope's MEMORY.md. Errors: -32001 no such memory.
    """
    return await _run(ctx, p, lambda store: _info(store.forget(p.name), {}))


@rpc(MemorySearchParams)
async def search(ctx: Context, p: MemorySearchParams) -> MemoryList:
    """memory.search {session_id, cwd, text, limit?=10} -> {memories: [MemoryInfo with score], problems}

    Plain ranked text match over name, description and body (best first; see
    plugkit/memory/recall.py for the score); no match is an empty list.
    Example: {"method":"memory.search","params":{"session_id":"s","cwd":"/w","text":"pytest flags"}}
    """
    def work(store: MemoryStore) -> MemoryList:
        memories, problems = store.all()
        ranked = recall.search(memories, p.text, p.limit)
        stale = recall.stale_reasons([m for _s, m in ranked], store.workspace)
        return MemoryList(memories=[_info(m, stale, score=s) for s, m in ranked], problems=problems)

    return await _run(ctx, p, work)


@rpc(MemoryIndexParams)
async def index(ctx: Context, p: MemoryIndexParams) -> MemoryIndex:
    """memory.index {session_id, cwd, max_lines?=40, max_bytes?=4096} -> {text, shown, total}

    The bounded index a SessionStart hook injects: a header, then one line per memory
    (newest first, each under 150 characters, stale ones flagged [STALE: ...]), and a
    "... N more" line when some did not fit. text is "" when there are no memories.
    """
    def work(store: MemoryStore) -> MemoryIndex:
        text, shown, total = recall.build_index(store, p.max_lines, p.max_bytes)
        return MemoryIndex(text=text, shown=shown, total=total)

    return await _run(ctx, p, work)


METHODS = {
    "memory.add": add, "memory.list": list_, "memory.show": show, "memory.forget": forget,
    "memory.search": search, "memory.index": index,
}
