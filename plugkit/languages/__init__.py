"""The language table: how to run code in each language, as rows of data. Standard library only.

Adding a language is adding a row; executor code never branches on a name.
A workspace may add or override rows with .plugkit/lang/*.toml files (see
plugkit/languages/plugins.py); lookup() consults them first when given the workspace.
"""

from __future__ import annotations

import functools
import os
import re
from typing import Mapping

from plugkit.languages import caller

# Re-exported: callers have always taken these from here.
from plugkit.languages.model import (PLACEHOLDERS, Language, LanguageError, MissingProgram, PluginError, ProjectError, ResolvedPlan, Runner, UnknownLanguage, render)  # noqa: F401  (re-exported)

# "{python}" as a program means the interpreter the runner itself uses, so
# `python` works on machines with no python3 on PATH (a venv, pyenv, a zipapp).
PYTHON = "{python}"
from plugkit.languages.python_launch import LAUNCHER  # noqa: E402 (the python row's program)
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")
# rustup installs here and only login shells add it to PATH; a daemon started
# from an agent's hook often has the plain system PATH.
CARGO_BIN = "~/.cargo/bin"

LANGUAGES: tuple[Language, ...] = (
    Language(
        name="bash",
        aliases=("sh",),
        suffix=".sh",
        # The statically linked build when it sits beside the caller's bash (same source, same
        # version): no dynamic linking, a third of bash's start (~0.4 ms on every exec:bash).
        runners=(Runner("bash-static", ("{program}", "{file}"), twin_of="bash"),
                 Runner("bash", ("{program}", "{file}"))),
        install_hint="apt-get install bash",
    ),
    Language(
        name="python",
        aliases=("py", "python3"),
        suffix=".py",
        # -u: agents read output while the task runs; a pipe would otherwise
        # hold prints back in an 8 KiB block buffer until exit.
        # -c with a launcher (python_launch.py): imports from the cwd first, as `python -c` does,
        # and tracebacks that say <exec:python>, not the runner's temp path.
        runners=(Runner(PYTHON, ("{program}", "-u", "-c", LAUNCHER, "{file}")),),
        install_hint="apt-get install python3, or set PLUGKIT_PYTHON to an interpreter",
    ),
    Language(
        name="node",
        aliases=("nodejs", "js"),
        suffix=".js",
        runners=(Runner("node", ("{program}", "{file}")),),
        install_hint="apt-get install nodejs",
    ),
    Language(
        name="typescript",
        aliases=("ts",),
        suffix=".ts",
        runners=(
            Runner("deno", ("{program}", "run", "-A", "{file}")),
            Runner("bun", ("{program}", "run", "{file}")),
            Runner("tsx", ("{program}", "{file}")),
            # Type stripping landed unflagged-but-experimental in 22.6; older
            # nodes reject the flag outright.
            Runner(
                "node",
                ("{program}", "--experimental-strip-types", "--no-warnings", "{file}"),
                min_version=(22, 6),
            ),
        ),
        install_hint=(
            "install deno (curl -fsSL https://deno.land/install.sh | sh), "
            "bun (curl -fsSL https://bun.sh/install | bash), tsx (npm install -g tsx) or nodejs >= 22.6"
        ),
    ),
    Language(
        name="deno",
        aliases=(),
        suffix=".ts",
        runners=(Runner("deno", ("{program}", "run", "-A", "{file}")),),
        install_hint="curl -fsSL https://deno.land/install.sh | sh (deno is not packaged by Debian)",
    ),
    Language(
        name="bun",
        aliases=(),
        suffix=".ts",
        runners=(Runner("bun", ("{program}", "run", "{file}")),),
        install_hint="curl -fsSL https://bun.sh/install | bash (bun is not packaged by Debian)",
    ),
    Language(
        name="go",
        aliases=("golang",),
        suffix=".go",
        # build + run rather than `go run`: a compile failure is then told apart
        # (reason compile_error), and the task's root is the program itself, so
        # its exit code and signals are its own (`go run` reports any failure as 1).
        # A lone main.go outside any module builds as command-line-arguments.
        runners=(Runner("go", ("{out}",), compile=("{program}", "build", "-o", "{out}", "{file}")),),
        install_hint="apt-get install golang",
        filename="main.go",
        project="go",  # wraps a bare body in func main, as java's is wrapped in Main
    ),
    Language(
        name="c",
        aliases=(),
        suffix=".c",
        # -lm after the file: snippets reach for math.h, and the linker only
        # resolves libraries named after the objects that need them.
        runners=tuple(Runner(cc, ("{out}",), compile=("{program}", "-o", "{out}", "{file}", "-lm"))
                      for cc in ("gcc", "clang", "cc")),
        install_hint="apt-get install gcc",
    ),
    Language(
        name="cpp",
        aliases=("c++", "cxx"),
        suffix=".cpp",
        runners=tuple(Runner(cxx, ("{out}",), compile=("{program}", "-o", "{out}", "{file}"))
                      for cxx in ("g++", "clang++", "c++")),
        install_hint="apt-get install g++",
    ),
    Language(
        name="java",
        aliases=(),
        suffix=".java",
        runners=(Runner(
            "javac",
            ("java", "-cp", "{dir}", "{main}"),
            # javac is itself a JVM program: for a snippet, C1 only and the serial GC
            # start it ~30% faster. The program's own JVM keeps the full JIT.
            compile=("{program}", "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", "-d", "{dir}", "{file}"),
            needs=("java",),
        ),),
        install_hint="apt-get install default-jdk",
        project="java",  # wraps a bare body in a Main class; picks the entry class
    ),
    Language(
        name="rust",
        aliases=("rs",),
        suffix=".rs",
        runners=(Runner("rustc", ("{out}",), compile=("{program}", "--edition", "2021", "-o", "{out}", "{file}"),
                        search=(CARGO_BIN,)),),
        install_hint="apt-get install rustc cargo, or rustup (https://rustup.rs)",
        filename="main.rs",
        project="rust",  # `// cargo-dep:` / `// cargo-path:` lines switch to a cargo project
    ),
    Language(
        name="powershell",
        aliases=("pwsh", "ps1"),
        suffix=".ps1",
        runners=(Runner("pwsh", ("{program}", "-NoLogo", "-NoProfile", "-NonInteractive", "-File", "{file}")),),
        install_hint=("pwsh is not packaged by Debian: add Microsoft's apt repository "
                      "(https://learn.microsoft.com/powershell/scripting/install/install-debian) "
                      "and apt-get install powershell"),
    ),
)


def _index(table: tuple[Language, ...]) -> dict[str, Language]:
    index: dict[str, Language] = {}
    for lang in table:
        for key in (lang.name, *lang.aliases):
            key = key.lower()
            if key in index:
                raise ValueError(f"language name {key!r} is used twice")
            index[key] = lang
    return index


_BY_NAME = _index(LANGUAGES)


def names() -> list[str]:
    return sorted(lang.name for lang in LANGUAGES)


def lookup(name: str, workspace: str | None = None, root: str | None = "") -> Language:
    """The row for `name` (or an alias), any case.

    With `workspace` (a session cwd), the .plugkit/lang plugins of its nearest
    ancestor holding .plugkit/ come first, name by name: a plugin named python
    overrides `python` but not `py` unless it lists that alias too. A broken
    plugin file fails only the names it claims, with the file and the problem.
    `root`: that ancestor when the caller has found it already (None: there is none), "" to look.
    """
    key = name.strip().lower()
    plugins = None
    if workspace is not None:
        # Imported here: the client's hot path only needs names().
        from plugkit.languages import plugins as lang_plugins

        plugins = lang_plugins.plugins_for(workspace) if root == "" else lang_plugins.plugins_at(root)
        if plugins is not None:
            row = plugins.index.get(key)
            if row is not None:
                return row
            problem = plugins.problem_for(key)
            if problem is not None:
                raise PluginError(f"cannot use {key!r}: {problem}")
    lang = _BY_NAME.get(key)
    if lang is not None:
        return lang
    rows = sorted(LANGUAGES + (plugins.rows if plugins else ()), key=lambda row: row.name)
    known = ", ".join(
        f"{row.name} ({', '.join(row.aliases)})" if row.aliases else row.name for row in rows)
    import difflib  # only on a miss

    words = [w for row in rows for w in (row.name, *row.aliases)]
    close = difflib.get_close_matches(key, words, n=1, cutoff=0.75)
    message = f"unknown language {name!r}" + (f" (did you mean {close[0]}?)" if close else "") + f"; known: {known}"
    if plugins is not None and plugins.problems:
        message += "; invalid plugin files: " + "; ".join(map(str, plugins.problems))
    raise UnknownLanguage(message)


def resolve(lang: Language, path: str | None = None, python: str | None = None,
            environ: Mapping[str, str] | None = None) -> ResolvedPlan:
    """Pick the first runner whose programs are on `path` (default the caller's PATH, from
    `environ`, else $PATH; then the runner's `search` dirs) and new enough. `python` is the
    interpreter PLUGKIT_PYTHON names (the runner's config passes it); `{python}` is chosen
    by plugkit/languages/caller.py (the caller's venv or PATH when `environ` is given).

    May spawn `<program> --version` once per binary (cached by path and mtime)
    for runners with a min_version, so async callers should use a thread.
    """
    tried: list[str] = []
    for runner in lang.runners:
        search = path if path is not None else search_path(runner.search, environ)
        choices = caller.python_choices(python, environ) if runner.program == PYTHON else [(runner.program, "")]
        exe, source = next(((e, why) for e, why in ((_which(w, search), why) for w, why in choices) if e),
                           (None, ""))
        # Never the interpreter's path: this message goes back over the wire.
        label = (f"python ({', '.join(why for _w, why in choices)})" if runner.program == PYTHON
                 else runner.describe())
        if exe is None:
            tried.append(f"{label} (not found)")
            continue
        if runner.twin_of is not None and not _beside(exe, _which(runner.twin_of, search)):
            continue  # not the twin of the caller's program: the row's next runner is that one
        if runner.min_version is not None:
            found = _version_of(exe)
            if found is None or found < runner.min_version:
                have = ".".join(map(str, found)) if found else "an unknown version"
                tried.append(f"{label} (found {have})")
                continue
        tools = {need: _which(need, search) for need in runner.needs}
        missing = [need for need, where in tools.items() if where is None]
        if missing:
            tried.append(f"{label} (found, but {', '.join(missing)} not found)")
            continue
        return ResolvedPlan(
            language=lang,
            compile=_fill_programs(runner.compile, exe, tools) if runner.compile else None,
            run=_fill_programs(runner.run, exe, tools),
            path=search,
            source=source,
        )
    raise MissingProgram(
        f"cannot run {lang.name}: tried {', '.join(tried)}\nto fix: {lang.install_hint}"
    )


def _beside(exe: str, twin: str | None) -> bool:
    return twin is not None and os.path.realpath(os.path.dirname(exe)) == os.path.realpath(os.path.dirname(twin))


# (program, search path) -> (where it was found, when that stops being trusted)
_FOUND: dict[tuple[str, str], tuple[str, float]] = {}
FOUND_TTL_S = 5.0


def _which(program: str, search: str | None) -> str | None:
    """shutil.which, remembered for a few seconds: a PATH walk is ~20 stat calls on
    every exec. A program installed meanwhile is seen within FOUND_TTL_S; one removed
    is noticed at once (the cached file is checked)."""
    import shutil  # not at module level: the client's hot path imports this table
    import time

    key = (program, search if search is not None else os.environ.get("PATH", os.defpath))
    hit = _FOUND.get(key)
    now = time.monotonic()
    if hit is not None and hit[1] > now and os.access(hit[0], os.X_OK):
        return hit[0]
    exe = shutil.which(program, path=search)
    if exe is not None:
        _FOUND[key] = (exe, now + FOUND_TTL_S)
    return exe


def search_path(extra: tuple[str, ...] = (), environ: Mapping[str, str] | None = None) -> str | None:
    """The caller's PATH (`environ`'s, else $PATH) followed by `extra` dirs (~ expanded); None
    (meaning plain $PATH) when there are neither."""
    if not extra and environ is None:
        return None
    dirs = [caller.base_path(environ)] + [os.path.expanduser(d) for d in extra]
    return os.pathsep.join(dirs)


def availability(workspace: str | None = None, python: str | None = None,
                 environ: Mapping[str, str] | None = None) -> list[tuple[str, bool, str]]:
    """For `plugkit doctor`: (name, usable, detail) per language, plugins included when
    `workspace` is given, programs found as for a caller with `environ`. detail is the
    program(s) found (and where from, for python), or why not and how to fix it."""
    from plugkit.languages import projects as lang_projects

    rows = {lang.name: lang for lang in LANGUAGES}
    if workspace is not None:
        from plugkit.languages import plugins as lang_plugins

        plugins = lang_plugins.plugins_for(workspace)
        rows.update({row.name: row for row in (plugins.rows if plugins else ())})
    report = []
    for name in sorted(rows):
        try:
            lang = lookup(name, workspace)
            plan = resolve(lang, python=python, environ=environ)
        except LanguageError as exc:
            report.append((name, False, "; ".join(str(exc).split("\n"))))
            continue
        programs = dict.fromkeys(arg for arg in (*(plan.compile or ())[:1], plan.run[0]) if "{" not in arg)
        detail = ", ".join(programs) or "ready"
        if plan.source:
            detail += f" (from {plan.source})"
        if lang.origin:
            detail += f" (from {lang.origin})"
        notes = lang_projects.notes(plan)
        report.append((name, True, "; ".join([detail, *notes])))
    return report


def _fill_programs(template: tuple[str, ...], exe: str, tools: dict[str, str]) -> tuple[str, ...]:
    # {program} anywhere; a `needs` name only as a whole argument (java, not "-Djava=x").
    return tuple(tools[arg] if arg in tools else arg.replace("{program}", exe) for arg in template)


def _version_of(exe: str) -> tuple[int, ...] | None:
    try:
        st = os.stat(exe)
    except OSError:
        return None
    # Keyed on the file's identity too, so upgrading the program in place
    # (same path, new binary) triggers a fresh probe.
    return _probe_version(os.path.realpath(exe), st.st_mtime_ns, st.st_size, st.st_ino)


@functools.lru_cache(maxsize=64)
def _probe_version(exe: str, mtime_ns: int, size: int, inode: int) -> tuple[int, ...] | None:
    import subprocess

    try:
        proc = subprocess.run(
            [exe, "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _VERSION.search(proc.stdout or proc.stderr)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))
