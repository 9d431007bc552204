"""The places a pasted error names (issue 46): a traceback's frames (`File "/usr/lib/python3.11/shutil.py",
line 845, in move`) and a warning's or diagnostic's `path:line:` say where the code that failed is, in
the pasted text itself. A frame's path is the one on the machine that ran it, an install prefix or
another checkout before it: the indexed file is its longest suffix the workspace holds. The innermost
frame is where the error was raised (a chained traceback's last one, the error the agent sees)."""

import fnmatch
import re

from runner.core.search import files, tokens

FRAME = re.compile(r'^\s*File "([^"\n]+)", line (\d+)(?:, in (\S+))?', re.M)
# `path.py:12: DeprecationWarning: ...`, `src/app.py:7:1: error: ...`: a file with an extension, then its line.
LOCATED = re.compile(r"^\s*([^\s:\"'<>]+\.\w+):(\d+):", re.M)
MAX_FRAMES = 4  # the innermost frames the workspace holds that lead the answer: an outer one is its caller's
# Places looked up at most, innermost first: each costs an open per suffix of its path, and a pasted recursion
# error repeats one frame a thousand times.
MAX_PLACES = 40
GLOB_SPECIAL = re.compile(r"[*?\[\]]")


def places(text: str) -> list[tuple[str, int, str]]:
    """(path as written, line, function or "") of every frame and `path:line:` the text names, innermost first."""
    found = [(m.start(), m.group(1), int(m.group(2)), m.group(3) or "") for m in FRAME.finditer(text)]
    found += [(m.start(), m.group(1), int(m.group(2)), "") for m in LOCATED.finditer(text)]
    return list(dict.fromkeys((p, n, f) for _, p, n, f in sorted(found, reverse=True)))[:MAX_PLACES]


def indexed_path(root: str, written: str, keep=None) -> str | None:
    """The workspace's file a frame's path names: its longest suffix (whole path components) that is a file
    in the workspace, None when none is (the agent's own script, another package)."""
    parts = [p for p in written.replace("\\", "/").split("/") if p not in ("", ".")]
    for i in range(len(parts)):
        rel = "/".join(parts[i:])
        if ".." not in parts[i:] and not GLOB_SPECIAL.search(rel) and files.read_lines(root, rel, keep):
            return rel
    return None


def located(store, root: str, text: str, glob: str | None, lang: str | None) -> list:
    """The chunks holding the lines the text's frames name, innermost first, one per place. A line whose
    number is past the file (another version of it) falls back to the chunk of the frame's function."""
    out, seen, tried = [], set(), 0
    for written, line, func in places(text):
        if tried >= MAX_FRAMES:
            break
        rel = indexed_path(root, written, store)
        if rel is None or (glob is not None and not fnmatch.fnmatchcase(rel, glob)):
            continue
        tried += 1
        lines = files.read_lines(root, rel, store)
        said = lines[line - 1] if 0 < line <= len(lines) else ""
        words = list(dict.fromkeys(([func] if tokens.IDENT.fullmatch(func) else [])
                                   + [m.group(0) for m in tokens.IDENT.finditer(said)]))
        if not words:
            continue
        hits = store.chunks(tokens.fts_query(words), 50, rel, lang)
        at = [h for h in hits if h.start <= line <= h.end and said]
        own = [h for h in hits if func and h.symbol == func]
        pick = min(at, key=lambda h: h.end - h.start) if at else (own[0] if own else None)
        if pick is not None and (pick.path, pick.start) not in seen:
            seen.add((pick.path, pick.start))
            out.append(pick)
    return out


def located_first(found: list, ranked: list) -> list:
    """The chunks the frames name first (innermost first), then the rest in their order."""
    keys = {(h.path, h.start) for h in found}
    return list(found) + [h for h in ranked if (h.path, h.start) not in keys]
