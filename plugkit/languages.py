"""The language table: how to run code in each language, as rows of data. Standard library only.

Adding a language is adding a row; executor code never branches on a name.
"""

from __future__ import annotations

import functools
import os
import re
import sys
from dataclasses import dataclass

# "{python}" as a program means the interpreter the runner itself uses, so
# `python` works on machines with no python3 on PATH (a venv, pyenv, a zipapp).
PYTHON = "{python}"
PLACEHOLDERS = frozenset({"program", "file", "out", "dir"})
_PLACEHOLDER = re.compile(r"\{(\w+)\}")
_VERSION = re.compile(r"(\d+(?:\.\d+)+)")


class LanguageError(ValueError):
    """Base for errors whose message is written for the agent that asked."""


class UnknownLanguage(LanguageError):
    pass


class MissingProgram(LanguageError):
    pass


@dataclass(frozen=True)
class Runner:
    """One way to run a language; a Language tries its runners in order.

    Templates may use {program} (the resolved executable), {file} (the code
    file), {out} (the compile step's output) and {dir} (the task's temp dir).
    """

    program: str
    run: tuple[str, ...]
    compile: tuple[str, ...] | None = None
    min_version: tuple[int, ...] | None = None

    def __post_init__(self) -> None:
        if not self.run:
            raise ValueError(f"{self.program}: empty run template")
        for template in (self.run, self.compile or ()):
            for arg in template:
                unknown = set(_PLACEHOLDER.findall(arg)) - PLACEHOLDERS
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


@dataclass(frozen=True)
class ResolvedPlan:
    """Argv templates with {program} filled in; {file}/{out}/{dir} are left for render()."""

    language: Language
    compile: tuple[str, ...] | None
    run: tuple[str, ...]


LANGUAGES: tuple[Language, ...] = (
    Language(
        name="bash",
        aliases=("sh",),
        suffix=".sh",
        runners=(Runner("bash", ("{program}", "{file}")),),
        install_hint="apt-get install bash",
    ),
    Language(
        name="python",
        aliases=("py", "python3"),
        suffix=".py",
        # -u: agents read output while the task runs; a pipe would otherwise
        # hold prints back in an 8 KiB block buffer until exit.
        runners=(Runner(PYTHON, ("{program}", "-u", "{file}")),),
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


def lookup(name: str) -> Language:
    lang = _BY_NAME.get(name.strip().lower())
    if lang is None:
        known = ", ".join(
            f"{row.name} ({', '.join(row.aliases)})" if row.aliases else row.name
            for row in sorted(LANGUAGES, key=lambda row: row.name)
        )
        raise UnknownLanguage(f"unknown language {name!r}; known: {known}")
    return lang


def resolve(lang: Language, path: str | None = None) -> ResolvedPlan:
    """Pick the first runner whose program is on `path` (default $PATH) and new enough.

    May spawn `<program> --version` once per binary (cached by path and mtime)
    for runners with a min_version, so async callers should use a thread.
    """
    # Imported here: the client imports this table for lookup() and names()
    # on its hot path and should not pay for subprocess/shutil.
    import shutil

    tried: list[str] = []
    for runner in lang.runners:
        wanted = _python() if runner.program == PYTHON else runner.program
        # Never the interpreter's path: this message goes back over the wire.
        label = _python_label() if runner.program == PYTHON else runner.describe()
        exe = shutil.which(wanted, path=path)
        if exe is None:
            tried.append(f"{label} (not found)")
            continue
        if runner.min_version is not None:
            found = _version_of(exe)
            if found is None or found < runner.min_version:
                have = ".".join(map(str, found)) if found else "an unknown version"
                tried.append(f"{label} (found {have})")
                continue
        return ResolvedPlan(
            language=lang,
            compile=_fill_program(runner.compile, exe) if runner.compile else None,
            run=_fill_program(runner.run, exe),
        )
    raise MissingProgram(
        f"cannot run {lang.name}: tried {', '.join(tried)}\nto fix: {lang.install_hint}"
    )


def render(argv: tuple[str, ...], *, file: str, out: str, dir: str) -> list[str]:
    values = {"file": file, "out": out, "dir": dir}

    def fill(match: re.Match[str]) -> str:
        key = match.group(1)
        if key not in values:
            raise ValueError(f"placeholder {{{key}}} cannot be rendered here")
        return values[key]

    # One pass per argument, so a path that itself contains "{out}" is never re-expanded.
    return [_PLACEHOLDER.sub(fill, arg) for arg in argv]


def _fill_program(template: tuple[str, ...], exe: str) -> tuple[str, ...]:
    return tuple(arg.replace("{program}", exe) for arg in template)


def _python() -> str:
    return os.environ.get("PLUGKIT_PYTHON") or sys.executable


def _python_label() -> str:
    return "python (PLUGKIT_PYTHON)" if os.environ.get("PLUGKIT_PYTHON") else "python (the runner's own)"


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
