"""The pre-pass of the work policy's shell reading: what shlex cannot see, lifted out of the text.

One quote-aware linear scan. It lifts the outermost `$(..)`, backticks and `<(..)`/`>(..)` out
(each replaced by one marker character, its text returned to be parsed as commands of its own),
drops `#` comments (shlex would end a word at `a#b` and hide the rest of the line as a comment)
and here-document bodies (prose with apostrophes would read as unbalanced quotes; a body fed to
a shell is returned to be parsed). Inner substitutions stay in their text, lifted when that
text is parsed a level deeper, so no pass rescans what another already did.
"""

from __future__ import annotations

import re

# A lifted $(..) becomes one private-use code point, its index: one character, because shlex
# builds a word by `self.token += c` (quadratic in the word's length) and a word of many
# substitutions must stay short. Past MAX_SUBS in one text, the text is judged by a name scan.
MARK_BASE, MAX_SUBS = 0xE000, 0x1900
MARK = re.compile("[\ue000-\uf8ff]")
UNQUOTE = str.maketrans("", "", "'\"\\")  # a here-doc's delimiter word, quotes removed


def lift(text: str) -> tuple[str, list[str], list[str], str]:
    """(text with substitutions replaced by markers, their texts, top-level here-doc bodies,
    why it cannot be parsed or ""). Only the outermost substitutions are lifted; inner ones stay in their
    text, to be lifted when that text is parsed (a level deeper)."""
    out: list[str] = []
    sub: list[str] | None = None  # the outermost open substitution's text, if any
    subs: list[str] = []
    bodies: list[str] = []
    stack: list[list] = []  # frames: ["dq"] | ["bq"] | ["sub", open parens]
    pending: list[tuple[str, bool]] = []  # here-docs whose body starts at the next newline
    i, n = 0, len(text)

    def emit(s: str) -> None:
        (sub if sub is not None else out).append(s)

    while i < n:
        c = text[i]
        top = stack[-1][0] if stack else ""
        if c == "\\":
            if text.startswith("\n", i + 1):  # a line continuation: gone, as in the shell
                i += 2
                continue
            emit(text[i:i + 2])
            i += 2
            continue
        opener = "$(" if text.startswith("$(", i) else "`" if c == "`" and top != "bq" else ""
        if not opener and top != "dq" and text.startswith(("<(", ">("), i):
            opener = text[i:i + 2]
        if opener:
            stack.append(["bq" if opener == "`" else "sub", 0])
            if sub is None:
                sub = []
                stack[-1].append(True)  # marks the frame whose close ends the lifted text
            else:
                emit(opener)
            i += len(opener)
            continue
        closes = (top == "dq" and c == '"') or (top == "bq" and c == "`") or (
            top == "sub" and c == ")" and not stack[-1][1])
        if closes:
            frame = stack.pop()
            if len(frame) > 2:
                if len(subs) == MAX_SUBS:
                    return text, subs, bodies, "too many substitutions to judge"
                subs.append("".join(sub or ()))
                sub = None
                emit(chr(MARK_BASE + len(subs) - 1))
            else:
                emit(c)
            i += 1
            continue
        if top == "dq":
            emit(c)
            i += 1
            continue
        if top == "sub" and c in "()":
            stack[-1][1] += 1 if c == "(" else -1
        if c == "'":
            j = text.find("'", i + 1)
            if j < 0:
                return text, subs, bodies, "unbalanced quotes"
            emit(text[i:j + 1])
            i = j + 1
            continue
        if c == '"':
            stack.append(["dq"])
        elif c == "#" and (i == 0 or text[i - 1] in " \t\n;&|()"):
            j = text.find("\n", i)
            j = n if j < 0 else j
            if sub is not None:
                emit(text[i:j])  # a deeper text keeps its comment: its own parse drops it
            i = j
            continue
        elif text.startswith("<<", i) and not text.startswith("<<<", i):
            j = i + 2 + (text[i + 2:i + 3] == "-")
            while j < n and text[j] in " \t":
                j += 1
            k = j
            while k < n and text[k] not in " \t\n;&|()<>":
                k += 1
            pending.append((text[j:k].translate(UNQUOTE), text[i + 2:i + 3] == "-"))
            emit(text[i:k])
            i = k
            continue
        elif c == "\n" and pending:
            start = i = i + 1
            for delimiter, strip_tabs in pending:
                lines = []
                while i < n:
                    j = text.find("\n", i)
                    j = n if j < 0 else j
                    line, i = text[i:j], j + 1
                    if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                        break
                    lines.append(line)
                if sub is None:
                    bodies.append("\n".join(lines))
            pending.clear()
            emit("\n" if sub is None else text[start - 1:i])
            continue
        emit(c)
        i += 1
    return "".join(out), subs, bodies, "unbalanced quotes or parentheses" if stack else ""
