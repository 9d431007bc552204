"""Identifiers as an agent types them: whole (`parse_args`, `getUserName`) and in parts
(`parse`, `args`, `get`, `user`, `name`), so either spelling of a query finds the code."""

import re

IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# camelCase / PascalCase / ACRONYMWord boundaries: "HTTPServerError" -> HTTP, Server, Error.
CAMEL = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")
# Words too common in prose queries to rank on ("why did X change").
STOP = frozenset("a an the and or of to in on for is are was were be by with it this that what "
                 "why how when where who did does do which from at as not no".split())


def parts(ident: str) -> list[str]:
    """The lowercase parts of a compound identifier; [] when it has only one part."""
    out: list[str] = []
    for piece in ident.split("_"):
        out.extend(m.group(0).lower() for m in CAMEL.finditer(piece))
    return out if len(out) > 1 else []


def expand(text: str) -> str:
    """The text plus the parts of each compound identifier in it: what the index tokenizes."""
    extra = []
    for m in IDENT.finditer(text):
        extra.extend(parts(m.group(0)))
    return text + ("\n" + " ".join(extra) if extra else "")


def query_words(query: str) -> list[str]:
    """The query's identifiers, lowercased, stopwords dropped unless nothing else is left."""
    words = [m.group(0) for m in IDENT.finditer(query)]
    kept = [w for w in words if w.lower() not in STOP]
    return kept or words


def looks_like_identifier(query: str) -> bool:
    """One word that is compound or code-shaped: weigh exact definition matches more."""
    q = query.strip()
    return bool(IDENT.fullmatch(q)) and ("_" in q or bool(parts(q)) or q[:1].isupper())


def fts_query(words: list[str]) -> str:
    """An FTS5 MATCH expression: any word, each whole or as all its parts."""
    terms = []
    for w in words:
        whole = '"' + w.lower().replace('"', "") + '"'
        ps = parts(w)
        terms.append(f"({whole} OR ({' AND '.join(chr(34) + p + chr(34) for p in ps)}))" if ps else whole)
    return " OR ".join(terms)
