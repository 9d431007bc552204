"""A file cut into chunks: at definitions where Python's `ast` can parse it, in line windows
elsewhere; with the definitions (name -> line) each language's table of patterns finds."""

import ast
import functools
import os
import re
from dataclasses import dataclass

WINDOW = 30  # lines per chunk where there is no definition to cut at
MAX_CHUNK = 80  # a longer definition is split into windows that keep its name

# extension -> language; adding a language is adding a row (and a DEFS row for its definitions).
LANGS = {
    ".py": "python", ".pyi": "python", ".js": "javascript", ".mjs": "javascript", ".cjs": "javascript",
    ".jsx": "javascript", ".ts": "typescript", ".tsx": "typescript", ".go": "go", ".rs": "rust",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".java": "java", ".rb": "ruby",
    ".sh": "shell", ".md": "markdown", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".json": "json",
}
_NAME = r"([A-Za-z_$][\w$]*)"
DEFS = {
    "python": re.compile(rf"^\s*(?:async\s+)?(?:def|class)\s+{_NAME}"),
    "javascript": re.compile(rf"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?(?:function\*?|class)\s+{_NAME}"
                             rf"|^\s*(?:export\s+)?(?:const|let|var)\s+{_NAME}\s*=\s*(?:async\s*)?(?:\(|function)"),
    "go": re.compile(rf"^func\s+(?:\([^)]*\)\s*)?{_NAME}|^type\s+{_NAME}"),
    "rust": re.compile(rf"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+)?(?:fn|struct|enum|trait|mod|type)\s+{_NAME}"),
    "c": re.compile(rf"^[A-Za-z_][\w\s\*]*?\b{_NAME}\s*\([^;]*$|^(?:typedef\s+)?struct\s+{_NAME}"),
    "java": re.compile(rf"^\s*(?:public|private|protected)?\s*(?:static\s+)?(?:class|interface|enum)\s+{_NAME}"),
    "ruby": re.compile(rf"^\s*(?:def|class|module)\s+(?:self\.)?{_NAME}"),
    "shell": re.compile(rf"^\s*(?:function\s+)?{_NAME}\s*\(\)\s*\{{"),
    "markdown": re.compile(r"^#{1,4}\s+(.+?)\s*$"),
}
DEFS["typescript"] = DEFS["javascript"]
DEFS["cpp"] = DEFS["c"]


@dataclass(frozen=True)
class Definition:
    name: str
    line: int  # 1-based
    kind: str  # "def", "class" or "symbol"


@dataclass(frozen=True)
class Chunk:
    start: int  # 1-based, inclusive
    end: int
    symbol: str  # the definition this chunk is ("" for plain text)
    text: str


@functools.lru_cache(maxsize=8192)  # asked for each of a plain-words question's ~250 candidates
def language(path: str) -> str:
    return LANGS.get(os.path.splitext(path)[1].lower(), "")


def cut(path: str, text: str) -> tuple[list[Chunk], list[Definition]]:
    lines = text.splitlines()
    lang = language(path)
    if lang == "python":
        try:
            return _python(lines, ast.parse(text))
        except (SyntaxError, ValueError, RecursionError):
            pass  # not valid Python 3 (a py2 file, a template): windows and patterns below
    defs = _pattern_defs(lang, lines)
    named = {d.line: d.name for d in defs}
    return _windows(lines, 1, len(lines), named), defs


def _pattern_defs(lang: str, lines: list[str]) -> list[Definition]:
    pattern = DEFS.get(lang)
    if pattern is None:
        return []
    out = []
    for i, line in enumerate(lines, 1):
        if len(line) < 400 and (m := pattern.search(line)):
            name = next(g for g in m.groups() if g)
            out.append(Definition(name[:120], i, "symbol"))
    return out


def _windows(lines: list[str], start: int, end: int, named: dict[int, str], symbol: str = "") -> list[Chunk]:
    out = []
    for s in range(start, end + 1, WINDOW):
        e = min(end, s + WINDOW - 1)
        sym = symbol or " ".join(named[i] for i in range(s, e + 1) if i in named)
        text = "\n".join(lines[s - 1:e])
        if text.strip():  # blank lines between definitions are no hit
            out.append(Chunk(s, e, sym, text))
    return out


def _python(lines: list[str], tree: ast.Module) -> tuple[list[Chunk], list[Definition]]:
    chunks: list[Chunk] = []
    defs: list[Definition] = []
    covered = _walk(lines, tree.body, chunks, defs)
    # Module-level code between definitions (imports, constants, scripts) in windows.
    gap_start = None
    for n in range(1, len(lines) + 2):
        if n <= len(lines) and n not in covered:
            gap_start = gap_start or n
        elif gap_start is not None:
            chunks.extend(_windows(lines, gap_start, n - 1, {}))
            gap_start = None
    return chunks, defs


def _walk(lines: list[str], body: list[ast.stmt], chunks: list[Chunk], defs: list[Definition]) -> set[int]:
    covered: set[int] = set()
    for node in body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        first = min([node.lineno] + [d.lineno for d in node.decorator_list])
        end = node.end_lineno or node.lineno
        kind = "class" if isinstance(node, ast.ClassDef) else "def"
        defs.append(Definition(node.name, node.lineno, kind))
        if kind == "class":
            # The class's own lines (docstring, attributes) as one chunk; its methods each their own.
            inner = _walk(lines, node.body, chunks, defs)
            own = [n for n in range(first, end + 1) if n not in inner]
            if own:
                chunks.extend(_windows(lines, own[0], own[-1], {}, node.name) if own[-1] - own[0] < MAX_CHUNK
                              else _windows(lines, own[0], min(own[-1], own[0] + MAX_CHUNK), {}, node.name))
        else:
            # Nested functions are defined but stay in their parent's chunk.
            for sub in ast.walk(node):
                if sub is not node and isinstance(sub, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    defs.append(Definition(sub.name, sub.lineno, "def" if kind == "def" else "class"))
            if end - first < MAX_CHUNK:
                chunks.append(Chunk(first, end, node.name, "\n".join(lines[first - 1:end])))
            else:
                chunks.extend(_windows(lines, first, end, {}, node.name))
        covered.update(range(first, end + 1))
    return covered
