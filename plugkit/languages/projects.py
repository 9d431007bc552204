"""Project builders: how a row turns the agent's code into the files of a task dir and the
argv of its steps. Standard library only; pure (the executor writes the files).

A row names its builder (Language.project); a row without one gets plain():
the code as one file and the row's own templates. Adding a special case is
adding a function to BUILDERS, never an `if lang == ...` in the executor.
"""

from __future__ import annotations

import re

from plugkit.languages import cargo as lang_cargo
from plugkit.languages.model import Builder, Layout, ProjectContext, ResolvedPlan


def plain(plan: ResolvedPlan, code: str, ctx: ProjectContext | None = None) -> Layout:
    return Layout(source=code, suffix=plan.language.suffix, compile=plan.compile, run=plan.run,
                  filename=plan.language.filename)


def layout(plan: ResolvedPlan, code: str, ctx: ProjectContext) -> Layout:
    """The task dir and steps for `code`; raises ProjectError for code the builder refuses."""
    name = plan.language.project
    if name is None:
        return plain(plan, code)
    return BUILDERS[name].build(plan, code, ctx)


def notes(plan: ResolvedPlan) -> list[str]:
    """Doctor lines about a builder's optional tools: found where, or what will not work."""
    import shutil

    name = plan.language.project
    if name is None:
        return []
    found = []
    for tool, needed_by, hint in BUILDERS[name].tools:
        where = shutil.which(tool, path=plan.path)
        found.append(f"{tool} {where}" if where else f"{tool} not found ({needed_by} need it: {hint})")
    return found


# --- java ------------------------------------------------------------------

_MAIN_METHOD = re.compile(r"\bstatic\s+void\s+main\s*\(")
_PUBLIC_CLASS = re.compile(r"^\s*public\s+(?:(?:final|abstract)\s+)*class\s+(\w+)", re.M)
_ANY_CLASS = re.compile(r"^\s*(?:(?:public|final|abstract)\s+)*class\s+(\w+)", re.M)
# Lines that must stay before the class a bare body is wrapped in.
_PREAMBLE = re.compile(r"^\s*(?:import\s+[\w.*\s]+;.*|//.*|)$")
_WRAP_OPEN = "public class Main { public static void main(String[] args) throws Exception { "
_WRAP_CLOSE = "\n}}\n"


def java(plan: ResolvedPlan, code: str, ctx: ProjectContext) -> Layout:
    """A program with a main method runs as written; anything else is taken as the body of main.

    javac insists a public class lives in a file of its name, so the file is
    named after the public class when there is one; the entry class is the
    public class, else Main, else the first class."""
    if _MAIN_METHOD.search(code):
        public = _PUBLIC_CLASS.search(code)
        classes = _ANY_CLASS.findall(code)
        entry = public.group(1) if public else ("Main" if "Main" in classes or not classes else classes[0])
        source = code
    else:
        entry, source = "Main", wrap_java_body(code)
    return Layout(source=source, suffix=".java", compile=plan.compile, run=plan.run,
                  filename=f"{entry}.java", values=(("main", entry),))


def wrap_java_body(code: str) -> str:
    """Wrap statements in a Main class. The wrapper opens on the first statement's own
    line (after the imports), so javac's line numbers match the agent's code."""
    lines = code.split("\n")
    first = next((i for i, line in enumerate(lines) if not _PREAMBLE.match(line)), len(lines))
    if first == len(lines):
        lines.append("")
    lines[first] = _WRAP_OPEN + lines[first]
    return "\n".join(lines) + _WRAP_CLOSE


# --- go ----------------------------------------------------------------------

_GO_PACKAGE = re.compile(r"^\s*package\s+\w+", re.M)
_GO_FUNC = re.compile(r"^func\s", re.M)
_GO_PREAMBLE = re.compile(r"^\s*(?:import\s+(?:\w+\s+|\.\s+|_\s+)?\"[^\"]*\".*|//.*|)$")


def go(plan: ResolvedPlan, code: str, ctx: ProjectContext) -> Layout:
    """Like java's: a file with its package clause runs as written; top-level funcs without
    one get `package main`; anything else is taken as the body of main."""
    if _GO_PACKAGE.search(code):
        source = code
    elif _GO_FUNC.search(code):
        source = "package main; " + code
    else:
        source = wrap_go_body(code)
    return Layout(source=source, suffix=".go", compile=plan.compile, run=plan.run, filename=plan.language.filename)


def wrap_go_body(code: str) -> str:
    """`package main` on the first line and `func main() {` on the first statement's own line
    (after the imports, single or in a block), so the compiler's line numbers match the code."""
    lines = code.split("\n")
    first, in_block = len(lines), False
    for i, line in enumerate(lines):
        stripped = line.strip()
        if in_block:
            in_block = stripped != ")"
        elif re.match(r"import\s*\($", stripped):
            in_block = True
        elif not _GO_PREAMBLE.match(line):
            first = i
            break
    if first == len(lines):
        lines.append("")
    lines[first] = "func main() { " + lines[first]
    lines[0] = "package main; " + lines[0]
    return "\n".join(lines) + "\n}\n"


BUILDERS: dict[str, Builder] = {
    "java": Builder(java),
    "go": Builder(go),
    "rust": Builder(lang_cargo.rust, tools=(
        ("cargo", "cargo-dep/cargo-path lines", "apt-get install cargo, or rustup"),)),
}
