"""Credential scopes: the environment a worker gets is built from an allowlist, never passed
through. A worker is an agent with its host's prompts off; whatever the person who ran
`plugkit work` had exported (AWS keys, a production database URL, a billing token) is not
its to hold unless the workspace grants it by name.

Three scopes, in order:
  base      what any program needs to run (PATH, HOME, locale, terminal, proxies and CA
            bundles, toolchain homes) and how its hooks reach this runner;
  model     per worker row: the variables its host reads to reach its model (its API key,
            base URL, model name), by prefix;
  granted   `work_credentials = ["NAME", ...]` in .plugkit/config.toml, held by the runner
            (a change to it is a person's to confirm, like any held setting).
Everything else is scrubbed. The item's check gets the same scopes but the model's (check_env). Standard library only.
"""

from __future__ import annotations

from typing import Mapping

from plugkit.hosts import COMMAND, HOSTS

BASE_NAMES = frozenset({
    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "TZ", "TERM", "COLORTERM", "NO_COLOR",
    "TMPDIR", "PWD", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "NODE_EXTRA_CA_CERTS", "VIRTUAL_ENV",
    "GOPATH", "GOCACHE", "GOMODCACHE", "CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "XDG_CACHE_HOME",
    "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
    "PLUGKIT_PORT", "PLUGKIT_HOOKS_FAIL",
})
BASE_PREFIXES = ("LC_", "GIT_AUTHOR_", "GIT_COMMITTER_")
# worker row -> the prefixes of the variables its host reads to reach its model (the host's
# worker fact, plugkit/hosts.py); the command worker reaches no model of ours.
MODEL: dict[str, tuple[str, ...]] = {
    **{h.platform: h.worker.model_env for h in HOSTS if h.worker is not None}, COMMAND: ()}


def scope_of(name: str, worker: str, granted: tuple[str, ...]) -> str | None:
    """Which scope lets `name` through for this worker, or None (scrubbed)."""
    if name in BASE_NAMES or name.startswith(BASE_PREFIXES):
        return "base"
    if name.startswith(MODEL.get(worker, ())):
        return f"model:{worker}"
    if name in granted:
        return "granted"
    return None


def worker_env(worker: str, caller: Mapping[str, str], granted: tuple[str, ...]) -> dict[str, str]:
    """The caller's environment, only what a scope lets through."""
    return {k: v for k, v in caller.items() if scope_of(k, worker, granted) is not None}


# What a check needs to run beyond the base scope: the interpreters' own search paths.
CHECK_NAMES = frozenset({"PYTHONPATH", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "NODE_PATH", "PYENV_VERSION"})


def check_env(caller: Mapping[str, str], granted: tuple[str, ...]) -> dict[str, str]:
    """The environment of an item's check: it runs the worker's code (what its tests import), so it
    holds what the worker held, the base and granted scopes (no model key: a check reaches no
    model), plus CHECK_NAMES; never the rest of the caller's environment."""
    return {k: v for k, v in caller.items()
            if k in CHECK_NAMES or scope_of(k, "command", granted) is not None}


def shown(worker: str, caller: Mapping[str, str], granted: tuple[str, ...]) -> list[str]:
    """What `work status` lists: the scopes held and, for model/granted, the names (never values)."""
    held: dict[str, list[str]] = {}
    for name in sorted(caller):
        scope = scope_of(name, worker, granted)
        if scope is not None and scope != "base":
            held.setdefault(scope, []).append(name)
    scrubbed = sum(1 for name in caller if scope_of(name, worker, granted) is None)
    return ["base", *(f"{scope} ({', '.join(names)})" for scope, names in held.items()),
            f"scrubbed: {scrubbed} other variable(s)"]
