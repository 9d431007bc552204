"""How a plain-words question ranks chunks: by how much of the question a chunk says in its
context (its own words and the file around it), weighed by how rare each word is across files,
not by one rare word's BM25 alone (issue 46: a short definition named by one common word of the
question used to outrank the chunk holding the answer)."""

import math
import re

from runner.core.search import tokens
from runner.core.search.store import Hit, IndexStore

POOL = 25  # candidates per result asked of BM25: the answer's chunk may rank past the first 80 on one word


def is_prose(query: str) -> bool:
    """A question in plain words ("how is a file read in chunks"), not a few keywords ("latency
    histogram"), whose words BM25 and the definitions' names already rank well."""
    words = [m.group(0).lower() for m in tokens.IDENT.finditer(query)]
    return len(words) >= 4 or any(w in tokens.STOP for w in words)


# Endings stripped so a question's word meets its kin in code ("recursively" finds recurse, "validators"
# validator): longest first, a stem of at least STEM_MIN letters kept, matched as an FTS5 prefix.
ENDINGS = ("ively", "ations", "ation", "ingly", "ness", "ment", "ings", "ing", "ive", "ies", "ers", "ed", "es",
           "ly", "er", "s")
STEM_MIN = 4


def stem(word: str) -> str:
    w = word.lower()
    for end in ENDINGS:
        if w.endswith(end) and len(w) - len(end) >= STEM_MIN:
            return w[:-len(end)]
    return w


def match(words: list[str]) -> str:
    """The FTS5 expression of a plain-words question: each word as tokens.fts_query has it, or any
    word its stem begins."""
    out = []
    for w in words:
        s = stem(w)
        exact = tokens.fts_query([w])
        out.append(f"({exact} OR {chr(34)}{s}{chr(34)}*)" if s != w.lower() and s.isalnum() else exact)
    return " OR ".join(out)


def rerank(store: IndexStore, words: list[str], ranked: list[Hit], glob: str | None, lang: str | None) -> list[Hit]:
    distinct = list(dict.fromkeys(w.lower() for w in words))
    if len(distinct) < 2 or not ranked:
        return ranked
    n_files = max(1, store.file_count())
    in_chunk: dict[tuple[str, int], set[str]] = {}
    in_file: dict[str, set[str]] = {}
    idf: dict[str, float] = {}
    for w in distinct:
        files: set[str] = set()
        for path, start in store.matching(match([w]), glob, lang):
            in_chunk.setdefault((path, start), set()).add(w)
            files.add(path)
        for path in files:
            in_file.setdefault(path, set()).add(w)
        idf[w] = math.log(1 + n_files / (1 + len(files)))
    total = sum(idf.values()) or 1.0
    # A definition the question names whole keeps the weight it has for every kind (`walk` is the
    # answer to "walk a directory tree"); its coverage below tells it from a one-word namesake.
    base = {(h.path, h.start): h.score * (2.0 if h.symbol.lower() in distinct else 1.0) for h in ranked}
    top = max(base.values()) or 1.0

    def cover(found) -> float:
        return sum(idf[w] for w in found) / total

    def score(h: Hit) -> float:
        named = _path_words(h.path) & idf.keys()  # the file's name is the chunk's context too
        return (base[(h.path, h.start)] / top) * (0.5 + cover(in_chunk.get((h.path, h.start), set()) | named)) \
            * (0.5 + cover(in_file.get(h.path, set()) | named))

    return sorted(ranked, key=score, reverse=True)


def _path_words(path: str) -> set[str]:
    return {w for part in re.split(r"[/._\\-]+", path.lower()) for w in [part] + tokens.parts(part)}
