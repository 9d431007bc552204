"""How a plain-words question ranks chunks: by how much of the question a chunk says in its
context (its own words and the file around it), weighed by how rare each word is across files,
not by one rare word's BM25 alone (issue 46: a short definition named by one common word of the
question used to outrank the chunk holding the answer), and by its file's whole-file BM25
(whole.py: whole-file BM25 found the answer's file more often than chunks alone did)."""

import functools
import math
import re

from runner.core.search import plan, postings, tokens, whole
from runner.core.search.chunks import language
from runner.core.search.store import Hit, IndexStore

POOL = 25  # candidates per result asked of BM25: the answer's chunk may rank past the first 80 on one word
POOL_ROWS = 10_000  # chunks the candidates' words may match at most (past the two rarest words)
# A file in no language the index knows (LICENSE, a wheel's METADATA, a changelog without an
# extension) tells about the code; a question about what the code does is answered by the code.
NO_LANGUAGE = 0.5
# A chunk's score is times (FILE_FLOOR + its file's whole-file BM25 / the best candidate file's):
# the file around it counts, yet a chunk that says the question in a weaker file can still lead.
FILE_FLOOR = 0.5
# A file named by a word of the question (base64.py for "encode bytes as base64 text", markers.py for
# "check an environment marker") is about it: its chunks weigh this much more. Its name counted in the
# coverage already, as one word among the others; a module is named for what it does. 1.25 and 1.5
# kept or raised the concept NDCG@10 of every dev set and of bench_search's tuned plain-words set.
TITLED = 1.25
# A definition named by a word of the question weighs up to NAMED times more (named_weight): in full
# where its chunk says NAMED_SAYS of the question's other words (by their idf weight), less the less it
# does. 0.33-1.0 all raised the concept NDCG@10 of werkzeug, rich and the stdlib (one click query lost).
NAMED = 2.0
NAMED_SAYS = 0.5
PREFIX_MIN = 3  # letters a word needs to name the file whose name it begins ("re" begins too many)


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


# Words of a question in English that say nothing about the code ("like a shell would", "so that it
# can"): dropped from a plain-words question's ranking (tokens.STOP has the commonest already).
PROSE_STOP = frozenset("can could would should will shall may might must has have had having been being its "
                       "their there these those they them into onto so than then thus also just only very "
                       "such some like whether instead about i me my we our you your he she his her "
                       "way ways something anything thing things someone".split())


def search(store: IndexStore, words: list[str], limit: int, glob: str | None, lang: str | None) -> list[Hit]:
    """The chunks answering a plain-words question, best first."""
    words = [w for w in words if w.lower() not in PROSE_STOP] or words
    spelled = {w.lower(): w for w in reversed(words)}  # the first spelling kept: camelCase has parts
    distinct = list(dict.fromkeys(w.lower() for w in words))
    posts = {w: postings.of(store, match([spelled[w]]), glob, lang) for w in distinct}
    # The candidates come from the rarer words (cap POOL_ROWS chunks): BM25 over every chunk that says
    # "file" or "data" costs tens of ms and the common words still count below, in coverage.
    chosen, rows = [], 0
    for w in sorted(distinct, key=lambda w: len(posts[w].chunks)):
        if len(chosen) >= 2 and rows + len(posts[w].chunks) > POOL_ROWS:
            break
        chosen.append(spelled[w])
        rows += len(posts[w].chunks)
    # The rarest of them retrieve and the others' bm25 share is added to what they found (plan.py): the
    # candidates' scores as before, for a fraction of the rows scored.
    keep = plan.pick({w: len(posts[w.lower()].chunks) for w in chosen})
    find, rest = [w for w in chosen if w in keep], [w for w in chosen if w not in keep]
    pool = store.chunks(match(find), limit * POOL, glob, lang, plan.groups(rest, stem))
    return rerank(store, distinct, posts, pool)


def rerank(store: IndexStore, distinct: list[str], posts: dict, ranked: list[Hit]) -> list[Hit]:
    if len(distinct) < 2 or not ranked:
        return ranked
    n_files = max(1, store.file_count())
    idf = {w: math.log(1 + n_files / (1 + len(posts[w].files))) for w in distinct}
    total = sum(idf.values()) or 1.0
    paths = {h.path for h in ranked}
    files = whole.scores(store, distinct, posts, n_files, paths)
    best_file = max((files.get(h.path, 0.0) for h in ranked), default=0.0) or 1.0
    path_words = {p: _path_words(p) & idf.keys() for p in paths}
    in_file = {p: {w for w in distinct if p in posts[w].files} | path_words[p] for p in paths}

    def cover(found: set[str]) -> float:
        return sum(idf[w] for w in found) / total

    base = {h.rowid: h.score * named_weight(h, distinct, posts, cover)
            * (1.0 if language(h.path) else NO_LANGUAGE) for h in ranked}
    top = max(base.values()) or 1.0

    titled = {p: TITLED if named_by(p, distinct) else 1.0 for p in paths}

    def score(h: Hit) -> float:
        in_chunk = {w for w in distinct if h.rowid in posts[w].chunks} | path_words[h.path]  # its file's name too
        return ((base[h.rowid] / top) * (0.5 + cover(in_chunk)) * (0.5 + cover(in_file[h.path]))
                * (FILE_FLOOR + files.get(h.path, 0.0) / best_file) * titled[h.path])

    return sorted(ranked, key=score, reverse=True)


def named_weight(h: Hit, distinct: list[str], posts: dict, cover) -> float:
    """A definition the question names whole (`walk` for "walk a directory tree") weighs up to NAMED
    times more, as much as its chunk says the rest of the question (a full NAMED from NAMED_SAYS of the
    other words' weight): a class named by one common word ("Range" for "answer 206 partial content
    when the request has a Range header", `save` for "make the name of an uploaded file safe to save on
    disk") is no answer for its name alone (issue 46: werkzeug, rich and the stdlib's plain-words
    questions; a flat 2x ranked such namesakes above the chunk holding the answer)."""
    name = h.symbol.lower()
    if name not in distinct:
        return 1.0
    others = {w for w in distinct if w != name and h.rowid in posts[w].chunks}
    return 1.0 + (NAMED - 1.0) * min(1.0, cover(others) / NAMED_SAYS)


@functools.lru_cache(maxsize=8192)  # as title(): the same candidate files query after query
def _path_words(path: str) -> frozenset[str]:
    return frozenset(w for part in re.split(r"[/._\\-]+", path.lower()) for w in [part] + tokens.parts(part))


def named_by(path: str, words: list[str], package: bool = False) -> bool:
    """The file is named by a word of the question (markers.py for "check an environment marker"), or
    its name begins with one (a module's name is often two words run together: _musllinux.py for "musl",
    forkserver.py for "forked"); with package, its directories count too (urllib/request.py for "where
    does urllib follow a redirect")."""
    kept = [w.lower() for w in words if w.lower() not in PROSE_STOP]
    said = set(kept) | {stem(w) for w in kept}
    named = title(path)
    return bool(named & said or any(n.startswith(w) for n in named for w in said if len(w) >= PREFIX_MIN)
                or package and _path_words(path) & said)


@functools.lru_cache(maxsize=8192)  # a question's ~250 candidate files, mostly the same ones query after query
def title(path: str) -> frozenset[str]:
    """The words a file is named by: its name without extension or underscores (a package's
    __init__.py: the package's), that name's stem and its parts ("_textwrap" -> textwrap, "tag_utils"
    -> tag, utils)."""
    parts = re.split(r"[/\\]", path)
    name = parts[-1].rsplit(".", 1)[0]
    if name == "__init__" and len(parts) > 1:
        name = parts[-2]
    name = name.strip("_").lower()
    return frozenset({name, stem(name), *tokens.parts(name), *name.split("_")})
