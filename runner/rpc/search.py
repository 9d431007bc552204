"""search.* — code search for agents over the caller's workspace (the repository's top level, else
the gates' workspace root). The index is built in the background on first use; until it is
complete an answer carries `indexing` {done, total} and its results are partial. Index work
runs in a worker thread, never on the event loop.

Errors: -32602 cwd is not a directory or has no workspace (/, $HOME, $PLUGKIT_HOME).
"""

import asyncio
import os

from plugkit import errors
from plugkit.protocol import SessionParams
from plugkit.protocol.search import (
    SearchAnswer, SearchCommit, SearchDigest, SearchDefinition, SearchHit, SearchIndexStatus, SearchLine, SearchProgress,
    SearchQueryParams, SearchStatus, SearchStatusParams,
)
from plugkit.workspace import NotAWorkspace
from runner.rpc.dispatch import Context, rpc


@rpc(SearchQueryParams)
async def query(ctx: Context, p: SearchQueryParams) -> SearchAnswer:
    """search.query {session_id, cwd, query, limit?, path?, lang?, history?} -> SearchAnswer

    definitions (name, path, line, kind): symbols named like the query, exact names first;
    hits (path, line, symbol, lines: up to 3 whole lines): chunks ranked by BM25 with code-aware
    weights (definitions over mentions, tests and vendored code below source); commits (hash,
    date, subject, paths): when the query is about history (why, when, changed, fix...) or, at
    most two, when a commit matches every word. path is a glob on the relative path ("src/*.py"),
    lang a language name ("python"). Paths are relative to `root`.
    Example: {"method":"search.query","params":{"session_id":"s","cwd":"/w","query":"parse_args"}}
    """
    manager = ctx.search_manager()  # built on the event loop (Lazy is not thread-safe)

    def work():
        if not os.path.isdir(p.cwd):
            raise errors.RpcError(errors.INVALID_PARAMS, "cwd is not an existing directory")
        return manager.query(p.cwd, p.query, limit=p.limit, glob=p.path, lang=p.lang,
                                          history=p.history)

    try:
        a = await asyncio.to_thread(work)
    except NotAWorkspace as exc:
        raise errors.RpcError(errors.INVALID_PARAMS, str(exc)) from None  # it names the next step
    return SearchAnswer(
        root=a.root,
        definitions=[SearchDefinition(name=d.name, path=d.path, line=d.line, kind=d.kind) for d in a.definitions],
        hits=[SearchHit(path=h.path, line=h.line, symbol=h.symbol,
                        lines=[SearchLine(line=n, text=t) for n, t in h.lines]) for h in a.hits],
        commits=[SearchCommit(hash=c.hash, date=c.date, subject=c.subject, paths=list(c.paths[:10]))
                 for c in a.commits],
        indexing=None if a.indexing is None else SearchProgress(done=a.indexing.done, total=a.indexing.total),
        semantic=a.semantic, kind=a.kind)


@rpc(SearchStatusParams)
async def status(ctx: Context, p: SearchStatusParams) -> SearchStatus:
    """search.status {} -> {workspaces: [{root, files, indexing?, built?, head?, vectors?}]}: the open
    indexes; vectors {done, total}: chunks embedded by the semantic layer, when it is on."""
    rows = await asyncio.to_thread(ctx.search_manager().status)  # built on the loop, read in a thread
    return SearchStatus(workspaces=[SearchIndexStatus(
        root=r["root"], files=r["files"], built=r["built"], head=r["head"],
        indexing=None if r["indexing"] is None else SearchProgress(**r["indexing"]),
        vectors=None if r.get("vectors") is None else SearchProgress(**r["vectors"])) for r in rows])


@rpc(SessionParams)
async def digest(ctx: Context, p: SessionParams) -> SearchDigest:
    """search.digest {session_id, cwd} -> {root, text, cached}

    The project digest (at most 3,600 characters, digest.MAX_CHARS): languages and sizes, entry points, how to
    build/test/run it from the manifests and CI files, the top-level layout, the hot files by
    git churn in the last 90 days. Cached until one of those inputs changes.
    """
    manager = ctx.search_manager()
    if not os.path.isdir(p.cwd):
        raise errors.RpcError(errors.INVALID_PARAMS, "cwd is not an existing directory")
    try:
        root, text, cached = await asyncio.to_thread(manager.digest, p.cwd)
    except NotAWorkspace as exc:
        raise errors.RpcError(errors.INVALID_PARAMS, str(exc)) from None  # it names the next step
    return SearchDigest(root=root, text=text, cached=cached)


METHODS = {"search.query": query, "search.status": status, "search.digest": digest}
