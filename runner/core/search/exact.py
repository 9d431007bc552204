"""The exact evidence a query carries, ranked first (issue 46): a pasted error's message as the
phrases the raising code spells, only the definitions the message names, a source file's definition
before a stub's declaration of it, and the class a `Class.method` qualifier names."""

import re

from runner.core.search import files, tokens
from runner.core.search.kind import DIAGNOSTIC, LOGGED, QUALIFIED_RAISE

# Where a pasted message starts: after its exception's name ("ValueError: ", "pkg.mod.BadThing: "), or
# after a diagnostic's file, line and level ("doc.rst:3: (WARNING/2) "), or a logged line's level and logger.
MESSAGE = re.compile(r"\b\w*(?:Error|Exception|Warning)\b\s*:\s*|" + QUALIFIED_RAISE + "|" + DIAGNOSTIC + "|" + LOGGED,
                     re.M)
PHRASE = 3  # words a phrase of the message holds: short enough to stay inside one literal of a split string
MAX_PHRASES = 24
CLASS = re.compile(r"\s*class\s+([A-Za-z_]\w*)")
CALLED = re.compile(r"([A-Za-z_]\w*)\(")
DOTTED = re.compile(r"((?:[A-Za-z_]\w*\.)+)([A-Za-z_]\w*)")


# A value the program filled into its message (`%r`, `{}`, an f-string's part): a quoted string holding a
# word, a repr in angle brackets, a number. The raise site spells a placeholder there, so no phrase of the
# message spans one: "time data '2024-13-45' does not match format '%Y-%m-%d'" is "time data" and "does not
# match format" (a quote holding no word, `Expecting ',' delimiter`, is the message's own text).
# A colon and a space join a message to the part a formatter adds to it ("Expecting ',' delimiter: line 1").
VALUE = re.compile(r"""(?:\b[bfr])?'[^'\n]*\w[^'\n]*'|(?:\b[bfr])?"[^"\n]*\w[^"\n]*"|<[^<>\n]*>|\b0x[0-9a-fA-F]+\b"""
                   r"|\b\d[\w.]*|:\s")
PAIR = 2  # the fewest words a run between two values needs to be a phrase of its own


def message_grams(text: str) -> list[str]:
    """Every PHRASE consecutive words of a pasted message (after its exception's name) that no filled-in
    value splits, and a shorter run of PAIR words whole, lowercased, once."""
    found = list(MESSAGE.finditer(text))
    message = (text[found[-1].end():] if found else text).strip()
    if len(message) > 1 and message[0] == message[-1] and message[0] in "'\"":  # a KeyError shows its message's repr
        message = message[1:-1]
    out = []
    for run in VALUE.split(message):
        words = [m.group(0).lower() for m in tokens.IDENT.finditer(run)]
        if PAIR <= len(words) < PHRASE:
            out.append(" ".join(words))
        out += [" ".join(words[i:i + PHRASE]) for i in range(len(words) - PHRASE + 1)]
    return list(dict.fromkeys(out))


def error_phrases(text: str) -> str | None:
    """An FTS5 expression matching any PHRASE consecutive words of the message, in order (the words
    the raise statement spells; the values interpolated into it match nothing), or None when the
    message is too short to say more than its words do."""
    grams = message_grams(text)
    return " OR ".join(f'"{g}"' for g in grams[:MAX_PHRASES]) or None


RAISED = re.compile(r"(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)\s*:\s*$")


def raised_name(text: str) -> str | None:
    """The exception a pasted error names with its module before its message (`MarkupError` of
    "rich.errors.MarkupError: ..."); None for a builtin's bare name (`ValueError: `, click's `Error: `),
    which many a chunk names without raising it."""
    found = list(MESSAGE.finditer(text))
    m = RAISED.search(text[:found[-1].end()]) if found else None
    return m.group(1) if m else None


BARE = re.compile(r"\b(\w*(?:Error|Exception|Warning))\s*:\s*$")


def bare_name(text: str) -> str | None:
    """The exception a pasted error names alone before its message (`LookupError` of "LookupError: the
    converter 'uuid4' does not exist"): many a chunk names it, only its raise sites raise it."""
    found = list(MESSAGE.finditer(text))
    m = BARE.search(text[:found[-1].end()]) if found else None
    return m.group(1) if m else None


def by_message(root: str, text: str, phrased: list, keep=None) -> list:
    """The chunks spelling part of a pasted message, a raise site of the exception it names with its
    module first (`raise errors.StyleSyntaxError(...)`, not the helper whose own error it wraps), the one
    spelling most of the message's runs of words leading (FTS5's bm25 favoured a shorter sibling raising
    a like message); the rest in bm25 order. keep: the index's store, which keeps files' lines."""
    name = raised_name(text)
    if name is not None:
        named = re.compile(rf"\b{re.escape(name)}\b")
    elif (name := bare_name(text)) is not None:  # a builtin's: the chunk raising it, not one catching it
        # (werkzeug's `raise LookupError(f"the converter {name!r} does not exist")` spells one run of the
        # message's words, as a shorter one saying "does not exist" does: bm25 put that one first)
        named = re.compile(rf"\braise\s+(?:[\w.]+\.)?{re.escape(name)}\b")
    else:
        return phrased
    grams = set(message_grams(text))

    def key(h) -> tuple[bool, float]:
        lines = files.read_lines(root, h.path, keep)[h.start - 1:h.end]
        if not any(named.search(line) for line in lines):
            return True, 0
        words = [m.group(0).lower() for line in lines for m in tokens.IDENT.finditer(line)]
        # a run of two words between values ("bad request" of werkzeug's "400 Bad Request: Host '...' is not
        # trusted", every HTTP error's prefix) says less than three in a row: it counts half
        return False, -sum(len({" ".join(words[i:i + n]) for i in range(len(words) - n + 1)} & grams) * n / PHRASE
                           for n in (PAIR, PHRASE))

    return sorted(phrased, key=key)


def phrase_first(phrased: list, ranked: list) -> list:
    """The chunks that spell part of the message first (in by_message's order), then the rest."""
    keys = {(h.path, h.start) for h in phrased}
    return list(phrased) + [h for h in ranked if (h.path, h.start) not in keys]


def raiser_first(store, phrased: list, defs: list, glob: str | None, lang: str | None) -> list:
    """The definition whose chunk spells most of a pasted message (the function that raises it,
    issue 46: a pasted error is answered by its raise site) before the definitions the message
    names (its exception class, the type it expected), which tell what failed but not where. A long
    function's later window is still that function's: its definition is the nearest one above."""
    for h in phrased:
        if not tokens.IDENT.fullmatch(h.symbol):  # a window of module-level code, or of several definitions
            continue
        own = sorted((d for d in store.defs(tokens.fts_query([h.symbol]), 20, glob, lang)
                      if d.path == h.path and d.name == h.symbol and d.line <= h.end), key=lambda d: -d.line)
        if own:
            return own[:1] + [d for d in defs if (d.path, d.line) != (own[0].path, own[0].line)]
        break
    return defs


def named_in(text: str, defs: list, root: str | None = None) -> list:
    """The definitions a pasted error names as written (its exception class, `evolve()`): a class
    that only shares the message's words (FrozenAttributeError for "attribute") is no answer."""
    named = {m.group(0) for m in tokens.IDENT.finditer(text)}
    called = {m.group(1) for m in CALLED.finditer(text)}
    titled = title_cased(text)
    # A plain lowercase word of the message ("eq must be define ... lt, le") names nothing: only a
    # code-shaped name (a class, snake_case, camelCase) or one written as a call does; a capitalised
    # word of a Title Case run ("400 Bad Request") is prose too, unless written elsewhere on its own.
    found = [d for d in defs if d.name in named and (d.name in called or "_" in d.name.strip("_")
                                                     or bool(tokens.parts(d.name))
                                                     or d.name[:1].isupper() and d.name not in titled)]
    return by_qualifier(text, found, root)


CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")
TITLE_RUN = re.compile(r"\b[A-Z][a-z]+(?:[ \t]+[A-Z][a-z]+)+\b")


def title_cased(text: str) -> set[str]:
    """The capitalised words a message writes only inside runs of capitalised words ("Bad Request" of
    werkzeug's "400 Bad Request: ..."): a status line or a heading's words, not class names."""
    inside = {w for run in TITLE_RUN.finditer(text) for w in run.group(0).split()}
    alone = {m.group(0) for m in CAPITALISED.finditer(TITLE_RUN.sub(" ", text))}
    return inside - alone


def by_qualifier(text: str, defs: list, root: str | None) -> list:
    """A name the message writes with its module or class (`asyncio.run()`, `tarfile.ReadError`)
    is that module's or class's: a namesake whose path and class disagree with the qualifier (bdb's
    `run`, shutil's ReadError) is no answer."""
    quals: dict[str, set[str]] = {}  # name -> its nearest qualifiers (`pkg.archive.X`: archive, not pkg)
    for m in DOTTED.finditer(text):
        quals.setdefault(m.group(2), set()).add(m.group(1).rstrip(".").rsplit(".", 1)[-1].lower())
    read: dict = {}

    def agrees(d) -> bool:
        hay = set(d.path.lower().replace("\\", "/").replace("/", ".").rsplit(".", 1)[0].split("."))
        if root is not None:
            hay.add(enclosing_class(root, d.path, d.line, read).lower())
        return bool(quals[d.name] & hay)

    return [d for d in defs if d.name not in quals or agrees(d)]


def source_first(items: list, name=lambda d: d.name) -> list:
    """A stub (.pyi) declares what a source file defines: where both name a thing, the source first
    (order otherwise kept)."""
    in_source = {name(d).lower() for d in items if not d.path.endswith(".pyi")}
    return sorted(items, key=lambda d: d.path.endswith(".pyi") and name(d).lower() in in_source)


def enclosing_class(root: str, path: str, line: int, read: dict | None = None) -> str:
    """The class a definition at `line` is a method of ("" for a module-level one), read from the
    file's indentation: the index keeps no parents, and a qualifier is checked for a few candidates
    (`read`: the files already read for this query, `Class.__init__` has many in one file)."""
    read = {} if read is None else read
    if path not in read:
        read[path] = files.read_lines(root, path)
    lines = read[path]
    if not 0 < line <= len(lines):
        return ""
    own = len(lines[line - 1]) - len(lines[line - 1].lstrip())
    for text in reversed(lines[:line - 1]):
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        if stripped and indent < own:
            m = CLASS.match(text)
            if m:
                return m.group(1)
            if not stripped.startswith(("@", "#")):
                own = indent  # an enclosing def or block: its own parent is further out
            if indent == 0:
                return ""
    return ""


SITES_READ = 40  # candidates whose lines a callers' question reads: the rest keep their BM25 order
IMPORT = re.compile(r"^\s*(from\s+\S+\s+)?import\b|^\s*__all__\b")
COMMENT = re.compile(r"^\s*#")  # a comment that mentions `X()` calls nothing


def usage_sites(root: str, question: str, target: str, ranked: list) -> tuple[list, list]:
    """The chunks that call (raise, use) the target, in their order, and the rest: a definition,
    a stub's declaration, an import or an __all__ entry names it and calls nothing."""
    if not target.isidentifier():
        return [], ranked
    word = re.escape(target)
    if re.search(r"\brais(e|es|ed)\b", question, re.I):
        site = re.compile(rf"\braise\s+([\w.]+\.)?{word}\b")
    elif re.search(r"\bcall(s|ed|ers?)?\b", question, re.I):  # "where is X called" asks for its calls too
        site = re.compile(rf"(?<![\w.])([\w.]+\.)?{word}\s*\(")
    else:
        site = re.compile(rf"\b{word}\b")
    own = re.compile(rf"^\s*(async\s+)?(def|class)\s+{word}\b")
    lines: dict[str, list[str]] = {}
    sites, rest = [], []
    for i, h in enumerate(ranked):
        if i >= SITES_READ or h.path.endswith(".pyi"):
            rest.append(h)
            continue
        if h.path not in lines:
            lines[h.path] = files.read_lines(root, h.path)
        body = lines[h.path][h.start - 1:h.end]
        calls = any(site.search(t) and not (own.match(t) or IMPORT.match(t) or COMMENT.match(t)) for t in body)
        (sites if calls else rest).append(h)
    module = qualifier_of(question, target)
    if module is not None:  # `fnmatch.translate`: its callers, not every `s.translate(`
        sites.sort(key=lambda h: not by_module(module, target, h, lines[h.path]))
    return sites, rest


def qualifier_of(question: str, target: str) -> str | None:
    """The module or class a usage question writes its target with (`fnmatch` of "who calls fnmatch.translate")."""
    m = re.search(rf"(?:^|[^\w.])(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)\.{re.escape(target)}\b", question)
    return m.group(1) if m else None


def by_module(module: str, target: str, h, lines: list[str]) -> bool:
    """The chunk uses `module.target` as written, or is in a file that is that module or imports the
    target from it (where a bare `target(` is that module's)."""
    said = re.compile(rf"\b{re.escape(module)}\.{re.escape(target)}\b")
    if any(said.search(t) for t in lines[h.start - 1:h.end]):
        return True
    imported = re.compile(rf"^\s*from\s+(?:[\w.]+\.)?{re.escape(module)}\s+import\b.*\b{re.escape(target)}\b")
    return module in title_words(h.path) or any(imported.match(t) for t in lines)


def title_words(path: str) -> set[str]:
    """A file's module name and, for a package's __init__.py, its package's."""
    parts = path.replace("\\", "/").split("/")
    name = parts[-1].rsplit(".", 1)[0]
    return {name, parts[-2]} if name == "__init__" and len(parts) > 1 else {name}
