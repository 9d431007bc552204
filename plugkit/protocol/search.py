"""search.* — code search over a workspace (runner/core/search/). Params and results as pydantic
models (the wire contract); bounds keep an answer small enough for an agent's context."""

from typing import Optional

from pydantic import Field

from plugkit.protocol import OsPath, Params, Result, SessionParams


class SearchQueryParams(SessionParams):
    query: str = Field(min_length=1, max_length=500)
    limit: int = Field(default=10, ge=1, le=100)
    path: Optional[OsPath] = None  # a glob on the relative path ("src/*.py")
    lang: Optional[str] = Field(default=None, min_length=1, max_length=32)
    history: Optional[bool] = None  # None: commits shown when the query is about history or matches one


class SearchStatusParams(Params):
    pass


class SearchDefinition(Result):
    name: str
    path: str
    line: int
    kind: str


class SearchLine(Result):
    line: int
    text: str


class SearchHit(Result):
    path: str
    line: int
    symbol: str
    lines: list[SearchLine]


class SearchCommit(Result):
    hash: str
    date: str
    subject: str
    paths: list[str]


class SearchProgress(Result):
    done: int
    total: int


class SearchAnswer(Result):
    root: str
    definitions: list[SearchDefinition]
    hits: list[SearchHit]
    commits: list[SearchCommit]
    indexing: Optional[SearchProgress] = None  # set while the first build runs: the results are partial
    semantic: Optional[str] = None  # why this answer is BM25 alone though the semantic layer is on
    kind: str = ""  # the question's kind (runner.core.search.kind): "why" answers show commits first


class SearchIndexStatus(Result):
    root: str
    files: int
    indexing: Optional[SearchProgress] = None
    built: Optional[str] = None
    head: Optional[str] = None
    vectors: Optional[SearchProgress] = None  # chunks the semantic layer has embedded (None: layer off)


class SearchStatus(Result):
    workspaces: list[SearchIndexStatus]


class SearchDigest(Result):
    root: str
    text: str  # at most ~900 tokens
    cached: bool  # false: rebuilt now, because an input (a manifest, CI file, git HEAD) changed
