"""The optional semantic layer (`pip install 'plugkit[semantic]'`), its pure part: the chunk vectors of
a workspace (Vectors), how the filler turns chunks into vectors (fill), and when and how a query's
nearest chunks join BM25's ranking (fuse). The models and their threading live in
runner/system/embedder.py; numpy is imported here only inside the functions that need it.

Absent extra -> load() is None and search is BM25 alone."""

import re
import time
from typing import Hashable, Iterable, Sequence

from runner.core.search import files

RELOAD_S = 2.0
FILL_BATCH = 64  # chunks per transaction of the filling thread
RRF_K = 60  # the constant of Cormack et al.; ranks, not scores, are fused, so BM25's scale does not matter
# The nearest chunks' weight against BM25's in the fusion of a plain-words question (issue 46:
# equal weights let near neighbours push the chunk BM25 found by the question's own words down).
DENSE_WEIGHT = 0.5
PASTED = re.compile(r"\s*[A-Za-z_][\w.]*:\s")  # "Name: message", the head of a pasted error or log line
LITERAL = re.compile(r"""["'`]([^"'`]{3,})["'`]""")


def load():
    """The embedder when the extra is installed, else None (and search stays BM25 alone)."""
    from runner.system import embedder

    return embedder.load()


class Vectors:
    """One workspace's chunk vectors in memory (rowid -> row), reloaded from the store when a
    file changed since: a query is one matrix product."""

    def __init__(self) -> None:
        self._rowids = None
        self._matrix = None
        self._version = -1
        self._loaded_at = 0.0

    def nearest(self, store, query_vec, k: int) -> list[tuple[int, float]]:
        import numpy

        # A saved file's new vectors land one batch at a time: reload at most every RELOAD_S
        # (a reload reads every vector, ~35 MB for the standard library).
        stale = store.vectors_version != self._version
        if stale and (self._matrix is None or time.monotonic() - self._loaded_at > RELOAD_S):
            self._loaded_at = time.monotonic()
            self._version = store.vectors_version  # read first: a batch landing meanwhile reloads next time
            rows = [(r, v) for r, v in store.vectors() if len(v) == 4 * len(query_vec)]  # another model's: ignored
            self._rowids = numpy.array([r for r, _ in rows], dtype=numpy.int64)
            self._matrix = (numpy.frombuffer(b"".join(v for _, v in rows), dtype=numpy.float32).reshape(len(rows), -1)
                            if rows else numpy.zeros((0, len(query_vec)), dtype=numpy.float32))
        if not len(self._rowids):
            return []
        scores = self._matrix @ query_vec
        top = numpy.argsort(-scores)[:k]
        return [(int(self._rowids[i]), float(scores[i])) for i in top]


def fill(store, root: str, embedder, stop) -> None:
    """Embed every chunk that has no vector yet, a batch at a time, until none is left or `stop`
    (anything with is_set()) is set. The text is the chunk's symbol and its lines as they are on
    disk. Vectors another model made are dropped first: two models' vectors do not compare."""
    try:
        if store.get_meta("vectors_model") != embedder.name:
            store.clear_vectors()
            store.set_meta("vectors_model", embedder.name)
        while not stop.is_set():
            rows = store.unembedded(FILL_BATCH)
            if not rows:
                return
            lines: dict[str, list[str]] = {}
            for _rowid, path, *_ in rows:
                if path not in lines:  # confined to root like the index's own reads (files.py)
                    lines[path] = files.read_lines(root, path)
            texts = [f"{sym}\n" + "\n".join(lines[path][start - 1:end]) for _r, path, start, end, sym in rows]
            store.put_vectors([(r[0], v.tobytes()) for r, v in zip(rows, embedder.encode(texts))])
    except Exception:  # noqa: BLE001 - the layer is an extra: BM25 answers on; the next change retries
        return


def joins(kind: str, text: str) -> bool:
    """Whether a question is answered with the vectors at all: only one in plain words. An
    identifier, a qualified name, a pasted error or log line ("pkg.mod.Name: message", whatever
    kind.classify made of it), "who calls X" and "why" are answered by their exact words, which a
    nearest neighbour can only push down."""
    return kind == "concept" and not PASTED.match(text)


def exact(root: str, hit, text: str) -> bool:
    """The hit matches the question exactly: a code-shaped word of it (snake_case, CamelCase, a
    dotted name) is the hit's symbol, or a quoted literal of it is in the hit's lines."""
    symbol = hit.symbol.rsplit(".", 1)[-1].lower()
    for word in re.findall(r"[A-Za-z_][\w.]*", text):
        name = word.rsplit(".", 1)[-1]
        if ("_" in word or "." in word or any(c.isupper() for c in word[1:])) and name.lower() == symbol:
            return True
    literals = LITERAL.findall(text)
    if literals:
        body = "\n".join(files.read_lines(root, hit.path)[hit.start - 1:hit.end])
        return any(lit in body for lit in literals)
    return False


def fuse(root: str, text: str, ranked: list, dense: list) -> list:
    """BM25's hits and the nearest chunks of a plain-words question in one ranking: weighted
    reciprocal rank fusion, BM25's rank 1 kept at rank 1 when it is an exact match."""
    key = lambda h: (h.path, h.start)  # noqa: E731
    by_key = {key(h): h for h in dense + ranked}
    order = [by_key[k] for k in rrf([[key(h) for h in ranked], [key(h) for h in dense]], weights=(1.0, DENSE_WEIGHT))]
    if ranked and exact(root, ranked[0], text):
        order = [ranked[0]] + [h for h in order if key(h) != key(ranked[0])]
    return order


def rrf(rankings: Iterable[Sequence[Hashable]], k: int = RRF_K, weights: Sequence[float] | None = None) -> list[Hashable]:
    """Reciprocal rank fusion: each key scores the sum of weight / (k + rank) over the lists it is in."""
    score: dict[Hashable, float] = {}
    for n, ranking in enumerate(rankings):
        weight = 1.0 if weights is None else weights[n]
        for rank, key in enumerate(ranking):
            score[key] = score.get(key, 0.0) + weight / (k + rank + 1)
    return sorted(score, key=lambda key: -score[key])

