"""Runner limits, read once from the environment (PLUGKIT_*). Standard library only."""

import os
from dataclasses import dataclass, fields


def _env_number(name: str, default: float) -> float:
    raw = os.environ.get(name)
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
    def from_env(cls) -> "Limits":
        """Each field can be set as PLUGKIT_<FIELD NAME IN CAPITALS>."""
        values = {}
        for f in fields(cls):
            default = f.default
            value = _env_number(f"PLUGKIT_{f.name.upper()}", default)
            values[f.name] = int(value) if isinstance(default, int) else value
        return cls(**values)
