"""A project digest for an agent's first minute (at most MAX_CHARS characters): languages and sizes, entry
points, how to build/test/run it (read from the manifests and CI files, never guessed), the
top-level layout, and the hot files by recent git churn. Cached by the stamps of its inputs.
Every file is read confined to the root (runner/system/confined.py): a manifest linked to a
secret, or a FIFO in its place, gives nothing."""

import collections
import json
import os
import re
import tomllib

from runner.core.search import chunks, files
from plugkit import confined
from runner.system import git as system_git

MAX_CHARS = 3600  # about 900 tokens at the most; a small project's is far shorter
INPUTS = ("pyproject.toml", "package.json", "Makefile", "Cargo.toml", "go.mod", "setup.py", ".github/workflows",
          ".gitlab-ci.yml", ".ci")
RUN_LINE = re.compile(r"^\s*(?:-\s*)?run:\s*(.+)$")
MAKE_TARGET = re.compile(r"^([A-Za-z][\w.-]*):(?!=)")


def stamp(root: str, head: str | None) -> str:
    """Changes when an input of the digest does: the manifests' mtimes and git's HEAD."""
    parts = [head or ""]
    for name in INPUTS:
        try:
            parts.append(f"{name}:{os.lstat(os.path.join(root, name)).st_mtime_ns}")
        except OSError:
            pass
    return "|".join(parts)


def build(root: str, paths: list[str]) -> str:
    sections = [("languages", _languages(root, paths)), ("entry points", _entry_points(root, paths)),
                ("build/test/run", _commands(root)), ("layout", _layout(paths)), ("hot files (90 days)", _hot(root))]
    out = [f"project digest of {root}"]
    for title, lines in sections:
        if lines:
            out.append(f"{title}:")
            out += [f"  {line}" for line in lines]
    text = "\n".join(out)
    more = "\n  ..."  # inside the cap, not past it
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS - len(more)].rsplit("\n", 1)[0] + more


def _languages(root: str, paths: list[str]) -> list[str]:
    count: collections.Counter = collections.Counter()
    size: collections.Counter = collections.Counter()
    for p in paths:
        lang = chunks.language(p)
        if lang and lang not in ("markdown", "json", "yaml", "toml"):
            count[lang] += 1
            try:
                size[lang] += os.lstat(os.path.join(root, p)).st_size
            except OSError:
                pass
    return [f"{lang}: {n} files, {size[lang] // 1024} KiB" for lang, n in count.most_common(6)]


def _entry_points(root: str, paths: list[str]) -> list[str]:
    out = []
    py = _toml(root, "pyproject.toml")
    out += [f"{name} = {target} (pyproject scripts)" for name, target in py.get("project", {}).get("scripts", {}).items()]
    pkg = _json(root, "package.json")
    bins = pkg.get("bin", {})
    out += [f"{k} = {v} (package.json bin)" for k, v in (bins.items() if isinstance(bins, dict) else [])]
    if isinstance(pkg.get("main"), str):
        out.append(f"{pkg['main']} (package.json main)")
    out += [f"{p}" for p in paths if p.endswith("__main__.py") and files.kind(p)[0] == "source"][:5]
    out += [p for p in paths if p in ("main.go", "src/main.rs", "cmd/main.go", "manage.py")]
    return out[:10]


def _commands(root: str) -> list[str]:
    out = []
    pkg = _json(root, "package.json")
    out += [f"npm run {k}: {v}"[:140] for k, v in list(pkg.get("scripts", {}).items())[:6]]
    if (make := _lines(root, "Makefile")) is not None:
        targets = [m.group(1) for line in make if (m := MAKE_TARGET.match(line)) and m.group(1) != ".PHONY"]
        out.append("make " + " | ".join(dict.fromkeys(targets[:10])))
    if confined.is_file_in(root, "Cargo.toml"):
        out.append("cargo build / cargo test")
    if confined.is_file_in(root, "go.mod"):
        out.append("go build ./... / go test ./...")
    py = _toml(root, "pyproject.toml")
    if py:
        tools = py.get("tool", {})
        extras = py.get("project", {}).get("optional-dependencies", {})
        if "test" in extras:
            out.append("pip install -e '.[test]'")
        if "pytest" in tools or any("pytest" in d for ds in extras.values() for d in ds):
            out.append("pytest" + (f" (testpaths {tools['pytest']['ini_options'].get('testpaths')})"
                                   if "ini_options" in tools.get("pytest", {}) else ""))
    out += [f"CI: {line}" for line in _ci_runs(root)]
    return out[:14]


def _ci_runs(root: str) -> list[str]:
    runs: list[str] = []
    for name in confined.list_in(root, ".github/workflows"):
        lines = _lines(root, f".github/workflows/{name}") or []
        runs += [m.group(1).strip()[:120] for line in lines if (m := RUN_LINE.match(line)) and m.group(1).strip() != "|"]
    gitlab = _lines(root, ".gitlab-ci.yml") or []
    runs += [line.strip()[2:].strip()[:120] for line in gitlab if line.strip().startswith("- ")][:6]
    for name in confined.list_in(root, ".ci"):  # CI scripts: what they run
        lines = _lines(root, f".ci/{name}") or []
        body = [ln.strip() for ln in lines if ln.strip() and not ln.lstrip().startswith(("#", "set ", "cd "))]
        runs += [f".ci/{name}: {ln[:100]}" for ln in body[:2]]
    return list(dict.fromkeys(runs))[:6]


def _layout(paths: list[str]) -> list[str]:
    top: collections.Counter = collections.Counter(p.split("/")[0] + ("/" if "/" in p else "") for p in paths)
    dirs = [f"{d} ({n} files)" for d, n in sorted(top.items()) if d.endswith("/")]
    loose = [d for d in sorted(top) if not d.endswith("/")]
    return dirs[:15] + ([", ".join(loose[:12])] if loose else [])


def _hot(root: str) -> list[str]:
    try:
        out = system_git.run_sync(root, "log", "--since=90.days", "--format=", "--name-only", "-n", "500",
                                  timeout=20).out.decode(errors="replace")
    except (OSError, system_git.GitTimeout):
        return []
    churn = collections.Counter(p for p in out.splitlines() if p.strip())
    return [f"{p} ({n} commits)" for p, n in churn.most_common(8) if os.path.lexists(os.path.join(root, p))]


def _text(root: str, rel: str) -> str | None:
    data = confined.read_in(root, rel, files.MAX_BYTES)
    return None if data is None else data.decode("utf-8", "replace")


def _lines(root: str, rel: str) -> list[str] | None:
    text = _text(root, rel)
    return None if text is None else text.splitlines()


def _toml(root: str, rel: str) -> dict:
    try:
        return tomllib.loads(_text(root, rel) or "")
    except tomllib.TOMLDecodeError:
        return {}


def _json(root: str, rel: str) -> dict:
    try:
        data = json.loads(_text(root, rel) or "{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}
