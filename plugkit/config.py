"""The runner's configuration as frozen values: Limits and RunnerConfig, parsed from an
environment mapping (PLUGKIT_*) by the runner once at boot (runner/boot/config.py) and
passed down from there. Standard library only: the client reads Limits too."""

import os
from dataclasses import dataclass, field, fields
from typing import Mapping, Optional

DEFAULT_BROWSER_IDLE_S = 300.0


def _env_number(environ: Mapping[str, str], name: str, default: float) -> float:
    raw = environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number") from None
    if value < 0:
        raise ValueError(f"{name}={raw!r} must not be negative")
    return value


@dataclass(frozen=True)
class Limits:
    max_body_bytes: int = 1 << 20
    max_batch: int = 32
    max_code_bytes: int = 512 << 10
    tasks_per_session: int = 64
    running_tasks: int = 256
    output_cap_bytes: int = 4 << 20
    max_timeout_ms: int = 24 * 3600 * 1000
    max_wait_ms: int = 10 * 60 * 1000
    kill_grace_s: float = 0.5
    session_idle_s: float = 1800.0
    sweep_interval_s: float = 1.0
    ledger_retention_s: float = 24 * 3600.0
    # 64 KiB of output tail per record at most: 2000 rows keep the file (and the
    # integrity check at every boot) around 128 MiB in the worst case.
    ledger_max_rows: int = 2000

    @classmethod
    def from_env(cls, environ: Optional[Mapping[str, str]] = None) -> "Limits":
        """Each field can be set as PLUGKIT_<FIELD NAME IN CAPITALS>."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            default = f.default
            value = _env_number(environ, f"PLUGKIT_{f.name.upper()}", default)
            values[f.name] = int(value) if isinstance(default, int) else value
        return cls(**values)


@dataclass(frozen=True)
class RunnerConfig:
    """Everything a runner is configured with, fixed for its lifetime."""

    home: str  # PLUGKIT_HOME (see plugkit.paths.home)
    port: int  # PLUGKIT_PORT
    limits: Limits = field(default_factory=Limits)
    # PLUGKIT_CHROMIUM: the browser exec:browser drives; None means the default lookup.
    chromium: Optional[str] = None
    # PLUGKIT_BROWSER_IDLE_S: how long Chromium outlives its last page.
    browser_idle_s: float = DEFAULT_BROWSER_IDLE_S
    # PLUGKIT_PYTHON: the interpreter exec:python runs; None means the runner's own.
    python: Optional[str] = None
    # PLUGKIT_CGROUPS=0: no cgroup per task (tags only), an operator's opt-out and the bench's baseline.
    cgroups: bool = True
    # PLUGKIT_SEARCH_SEMANTIC=1: plain-words questions also use plugkit[semantic]'s vectors where it is
    # installed. Off by default: no model that fits its budget improved them on the untuned sets (README).
    semantic: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str], home: str, port: int) -> "RunnerConfig":
        """Raises ValueError naming the variable when one is malformed."""
        raw_idle = environ.get("PLUGKIT_BROWSER_IDLE_S", "")
        try:
            idle_s = float(raw_idle) if raw_idle else DEFAULT_BROWSER_IDLE_S
        except ValueError:
            raise ValueError(f"PLUGKIT_BROWSER_IDLE_S={raw_idle!r} is not a number of seconds") from None
        return cls(home=home, port=port, limits=Limits.from_env(environ),
                   chromium=environ.get("PLUGKIT_CHROMIUM") or None, browser_idle_s=max(0.0, idle_s),
                   python=environ.get("PLUGKIT_PYTHON") or None,
                   cgroups=environ.get("PLUGKIT_CGROUPS", "1") != "0",
                   semantic=environ.get("PLUGKIT_SEARCH_SEMANTIC", "0") == "1")
