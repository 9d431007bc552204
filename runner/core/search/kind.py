"""What kind of question a search query is, and the ranking rules each kind gets (issue 46):
an identifier or pasted error keeps exact matches first, a plain-words question is not answered by
one common word's short definition, a qualified name uses its qualifier, a usage question spreads
over files, a "why" question puts commits first."""

import re

from runner.core.search import tokens

# A "why" question asks about the history: "why ...", "when was/did ...", or a change done to something
# ("was X changed", "which commit removed X"); a question about what code does to data ("copy an instance
# with some attributes changed") is a plain-words one, and so is one that opens on a condition ("when one
# task fails how are the others cancelled": `when` then a clause, not a question about a date).
WHY = re.compile(r"^\s*why\b|^\s*when\s+(was|were|did|has|have|had)\b|\b(commits?|regress\w*)\b"
                 r"|\b(was|were|been|got|who|which|what)\b(\s+\S+){0,4}?\s+(changed?|introduced|removed|added)\b", re.I)
# A usage question names its verb before its target ("who calls X", "which functions raise X", "where is
# X used"); a question whose verb comes last after many words ("which tags can a pure package use")
# asks about something else.
USAGE = re.compile(r"^\s*(who|what|which)(\s+\w+)?\s+(calls?|uses?|raises?|imports?|references?)\b(?=\s+\S)"
                   r"|^\s*where\s+(is|are)\s+\S+\s+(used|called|raised|imported|referenced)\b"
                   r"|^\s*(callers|usages?|uses) of\b", re.I)
# Every form USAGE accepts: "where is utils.new_document called" asked about `called` (issue 46, docutils).
VERBS = frozenset("call calls called caller callers use uses used usage usages raise raises raised import imports "
                  "imported reference references referenced".split())
QUALIFIED = re.compile(r"^\s*[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+\s*$")
ERROR_NAME = re.compile(r"\w*(Error|Exception|Warning)")
# A traceback's last line names its exception with the module it lives in ("packaging.requirements.
# InvalidRequirement: Expected end ..."): an exception class need not end in Error to be raised.
QUALIFIED_RAISE = r"^\s*(?:[a-z_]\w*\.)+[A-Z]\w*:\s"
# A tool's diagnostic line ("doc.rst:3: (WARNING/2) Title underline too short.", "app.py:7:1: error: ..."):
# a file, a line (and column), then the message, after a level tag where the tool writes one. Docutils,
# compilers, linters and type checkers report so; the message is spelled by the code that reports it.
DIAGNOSTIC = r"^\s*[\w./\\-]+\.\w+:\d+:(?:\d+:)?\s+(?:\([A-Za-z]+/\d+\)\s*|[A-Za-z]+:\s+)?"
# A logged line (`ERROR:asyncio:Task was destroyed but it is pending!`, logging's default format; or a
# timestamp, the level in capitals and the logger's name: `2024-05-01 10:00:00,123 ERROR asyncio: ...`):
# the message after them is spelled by the code that logs it.
LOGGED = (r"^\s*(?:[\d][\d:,.\-T/ ]*\s+)?(?:CRITICAL|FATAL|ERROR|WARNING|WARN|INFO|DEBUG)"
          r"(?::[\w.]+:|\s+[\w.]+:\s|\s*:\s|\s+-\s+(?:[\w.]+\s+-\s+)?)")
ERROR = re.compile(r"\b\w*(Error|Exception|Warning)\b\s*:|Traceback \(most recent|^\s*File \"|" + QUALIFIED_RAISE
                   + "|" + DIAGNOSTIC + "|" + LOGGED, re.M)


def classify(query: str) -> str:
    """One of "error", "qualified", "identifier", "usage", "why", "concept"."""
    if ERROR.search(query):
        return "error"
    if QUALIFIED.match(query):
        return "qualified"
    q = query.strip()
    if tokens.IDENT.fullmatch(q):
        return "identifier"
    if USAGE.search(q):
        return "usage"
    if WHY.search(q):
        return "why"
    return "concept"


def qualifier(query: str) -> tuple[list[str], str]:
    """`pkg.mod.func` -> (["pkg", "mod"], "func"); `Class.method` -> (["Class"], "method")."""
    *quals, name = query.strip().split(".")
    return quals, name


def usage_target(query: str) -> list[str]:
    """The identifiers a usage question is about: "who calls setters.pipe" -> ["setters", "pipe"]."""
    rest = USAGE.sub("", query, count=1)
    # "where is X used": the match took the whole question; its verb is no target (it was `used`).
    return tokens.query_words(rest) or [w for w in tokens.query_words(query) if w.lower() not in VERBS] \
        or tokens.query_words(query)


def concept_def_ok(name: str, words: list[str], compounds: frozenset[str] = frozenset()) -> bool:
    """A plain-words question's definition must match the question by more than one of its words,
    unless the name is itself one of the question's compound words: `read` alone does not answer
    "how is a file read in chunks". compounds: the lowercased names some definition spells as a
    compound (NamedTuple): the same name written as one word (namedtuple) is that compound too."""
    lowered = {w.lower() for w in words}
    name_l = name.lower()
    if name_l in lowered and (tokens.parts(name) or "_" in name.strip("_") or name_l in compounds):  # `__init__`: one word
        return True
    name_parts = set(tokens.parts(name)) or {name_l}
    return len(name_parts & lowered) >= 2


def qualified_score(path: str, symbol: str, quals: list[str]) -> int:
    """How many of the qualifiers the hit's path or enclosing symbol names."""
    hay = path.lower().replace("/", ".").replace("\\", ".") + " " + symbol.lower()
    return sum(q.lower() in hay for q in quals)
