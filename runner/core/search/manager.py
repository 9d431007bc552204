"""SearchManager: the runner's per-workspace indexes (one SQLite file each under
$PLUGKIT_HOME/search/; a linked worktree's is its main checkout's plus an overlay of what differs,
runner/system/search/overlay.py), and a query shaped into the sections an agent reads: definitions,
content hits with whole lines, and commits when the query is about history or matches one."""

import hashlib
import os
import re
from dataclasses import dataclass

from plugkit.workspace import find_root
from runner.core.search import (concept, digest, exact, files, frames, history as git_history, kind as query_kind, plan, semantic,
                                tokens)
from runner.core.search.index import Progress, WorkspaceIndex
from runner.core.search.store import Commit, DefHit, Job, SearchEngine
from runner.system import git as system_git

HISTORY = re.compile(r"\b(why|when|who|changed?|commits?|history|introduced|removed|added|regress\w*|"
                     r"revert\w*|fix(ed|es)?|broke)\b", re.I)
PROSE_KINDS = ("concept", "why")  # the kinds whose code is ranked as plain words when they are written so
PER_FILE = 2  # content hits per file at most: more files, not one file's every window
SNIPPET_LINES = 3
AGREE = 2  # a plain-words question's definitions come from its best chunks' first files
# The best hits are shown whole where the reading budget allows (issue 46: an agent reading three
# lines a hit missed most of the answer): the first hit's definition up to SHOWN_CHARS[0]
# characters, the second's up to SHOWN_CHARS[1], the rest SNIPPET_LINES lines. Both stay well
# inside the text answer's 4 KiB, so it shows them and the other sections' best items too.
SHOWN_CHARS = (1600, 900, 500, 300)
LINE_CHARS = 200
FIRST_WAIT_S = 1.0  # how long a query waits for a build under way before answering partially
MAX_WORKSPACES = 16  # open indexes at most; the least recently used is closed
# The semantic layer, off unless asked for (PLUGKIT_SEARCH_SEMANTIC=1): on the untuned sets no model
# that fits its budget (scripts/bench_search_semantic.py) raised plain-words questions' NDCG@10.
SEMANTIC = False


@dataclass(frozen=True)
class ContentHit:
    path: str
    line: int
    symbol: str
    lines: tuple[tuple[int, str], ...]  # (line number, whole line), at most SNIPPET_LINES
    score: float


@dataclass(frozen=True)
class Answer:
    root: str
    definitions: list[DefHit]
    hits: list[ContentHit]
    commits: list[Commit]
    indexing: Progress | None
    kind: str = "concept"  # the question's kind (query_kind.classify)
    semantic: str | None = None  # why this answer is BM25 alone though the semantic layer is on


class SearchManager:
    def __init__(self, home: str, semantic_layer: bool | None = None, engine: SearchEngine | None = None) -> None:
        """semantic_layer: None follows SEMANTIC; on, it is used where its extra is installed.
        engine: the stores and threads (the composition root's; None: the system's own, for tools)."""
        self._dir = os.path.join(home, "search")
        self._semantic = SEMANTIC if semantic_layer is None else semantic_layer
        self._engine = engine if engine is not None else default_engine()
        self._embedder = None
        self._loading: Job | None = None  # the model loading in the background
        self._indexes: dict[str, WorkspaceIndex] = {}
        self._roots: dict[str, str] = {}  # cwd -> its workspace root
        self._lock = self._engine.lock()

    def workspace(self, cwd: str) -> WorkspaceIndex:
        root = self._roots.get(cwd)
        if root is None:  # a git call per new directory only, not per query
            root = _root(cwd)
            if len(self._roots) >= 1024:
                self._roots.clear()
            self._roots[cwd] = root
        with self._lock:
            return self._open(root)

    def _open(self, root: str) -> WorkspaceIndex:
        """root's index (the lock held), opened on first use; the least recently used one closed."""
        index = self._indexes.pop(root, None)
        if index is None:
            os.makedirs(self._dir, mode=0o700, exist_ok=True)
            main = self._engine.main_root(root)
            # A linked worktree (plugkit work's, a person's `git worktree add`): its repository's
            # index plus an overlay of its own files that differ; that index is built first where
            # none is yet, so no worktree indexes the repository from scratch.
            base_db = self._db(main) if main is not None else None
            base = self._open(main) if base_db is not None and not self._engine.built(base_db) else None
            index = WorkspaceIndex(root, self._db(root), self._engine, base_db, base)
            if len(self._indexes) >= MAX_WORKSPACES:
                self._indexes.pop(next(iter(self._indexes))).close()
        self._indexes[root] = index  # re-inserted: the dict's order is the use order
        return index

    def _db(self, root: str) -> str:
        return os.path.join(self._dir, hashlib.sha256(root.encode()).hexdigest()[:16] + ".sqlite")

    def _load_embedder(self):
        """The model once per manager (~90 MB, seconds to load), and only when the layer is on."""
        if not self._semantic or self._embedder is not None:
            return self._embedder
        loaded = semantic.load()  # seconds: outside the lock, so a close or a query never waits on it
        with self._lock:
            if self._embedder is None:
                self._embedder = loaded
                self._semantic = loaded is not None
                for index in self._indexes.values() if self._embedder is not None else ():
                    if index.embedder is None:  # the workspaces queried while it loaded start filling now
                        index.use(self._embedder)
            return self._embedder

    def ready(self, cwd: str, seconds: float) -> None:
        """Until the model is loaded and every chunk of cwd's workspace embedded (the eval and the
        tests wait here; a query never does)."""
        loading = self._loading
        if loading is not None:
            loading.join(seconds)
        index = self.workspace(cwd)
        if self._embedder is not None and index.embedder is None:
            index.use(self._embedder)
        index.wait_vectors(seconds)

    def _embedder_ready(self):
        """The model if loaded; else its load starts in the background and None comes back at
        once: a query never waits for it (it answers from BM25 and says so)."""
        if self._embedder is not None:
            return self._embedder
        with self._lock:
            if self._semantic and (self._loading is None or not self._loading.alive()) and self._embedder is None:
                self._loading = self._engine.start("search-model-load", self._load_embedder)
        return None

    def query(self, cwd: str, text: str, limit: int = 10, glob: str | None = None,
              lang: str | None = None, history: bool | None = None) -> Answer:
        index = self.workspace(cwd)
        note = None
        if self._semantic and index.embedder is None:  # loaded by a query, never by a digest or a status
            embedder = self._embedder_ready()
            if embedder is not None:
                index.use(embedder)
            elif self._semantic:
                note = "the semantic model is loading: BM25 alone this time"
        index.prepare()
        index.wait(FIRST_WAIT_S)  # a small project answers complete on its first query
        kind = query_kind.classify(text)
        words = query_kind.usage_target(text) if kind == "usage" else tokens.query_words(text)
        if not words:
            return Answer(index.root, [], [], [], index.progress(), kind, note)
        match = tokens.fts_query(words)
        store = index.store
        defs = _rank_defs(store.defs(match, limit * 5, glob, lang), words, tokens.looks_like_identifier(text))
        # By its words in context, not one word's symbol; a "why" question's code too ("why does a body
        # line starting with From get a '>'" asks what code does, in plain words): its commits lead anyway.
        prose = kind in PROSE_KINDS and concept.is_prose(text)
        if prose:
            ranked = concept.search(store, words, limit, glob, lang)
        else:
            cap = plan.ERROR_ROWS if kind == "error" else plan.RETRIEVE_ROWS  # common words rescore (plan.py)
            ranked = _rank_hits(plan.chunks(store, words, limit * 8, glob, lang, cap), words)
        phrased = []
        if kind == "error" and (phrases := exact.error_phrases(text)):  # the raise site spells the message
            phrased = exact.by_message(index.root, text, store.chunks(phrases, limit, glob, lang), store)
            ranked = exact.phrase_first(phrased, ranked)
        if kind == "error" and (at := frames.located(store, index.root, text, glob, lang)):  # where it says it failed
            ranked, phrased = frames.located_first(at, ranked), frames.located_first(at, phrased)
        defs, ranked = _by_kind("concept" if prose else kind, text, words, exact.source_first(defs), ranked, index.root)
        if phrased:  # the definition that raises it first: the message's named classes are what it is about
            defs = exact.raiser_first(store, phrased, defs, glob, lang)
        if index.vectors is not None and semantic.joins(kind, text):  # plain-words questions only (semantic.py)
            if index.embedding:  # never wait for the filler: BM25 alone until every chunk has its vector
                note = "vectors still filling ({}/{} chunks): BM25 alone this time".format(*store.embedded())
            else:
                near = index.vectors.nearest(store, index.embedder.encode_query(text), limit * 8)
                ranked = semantic.fuse(index.root, text, ranked, store.chunks_at([r for r, _ in near], glob, lang))
        hits = (_spread(ranked) if kind == "usage" else _per_file(ranked))[:limit]
        about_history = bool(HISTORY.search(text)) if history is None else history
        if about_history:
            commits = [c for c, _ in store.commits(match, 5)]
        else:  # otherwise only commits that match every word
            commits = [c for c, _ in store.commits(_all(words), 2)]
        whole = () if kind == "usage" else SHOWN_CHARS  # a caller is its call line: more files, not more lines
        needles = {w.lower() for w in words} | {p for w in words for p in tokens.parts(w)}
        read: dict[str, list[str]] = {}  # a file two hits are in is read once
        return Answer(index.root, defs[:limit],
                      [_snippet(index.root, h, needles, whole[i] if i < len(whole) else 0, read, store)
                       for i, h in enumerate(hits)], commits, index.progress(), kind, note)

    def digest(self, cwd: str) -> tuple[str, str, bool]:
        """(root, the digest text, whether it came from the cache): rebuilt only when a manifest,
        a CI file or git's HEAD changed since it was last made."""
        index = self.workspace(cwd)
        stamp = digest.stamp(index.root, git_history.head(index.root))
        store = index.store
        if store.get_meta("digest_stamp") == stamp and (text := store.get_meta("digest")) is not None:
            return index.root, text, True
        text = digest.build(index.root, files.list_files(index.root))
        store.set_meta("digest", text)
        store.set_meta("digest_stamp", stamp)
        return index.root, text, False

    def status(self) -> list[dict]:
        with self._lock:
            indexes = list(self._indexes.values())
        return [i.status() for i in indexes]

    def snapshot(self) -> dict:
        return {"workspaces": self.status()}

    def close(self) -> None:
        with self._lock:
            indexes, self._indexes = list(self._indexes.values()), {}
        for index in indexes:
            index.close()


def default_engine() -> SearchEngine:
    """The system's engine (runner/system/search/), wired as the composition root wires it."""
    from runner.system import dirwatch
    from runner.system.search.engine import ThreadEngine

    return ThreadEngine(tokens.expand, dirwatch.watch)


def _root(cwd: str) -> str:
    """The repository's top level where cwd is in one, else the workspace root."""
    try:
        out = system_git.run_sync(cwd, "rev-parse", "--show-toplevel", timeout=10)
        top = out.out.decode(errors="replace").strip()
        if out.rc == 0 and top:
            return os.path.realpath(top)
    except (OSError, system_git.GitTimeout):
        pass
    return find_root(cwd)


def _all(words: list[str]) -> str:
    return " AND ".join(f"({tokens.fts_query([w])})" for w in words)


def _rank_defs(found: list[DefHit], words: list[str], identifier: bool) -> list[DefHit]:
    exact = {w.lower() for w in words}
    boost = 10.0 if identifier else 3.0

    def score(d: DefHit) -> float:
        return d.score * (boost if d.name.lower() in exact else 1.0)

    return sorted(found, key=score, reverse=True)


def _rank_hits(found, words: list[str]):
    exact = {w.lower() for w in words}
    return sorted(found, key=lambda h: h.score * (2.0 if h.symbol.lower() in exact else 1.0), reverse=True)


def _by_kind(kind: str, text: str, words: list[str], defs: list[DefHit], ranked: list,
             root: str) -> tuple[list, list]:
    """The rules of query_kind applied: exact-match kinds ("identifier", "error", "why") keep the
    ranking as it is; the others reorder or filter it."""
    if kind == "concept":  # one common word's short definition is not the answer to a question
        # A compound one definition spells in parts (NamedTuple) is the same compound where another
        # writes it as one word (namedtuple): the question that names it names both.
        compounds = frozenset(d.name.lower() for d in defs if tokens.parts(d.name) or "_" in d.name.strip("_"))
        defs = [d for d in defs if query_kind.concept_def_ok(d.name, words, compounds)]
        # A name sharing two of the question's words is evidence only where the question's words in
        # context agree: its file among the best chunks' files, in their order.
        first = list(dict.fromkeys(h.path for h in ranked))[:AGREE]
        order = {p: i for i, p in enumerate(first)}
        # A module the question names (argparse.py, markers.py) leading the chunks is not passed over
        # for a namesake elsewhere that shares two common words (http.client's LineTooLong for "the
        # usage line when it is too long"), unless that one's module or package is named by it too.
        lead = bool(first) and concept.named_by(first[0], words)
        defs = sorted((d for d in defs if d.path in order and (
            d.path == first[0] or not lead or concept.named_by(d.path, words, package=True))),
                      key=lambda d: order[d.path])
    elif kind == "error":  # the message's words are prose: only what it names as written is a definition
        defs = exact.named_in(text, defs, root)
    elif kind == "qualified":
        quals, name = query_kind.qualifier(text)
        n = name.lower()
        # A method's class is its qualifier too (Attribute.evolve): read for the few same-named ones.
        read: dict = {}
        defs = sorted(defs, key=lambda d: (d.name.lower() != n, -query_kind.qualified_score(
            d.path, exact.enclosing_class(root, d.path, d.line, read) if d.name.lower() == n else "", quals)))
        ranked = sorted(ranked, key=lambda h: (-query_kind.qualified_score(
            h.path, h.symbol + " " + (exact.enclosing_class(root, h.path, h.start, read)
                                      if h.symbol.lower() == n else ""), quals), n not in h.symbol.lower().split()))
    elif kind == "usage":  # the callers first; the definition once, only where no caller is found
        target = words[-1].lower()
        sites, rest = exact.usage_sites(root, text, words[-1], ranked)
        # "who calls X" is answered by its callers: the definition's file leading the answer (the
        # definitions section is read first) pushed a calling file down (issue 46, 3 of 4 sets).
        defs = [] if sites else [d for d in defs if d.name.lower() == target][:1]
        ranked = sites + rest
    return defs, ranked


def _spread(ranked):
    """One hit per file first, then the rest in rank order: who calls X is answered by many files."""
    firsts, rest, seen = [], [], set()
    for h in ranked:
        (rest if h.path in seen else firsts).append(h)
        seen.add(h.path)
    return firsts + rest


def _per_file(ranked):
    per_file: dict[str, int] = {}
    out = []
    for h in ranked:
        per_file[h.path] = per_file.get(h.path, 0) + 1
        if per_file[h.path] <= PER_FILE:
            out.append(h)
    return out


def _snippet(root: str, hit, needles: set[str], chars: int, read: dict[str, list[str]], keep=None) -> ContentHit:
    """The chunk from its first line on, up to `chars` characters of whole lines, when that is
    more than the best three; else up to three whole lines, those naming the most query words
    (needles: the words and their parts, lowercased). read: the lines of files read so far; keep:
    the index's store, which keeps them between queries (files.read_lines)."""
    if hit.path not in read:
        read[hit.path] = files.read_lines(root, hit.path, keep)  # never through a link (files.py)
    lines = read[hit.path][hit.start - 1:hit.end]
    scored = sorted(((sum(n in low for n in needles), i) for i, line in enumerate(lines) for low in [line.lower()]),
                    key=lambda t: (-t[0], t[1]))
    picked = sorted(i for s, i in scored[:SNIPPET_LINES] if s > 0) or list(range(min(1, len(lines))))
    whole, used = [], 0
    for i, line in enumerate(lines):
        used += min(len(line.rstrip()), LINE_CHARS) + 1
        if used > chars:
            break
        whole.append(i)
    if len(whole) > len(picked):
        picked = whole
    shown = tuple((hit.start + i, lines[i].rstrip()[:LINE_CHARS]) for i in picked)
    return ContentHit(hit.path, shown[0][0] if shown else hit.start, hit.symbol, shown, hit.score)
