"""Project language plugins: `.plugkit/lang/*.toml` files that add or override language rows.

The workspace is plugkit.workspace.find_root(session cwd), the same one the gates and memory use
(`.plugkit/lang/` is itself a marker); / and $HOME are never one, so their files are never read.
Each file defines one language, a row of the same shape as the built-in table:

    # .plugkit/lang/awk.toml
    name = "awk"                       # default: the file's stem
    aliases = ["gawk"]                 # optional
    suffix = ".awk"                    # optional; the code file's suffix
    run = ["awk", "-f", "{file}"]      # or one string, split like a shell would
    compile = ["..."]                  # optional; runs first, a failure is a compile_error
    program = "awk"                    # optional: default run's (or compile's) first word;
                                       # found on PATH, or relative to the workspace if it has a '/'
    install_hint = "apt-get install gawk"   # optional; said when the program is missing
    filename = "main.awk"              # optional; a fixed name for the code file

Placeholders: {program}, {file}, {out} (the compile step's output), {dir} (the task's temp dir).

Trust: a plugin runs whatever command it names, with the runner's privileges,
whenever an agent execs its language. That is by design: the files live in the
workspace and the workspace owner wrote them, like a Makefile or a package.json
script. plugkit does not sandbox them.

Files are read on every lookup (a listdir and a stat per file), parsed again
only when their mtime, size or inode change: adding or editing a plugin takes
effect on the next exec, with no runner restart. A broken file is reported (file
name and what is wrong) by check_plugins() and by an exec of a name it claims;
every other language keeps working.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from plugkit import confined
from plugkit.languages.model import PLACEHOLDERS, Language, Runner, placeholders
from plugkit.workspace import STATE_DIR, root_or_none

LANG_DIR = os.path.join(STATE_DIR, "lang")
MAX_BYTES = 64 * 1024
KEYS = ("name", "aliases", "suffix", "run", "compile", "program", "install_hint", "filename")
# {main} is filled by a project builder, which plugin rows cannot name.
PLUGIN_PLACEHOLDERS = PLACEHOLDERS - {"main"}
_NAME = re.compile(r"^[a-z0-9][a-z0-9_+#.-]{0,63}$")
_CACHE_MAX = 256


@dataclass(frozen=True)
class Problem:
    file: str                  # relative to the workspace, e.g. .plugkit/lang/awk.toml
    message: str
    claims: frozenset[str]     # names the file meant to define (its stem, its name and aliases)

    def __str__(self) -> str:
        return f"{self.file}: {self.message}"


@dataclass(frozen=True)
class PluginSet:
    workspace: str
    rows: tuple[Language, ...]
    problems: tuple[Problem, ...]
    index: dict[str, Language]

    def problem_for(self, key: str) -> Problem | None:
        return next((p for p in self.problems if key in p.claims), None)


# path -> ((mtime_ns, size, inode), Language | Problem). Per process: the runner
# re-reads a file only when it changed.
_parsed: dict[str, tuple[tuple[int, int, int], Language | Problem]] = {}


def plugins_for(cwd: str) -> PluginSet | None:
    """The workspace's plugins as they are on disk now; None when it has no .plugkit/lang."""
    return plugins_at(root_or_none(cwd))  # the gates' and memory's workspace too; none in / or $HOME


def plugins_at(workspace: str | None) -> PluginSet | None:
    """plugins_for, given the workspace root (root_or_none of the cwd) already found."""
    if workspace is None:
        return None
    lang_dir = os.path.join(workspace, LANG_DIR)
    try:
        entries = sorted(e for e in os.listdir(lang_dir) if e.endswith(".toml") and not e.startswith("."))
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        problem = Problem(LANG_DIR, f"cannot be listed: {exc.strerror}", frozenset())
        return PluginSet(workspace, (), (problem,), {})
    rows: list[Language] = []
    problems: list[Problem] = []
    index: dict[str, Language] = {}
    for entry in entries:
        parsed = _load(workspace, entry)
        if isinstance(parsed, Problem):
            problems.append(parsed)
            continue
        keys = [k.lower() for k in (parsed.name, *parsed.aliases)]
        taken = next((k for k in keys if k in index), None)
        if taken is not None:
            # Files are read in name order: the first claim wins, the later file is the mistake.
            problems.append(Problem(parsed.origin or entry, f"name {taken!r} is already defined by "
                                    f"{index[taken].origin}", frozenset(keys)))
            continue
        rows.append(parsed)
        index.update(dict.fromkeys(keys, parsed))
    return PluginSet(workspace, tuple(rows), tuple(problems), index)


def check_plugins(workspace: str) -> list[str]:
    """For `plugkit doctor`: one line per invalid plugin file ('<file>: <what is wrong>'); [] when all
    are valid or there are none. `workspace` may be any dir inside the workspace."""
    plugins = plugins_for(workspace)
    return [str(p) for p in plugins.problems] if plugins else []


def _load(workspace: str, entry: str) -> Language | Problem:
    path = os.path.join(workspace, LANG_DIR, entry)
    rel = os.path.join(LANG_DIR, entry)
    stem = entry[: -len(".toml")].lower()
    try:
        st = os.lstat(path)  # the file itself: it is read only as a regular file, never through a link
    except OSError as exc:
        return Problem(rel, f"cannot be read: {exc.strerror}", frozenset({stem}))
    stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
    cached = _parsed.get(path)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    result = _parse(workspace, path, rel, stem, st.st_size)
    if len(_parsed) >= _CACHE_MAX:
        _parsed.clear()  # a crude bound; re-parsing a handful of small files is cheap
    _parsed[path] = (stamp, result)
    return result


def _parse(workspace: str, path: str, rel: str, stem: str, size: int) -> Language | Problem:
    import tomllib

    claims = {stem}

    def problem(message: str) -> Problem:
        return Problem(rel, message, frozenset(claims))

    if size > MAX_BYTES:
        return problem(f"is {size} bytes; a language file is at most {MAX_BYTES}")
    try:
        with confined.open_beneath(workspace, path) as fh:  # a FIFO or a link out: not read
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        return problem(f"is not valid TOML: {exc}")
    except (OSError, UnicodeDecodeError) as exc:
        return problem(f"cannot be read: {getattr(exc, 'strerror', None) or exc}")
    # Claims first, so an exec of the name this file meant to define reports the file.
    name, aliases = data.get("name", stem), data.get("aliases", [])
    if isinstance(name, str):
        claims.add(name.strip().lower())
    if isinstance(aliases, list):
        claims.update(a.strip().lower() for a in aliases if isinstance(a, str))
    try:
        return _row(workspace, rel, data)
    except ValueError as exc:
        return problem(str(exc))


def _row(workspace: str, rel: str, data: dict) -> Language:
    unknown = sorted(set(data) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown key(s) {', '.join(unknown)}; known: {', '.join(KEYS)}")
    name = _string(data, "name", default=os.path.basename(rel)[: -len(".toml")]).strip().lower()
    aliases = data.get("aliases", [])
    if not isinstance(aliases, list) or not all(isinstance(a, str) for a in aliases):
        raise ValueError("aliases: expected a list of strings")
    aliases = [a.strip().lower() for a in aliases]
    for key in (name, *aliases):
        if not _NAME.match(key):
            raise ValueError(f"name {key!r}: use lowercase letters, digits and _+#.- (at most 64)")
    suffix = _string(data, "suffix", default="")
    if suffix and (not suffix.startswith(".") or "/" in suffix):
        raise ValueError(f"suffix {suffix!r}: expected a file suffix such as '.awk'")
    filename = data.get("filename")
    if filename is not None and (not isinstance(filename, str) or not filename or "/" in filename
                                 or filename in (".", "..")):
        raise ValueError("filename: expected a plain file name such as 'main.awk'")
    run = _template(data, "run")
    if run is None:
        raise ValueError("run: missing; give the command, e.g. run = [\"awk\", \"-f\", \"{file}\"]")
    compile_ = _template(data, "compile")
    program = _string(data, "program", default="") or _first_literal(compile_, run)
    if not program:
        raise ValueError("program: missing; name the executable, e.g. program = \"awk\"")
    if not any(program == arg or "{program}" in arg for arg in (*run, *(compile_ or ()))):
        raise ValueError(f"program {program!r} is not used by run or compile (write it, or {{program}})")
    # The named program becomes {program}, so it is checked and found like a built-in's.
    run, compile_ = _as_placeholder(run, program), _as_placeholder(compile_, program)
    if "/" in program:
        program = os.path.normpath(os.path.join(workspace, os.path.expanduser(program)))
    hint = _string(data, "install_hint", default=f"install {os.path.basename(program)}, or fix {rel}")
    return Language(name=name, aliases=tuple(aliases), suffix=suffix,
                    runners=(Runner(program, run, compile=compile_),),
                    install_hint=" ".join(hint.split()), filename=filename, origin=rel)


def _string(data: dict, key: str, default: str) -> str:
    value = data.get(key, default)
    if not isinstance(value, str):
        raise ValueError(f"{key}: expected a string, got {type(value).__name__}")
    return value


def _template(data: dict, key: str) -> tuple[str, ...] | None:
    import shlex

    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = shlex.split(value)
        except ValueError as exc:
            raise ValueError(f"{key}: cannot split {value!r}: {exc}") from None
    if not isinstance(value, list) or not value or not all(isinstance(a, str) and a for a in value):
        raise ValueError(f"{key}: expected a non-empty list of non-empty strings, or one string")
    for arg in value:
        unknown = placeholders(arg) - PLUGIN_PLACEHOLDERS
        if unknown:
            known = ", ".join(f"{{{p}}}" for p in sorted(PLUGIN_PLACEHOLDERS))
            raise ValueError(f"{key}: unknown placeholder {{{sorted(unknown)[0]}}} in {arg!r}; known: {known}")
    if "{program}" not in value[0] and placeholders(value[0]) - {"out"}:
        raise ValueError(f"{key}: the command must start with a program or {{out}}, not {value[0]!r}")
    return tuple(value)


def _first_literal(*templates: tuple[str, ...] | None) -> str:
    for template in templates:
        if template and not placeholders(template[0]):
            return template[0]
    return ""


def _as_placeholder(template: tuple[str, ...] | None, program: str) -> tuple[str, ...] | None:
    if template is None:
        return None
    return tuple("{program}" if arg == program else arg for arg in template)
