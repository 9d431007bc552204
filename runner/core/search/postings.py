"""Which chunks and files hold a word, per workspace index, kept between queries until the index
changes: a plain-words question's coverage needs every word's chunks, and a common word's
thousands of rows cost most of the query (issue 46: 66-132 ms for plain-words questions)."""

import weakref
from collections import OrderedDict
from dataclasses import dataclass

MAX_WORDS = 512  # words kept per index: a few MiB at most on a 2,000-file repository


@dataclass(frozen=True)
class Postings:
    chunks: frozenset[int]  # the rowid (Hit.rowid) of each chunk holding the word
    files: dict[str, int]  # path -> how many of its chunks hold it


# One cache per store, guarded by that store's own lock (queries run on threads; the lock is the
# store's so runner.core takes no threading of its own, and one index's queries never wait on another's).
_caches: "weakref.WeakKeyDictionary[object, tuple[tuple, OrderedDict]]" = weakref.WeakKeyDictionary()


def of(store, expression: str, glob: str | None, lang: str | None) -> Postings:
    """The chunks and files matching an FTS5 expression, from the cache while the index is unchanged
    (its build stamp and its writes: a file saved in place changes no file count, yet its words)."""
    stamp = (store.get_meta("built"), store.changes())
    key = (expression, glob, lang)
    with store.lock:
        held = _caches.get(store)
        if held is None or held[0] != stamp:
            held = (stamp, OrderedDict())
            _caches[store] = held
        cache = held[1]
        if key in cache:
            cache.move_to_end(key)
            return cache[key]
    found = store.matching(expression, glob, lang)  # outside the lock: the build's batches go on
    files: dict[str, int] = {}
    for path, _ in found:
        files[path] = files.get(path, 0) + 1
    got = Postings(frozenset(r for _, r in found), files)
    with store.lock:
        cache[key] = got
        while len(cache) > MAX_WORDS:
            cache.popitem(last=False)
    return got
