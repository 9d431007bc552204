"""The shapes of the language table: Runner and Language rows, a resolved plan, a project
Layout, argv rendering, and the errors whose messages go back to the agent. Standard library only.

Kept apart from the rows (plugkit/languages.py) so the plugin loader and the
project builders can share the shapes without importing the table or each other.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from collections.abc import Callable  # not typing: ~5 ms the client need not pay

# {program}: the resolved executable; {file}: the code file; {out}: what the
# compile step produces; {dir}: the task's temp dir; {main}: the entry point a
# project builder chose (java's main class), so only rows with a builder use it.
PLACEHOLDERS = frozenset({"program", "file", "out", "dir", "main"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")


class LanguageError(ValueError):
    """Base for errors whose message is written for the agent that asked."""


class UnknownLanguage(LanguageError):
    pass


class MissingProgram(LanguageError):
    pass


class PluginError(LanguageError):
    """A workspace's .plugkit/lang file that defines the asked-for name is invalid."""


class ProjectError(LanguageError):
    """The code asks its project builder for something it cannot build (a bad cargo-dep line)."""


def placeholders(arg: str) -> set[str]:
    return set(_PLACEHOLDER.findall(arg))


@dataclass(frozen=True)
class Runner:
    """One way to run a language; a Language tries its runners in order.

    Templates use the PLACEHOLDERS above. `needs` names further programs the
    templates spell literally (java beside javac): resolve() checks they exist
    and puts their full path in. `search` lists dirs tried after $PATH, for
    toolchains whose installers do not put themselves on a daemon's PATH
    (rustup's ~/.cargo/bin is only added by login shells). `twin_of`: this program is
    another build of that one, taken only where the search finds both in one directory
    (Debian's bash-static beside the bash the caller's PATH picks, never a bash of its own).
    """

    program: str
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    min_version: tuple[int, ...] | None = None
    needs: tuple[str, ...] = ()
    search: tuple[str, ...] = ()
    twin_of: str | None = None

    def __post_init__(self) -> None:
        if not self.run:
            raise ValueError(f"{self.program}: empty run template")
        if self.compile is not None and not self.compile:
            raise ValueError(f"{self.program}: empty compile template (leave it out instead)")
        for template in (self.run, self.compile or ()):
            for arg in template:
                unknown = placeholders(arg) - PLACEHOLDERS
                if unknown:
                    raise ValueError(f"{self.program}: unknown placeholder(s) {sorted(unknown)} in {arg!r}")
        if self.compile is None and any("{out}" in arg for arg in self.run):
            raise ValueError(f"{self.program}: run uses {{out}} but there is no compile step")

    def describe(self) -> str:
        if self.min_version:
            return f"{self.program} >= {'.'.join(map(str, self.min_version))}"
        return self.program


@dataclass(frozen=True)
class Language:
    name: str
    aliases: tuple[str, ...]
    suffix: str
    runners: tuple[Runner, ...]
    install_hint: str
    # The code file's fixed name inside the task dir, for toolchains that read
    # meaning into it: rustc names the crate after it (a '-' is refused), and
    # `go build` skips files named *_test.go or *_<os>.go, which a random name can hit.
    filename: str | None = None
    # A builder in plugkit.languages.projects.BUILDERS that may rewrite the code or
    # lay out a whole project (java's Main wrapper, rust's cargo project).
    project: str | None = None
    # The plugin file that defined this row (relative to its workspace); None for built-ins.
    origin: str | None = None


@dataclass(frozen=True)
class ResolvedPlan:
    """Argv templates with {program} (and `needs`) filled in; the rest is left for render().

    `path` is the search path the programs were found on, so a project builder
    looks for its own tools (cargo) where the row's compiler was found. Two plans
    with the same argv are the same plan wherever the search looked, hence compare=False."""

    language: Language
    compile: tuple[str, ...] | None
    run: tuple[str, ...]
    path: str | None = field(default=None, compare=False)
    # Where the run program came from when more than one place could give it ("$VIRTUAL_ENV",
    # "PATH", "PLUGKIT_PYTHON", "the runner's own"): what `exec --explain` and doctor say.
    source: str = field(default="", compare=False)


@dataclass(frozen=True)
class ProjectContext:
    home: str   # PLUGKIT_HOME: where build caches live
    cwd: str    # the session cwd: relative paths in the code's directives start here


@dataclass(frozen=True)
class Layout:
    """What a task's temp dir holds and how its steps run.

    `filename` may be a relative path ("src/main.rs"); None means a temp name
    with the row's suffix. `values` fill extra placeholders ({main}, {target}).
    `leftovers` are glob patterns outside the task dir that the task's build
    leaves behind and that go when the task ends (whatever way it ends).
    """

    source: str
    suffix: str
    compile: tuple[str, ...] | None
    run: tuple[str, ...]
    filename: str | None = None
    files: tuple[tuple[str, str], ...] = ()
    values: tuple[tuple[str, str], ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    compile_hint: str | None = None
    leftovers: tuple[str, ...] = ()

    @property
    def in_dir(self) -> bool:
        # A lone interpreted file needs no dir: mkstemp + unlink is a fraction
        # of mkdtemp + rmtree on the hot path of every exec.
        return bool(self.compile or self.filename or self.files)


@dataclass(frozen=True)
class Builder:
    build: Callable[[ResolvedPlan, str, ProjectContext], Layout]
    # Optional programs the builder may call, for doctor: (name, what needs it, how to get it).
    tools: tuple[tuple[str, str, str], ...] = ()


def render(argv: tuple[str, ...], *, file: str, out: str, dir: str, **extra: str) -> list[str]:
    values = {"file": file, "out": out, "dir": dir, **extra}

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ValueError(f"placeholder {{{key}}} cannot be rendered here")
        return values[key]

    # One pass per argument, so a path that itself contains "{out}" is never re-expanded.
    return [_PLACEHOLDER.sub(fill, arg) if "{" in arg else arg for arg in argv]
