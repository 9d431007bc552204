"""The rust project builder: plain rustc, or a generated cargo project when the code names
dependencies. Standard library only; pure apart from a stat per cargo-path.

    // cargo-dep: rand = "0.8"                  any value cargo accepts in [dependencies]
    // cargo-path: greet = "../greet"           a local crate, relative to the session cwd

Cargo runs offline (--offline, CARGO_NET_OFFLINE): a runner must not reach the
network on an agent's behalf, so cargo-dep crates must already be in cargo's
cache; a failed build says so. The target dir is cached per dependency set under
$PLUGKIT_HOME/cache/cargo/<hash>, so the second build with the same
dependencies compiles only the snippet.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import re
import secrets
import shutil

from plugkit.languages.model import (Layout, MissingProgram, ProjectContext, ProjectError, ResolvedPlan)

_DIRECTIVE = re.compile(r"^[ \t]*//[ \t]*cargo-(dep|path)[ \t]*:(.*)$", re.M)
_CRATE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
OFFLINE_HINT = (
    "cargo runs offline here (--offline): crates named by cargo-dep lines must already be in "
    "cargo's cache (~/.cargo/registry). Fetch them once where the network is reachable "
    "(`cargo fetch` in any project that depends on them), or use `// cargo-path: name = \"path\"` "
    "to a local crate")
CARGO_HINT = "apt-get install cargo, or rustup (https://rustup.rs)"


def rust(plan: ResolvedPlan, code: str, ctx: ProjectContext) -> Layout:
    deps = dependencies(code, ctx.cwd)
    if not deps:
        return Layout(source=code, suffix=".rs", compile=plan.compile, run=plan.run,
                      filename=plan.language.filename)
    cargo = shutil.which("cargo", path=plan.path)
    if cargo is None:
        raise MissingProgram(f"cannot build this rust code: its cargo-dep/cargo-path lines need cargo "
                             f"(not found)\nto fix: {CARGO_HINT}")
    target = os.path.join(ctx.home, "cache", "cargo", dep_set_key(deps))
    # A fresh package name per task: tasks with the same dependencies share the
    # target dir (that is the cache), and a shared name would let one task's
    # build replace the binary another is about to run.
    name = f"plugkit_task_{secrets.token_hex(6)}"
    built = os.path.join(glob.escape(target), "debug")
    return Layout(
        source=code, suffix=".rs", filename=os.path.join("src", "main.rs"),
        files=(("Cargo.toml", manifest(name, deps)),),
        compile=(cargo, "build", "--offline", "--manifest-path", "{dir}/Cargo.toml", "--target-dir", "{target}"),
        run=("{target}/debug/{main}",),
        values=(("target", target), ("main", name)),
        # Incremental state is keyed by package name, which never repeats here: it would only pile up.
        env=(("CARGO_NET_OFFLINE", "true"), ("CARGO_INCREMENTAL", "0")),
        compile_hint=OFFLINE_HINT if any(kind == "dep" for kind, _, _ in deps) else None,
        # What this package adds to the shared target dir; the dependencies stay cached.
        leftovers=tuple(os.path.join(built, pattern) for pattern in (
            name, f"{name}.d", f"deps/{name}-*", f".fingerprint/{name}-*", f"build/{name}-*")),
    )


def dependencies(code: str, cwd: str) -> list[tuple[str, str, str]]:
    """(kind, crate, value as TOML) per directive line; raises ProjectError naming the bad line."""
    import tomllib

    found: list[tuple[str, str, str]] = []
    for match in _DIRECTIVE.finditer(code):
        kind, text = match.group(1), match.group(2).strip()
        line = code.count("\n", 0, match.start()) + 1
        where = f"line {line} (cargo-{kind}: {text})"
        try:
            parsed = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            parsed = {}
        if len(parsed) != 1:
            raise ProjectError(f"{where}: expected one `name = value`, e.g. "
                               + ('rand = "0.8"' if kind == "dep" else 'mylib = "../mylib"'))
        crate, value = next(iter(parsed.items()))
        if not _CRATE.match(crate):
            raise ProjectError(f"{where}: {crate!r} is not a crate name")
        if any(crate == other for _, other, _ in found):
            raise ProjectError(f"{where}: {crate} is listed twice")
        if kind == "path":
            if not isinstance(value, str) or not value:
                raise ProjectError(f"{where}: the path must be a string, e.g. {crate} = \"../{crate}\"")
            path = os.path.normpath(os.path.join(cwd, os.path.expanduser(value)))
            if not os.path.isfile(os.path.join(path, "Cargo.toml")):
                raise ProjectError(f"{where}: no Cargo.toml in {path}")
            # JSON string escapes are valid TOML basic-string escapes.
            found.append((kind, crate, f"{{ path = {json.dumps(path)} }}"))
        else:
            # The line parsed as exactly one key, so its own text is a safe [dependencies] entry.
            found.append((kind, crate, text.split("=", 1)[1].strip()))
    return found


def dep_set_key(deps: list[tuple[str, str, str]]) -> str:
    """Order-independent: the same dependencies share one target dir whatever the line order."""
    canonical = "\n".join(sorted(f"{crate} = {value}" for _, crate, value in deps))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


def manifest(name: str, deps: list[tuple[str, str, str]]) -> str:
    lines = [f"{crate} = {value}" for _, crate, value in deps]
    return "\n".join([
        "[package]", f'name = "{name}"', 'version = "0.0.0"', 'edition = "2021"', "publish = false", "",
        "[dependencies]", *lines, "",
        # Its own workspace root: cargo must not adopt a Cargo.toml it finds above the temp dir.
        "[workspace]", ""])
