"""Whole-file evidence for a plain-words question: each file scored as Okapi BM25 scores a whole
file (issue 46: whole-file BM25 found the file holding the answer to plain-words questions more
often than chunk ranking did), from the words' postings (how many of a file's chunks say the word)
and the file's size, so a chunk is ranked by its own words and by the file around it."""

import math
import weakref

K1 = 1.2
B = 0.75

# store -> (its change stamp, path -> size in bytes, the mean size): read once per index change.
_sizes: "weakref.WeakKeyDictionary[object, tuple[tuple, dict[str, int], float]]" = weakref.WeakKeyDictionary()


def sizes(store) -> tuple[dict[str, int], float]:
    """path -> size and the mean size, kept until the index changes (guarded by the store's own
    lock, as postings.py's cache is: queries run on threads)."""
    stamp = (store.get_meta("built"), store.changes())
    with store.lock:
        held = _sizes.get(store)
    if held is None or held[0] != stamp:
        got = {p: max(1, s) for p, (_, s) in store.stamps().items()}
        held = (stamp, got, sum(got.values()) / max(1, len(got)))
        with store.lock:
            _sizes[store] = held
    return held[1], held[2]


def scores(store, distinct: list[str], posts: dict, n_files: int, paths=None) -> dict[str, float]:
    """path -> the file's BM25 over the question's words (a word's frequency in a file: how many
    of its chunks hold it), for every file holding any of them, or for these paths only (a common
    word is in thousands of files, and a question ranks the files of its candidates alone)."""
    size, mean = sizes(store)
    out: dict[str, float] = {}
    for w in distinct:
        files = posts[w].files
        idf = math.log(1 + (n_files - len(files) + 0.5) / (len(files) + 0.5))
        held = files.items() if paths is None else ((p, files[p]) for p in paths if p in files)
        for p, tf in held:
            norm = K1 * (1 - B + B * size.get(p, mean) / mean)
            out[p] = out.get(p, 0.0) + idf * tf * (K1 + 1) / (tf + norm)
    return out
