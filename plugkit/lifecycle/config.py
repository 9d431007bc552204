"""`.plugkit/config.toml`: how strictly the gates apply, and the command that witnesses "done".

    gates = "advisory"          # "off" | "advisory" (default: denials become warnings) | "enforce"
    verify = "pytest -q"        # the project's check, run by the runner as a witnessed task
    verify_lang = "bash"        # the language row that runs it
    verify_timeout_s = 600
    ready_limit = 3             # how many items prd.ready offers at once
    work_merge = "ff"           # how `plugkit work` lands an item: "ff" (rebased, fast-forward) | "merge"
    work_check_paths = ["tests/"]   # what an item's check runs beyond the files its verify names
    work_credentials = ["AWS_PROFILE"]  # variables a `plugkit work` worker may inherit beyond its host's own
    work_runtime = "local"      # where `plugkit work` runs workers: "local" | "ray" (a Ray cluster)
    work_cluster = "127.0.0.1:6379"  # work_runtime = "ray": the cluster's GCS address
    exec_sandbox = true         # every `plugkit exec:` task here runs in the worker sandbox (--sandbox)
    work_network = "loopback-model"  # `plugkit work`: "host" (default) | "loopback-model" (--network)
    digest_at_start = true      # the project digest (`plugkit digest`) in every SessionStart context
    ci = "github"               # COMPLETE needs the pushed HEAD's CI green, asked by the runner: local | github | gitlab
    ci_command = ".ci/run"      # ci = "local": the command run in a clean clone of HEAD (default .ci/run)
    ci_repo = "owner/name"      # ci = github | gitlab: the repository (default: read from the origin remote)
    ci_api_url = "https://api.github.com"  # the provider's REST API (default: the public one)
    work_ci = true              # `plugkit work` lands an item only once CI is green on its pushed branch
    work_resume = false         # a run the runner's death interrupted is not resumed at its next start (default true)
    work_include = [".env"]     # untracked files copied into each worker's worktree (and .worktreeinclude's)
    work_share = ["node_modules"]  # dirs of the main checkout copied (reflink where it can) into each worktree
    work_setup = "npm ci"       # run once per worktree in the worker's sandbox before the worker starts
    work_ports = 10             # a block of free TCP ports per worker: PORT (the first), PLUGKIT_PORTS=a-b
    work_ports_env = true       # and those two written into the worktree's .env
    work_docker = true          # each worker's DOCKER_HOST: a labelling proxy to the engine, its objects torn down
    work_day_tokens = 2000000   # `plugkit work`: the workspace's model tokens per local day, every run (a cap)
    work_day_cost = 20.0        # and its cost in USD per local day (workers that report one)

A file that cannot be parsed, or a value of the wrong type, never stops the runner: the
key keeps its default and the problem is reported (gate.status `notices`), so a typo in
`gates = "enforse"` is visible instead of silently weakening or strengthening the gates.
"""

import os
import tomllib
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Optional

from plugkit import confined
from plugkit.vocab import WORK_NETWORKS, WORK_RUNTIMES

MODES = ("off", "advisory", "enforce")


@dataclass(frozen=True)
class GateConfig:
    mode: str = "advisory"
    verify: Optional[str] = None
    verify_lang: str = "bash"
    verify_timeout_s: float = 600.0
    ready_limit: int = 3
    work_merge: str = "ff"
    work_check_paths: tuple[str, ...] = ()
    work_credentials: tuple[str, ...] = ()
    work_runtime: str = "local"
    work_cluster: Optional[str] = None
    exec_sandbox: bool = False
    work_network: str = "host"
    digest_at_start: bool = False
    ci: Optional[str] = None
    ci_command: Optional[str] = None
    ci_repo: Optional[str] = None
    ci_api_url: Optional[str] = None
    work_ci: bool = False
    work_resume: bool = True
    work_include: tuple[str, ...] = ()
    work_share: tuple[str, ...] = ()
    work_setup: Optional[str] = None
    work_ports: int = 0
    work_ports_env: bool = False
    work_docker: bool = False
    work_day_tokens: Optional[int] = None
    work_day_cost: Optional[float] = None
    problems: tuple[str, ...] = field(default=())


def _mode(v: Any) -> str:
    if v not in MODES:
        raise ValueError(f"must be one of {', '.join(MODES)}")
    return v


def _merge(v: Any) -> str:
    if v not in ("ff", "merge"):
        raise ValueError("must be \"ff\" or \"merge\"")
    return v


def _runtime(v: Any) -> str:
    if v not in WORK_RUNTIMES:
        raise ValueError(f"must be one of {', '.join(WORK_RUNTIMES)}")
    return v


def _text(v: Any) -> str:
    if not isinstance(v, str) or not v.strip():
        raise ValueError("must be a non-empty string")
    return v


def _paths(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > 100 or not all(isinstance(p, str) and p.strip() for p in v):
        raise ValueError("must be a list of paths relative to the workspace (at most 100)")
    return tuple(v)


def _names(v: Any) -> tuple[str, ...]:
    if not isinstance(v, list) or len(v) > 100 or not all(
            isinstance(n, str) and n and n.replace("_", "a").isalnum() for n in v):
        raise ValueError("must be a list of environment variable names (at most 100)")
    return tuple(v)


def _flag(v: Any) -> bool:
    if not isinstance(v, bool):
        raise ValueError("must be true or false")
    return v


def _network(v: Any) -> str:
    if v not in WORK_NETWORKS:
        raise ValueError(f"must be one of {', '.join(WORK_NETWORKS)}")
    return v


CI_PROVIDERS = ("local", "github", "gitlab")


def _ci(v: Any) -> str:
    if v not in CI_PROVIDERS:
        raise ValueError(f"must be one of {', '.join(CI_PROVIDERS)}")
    return v


def _url(v: Any) -> str:
    if not isinstance(v, str) or not v.startswith(("https://", "http://")) or any(c.isspace() for c in v):
        raise ValueError("must be an http(s) URL")
    return v.rstrip("/")


def _lang(v: Any) -> str:
    # A worker task is handed the runner's home (the token): a workspace file anyone can
    # edit must not turn `gate verify` into one.
    if _text(v).strip().lower() == "worker":
        raise ValueError("cannot be worker (worker tasks are started by plugkit work only)")
    return v


def _tokens(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 10 ** 12:
        raise ValueError("must be a whole number of tokens between 1 and 10^12")
    return v


def _usd(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 10 ** 6:
        raise ValueError("must be a positive amount of USD, at most 10^6")
    return float(v)


def _seconds(v: Any) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 1 <= v <= 24 * 3600:
        raise ValueError("must be a number of seconds between 1 and 86400")
    return float(v)


def _count(v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 100:
        raise ValueError("must be an integer between 1 and 100")
    return v


# toml key -> (dataclass field, validator). Adding a setting is adding a row.
KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "gates": ("mode", _mode),
    "verify": ("verify", _text),
    "verify_lang": ("verify_lang", _lang),
    "verify_timeout_s": ("verify_timeout_s", _seconds),
    "ready_limit": ("ready_limit", _count),
    "work_merge": ("work_merge", _merge),
    "work_check_paths": ("work_check_paths", _paths),
    "work_credentials": ("work_credentials", _names),
    "work_runtime": ("work_runtime", _runtime),
    "work_cluster": ("work_cluster", _text),
    "exec_sandbox": ("exec_sandbox", _flag),
    "work_network": ("work_network", _network),
    "digest_at_start": ("digest_at_start", _flag),
    "ci": ("ci", _ci),
    "ci_command": ("ci_command", _text),
    "ci_repo": ("ci_repo", _text),
    "ci_api_url": ("ci_api_url", _url),
    "work_ci": ("work_ci", _flag),
    "work_resume": ("work_resume", _flag),
    "work_include": ("work_include", _paths),
    "work_share": ("work_share", _paths),
    "work_setup": ("work_setup", _text),
    "work_ports": ("work_ports", _count),
    "work_ports_env": ("work_ports_env", _flag),
    "work_docker": ("work_docker", _flag),
    "work_day_tokens": ("work_day_tokens", _tokens),
    "work_day_cost": ("work_day_cost", _usd),
}


def load(path: str) -> GateConfig:
    try:
        # path is <root>/.plugkit/config.toml: read from the root with no link on the way and
        # only as a regular file (a sandbox writes its worktree's copy; a FIFO would hold the read).
        with confined.open_beneath(os.path.dirname(os.path.dirname(os.path.abspath(path))), path) as fh:
            raw = tomllib.load(fh)
    except FileNotFoundError:
        return GateConfig()
    except (OSError, tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return GateConfig(problems=(f".plugkit/config.toml is unreadable ({exc}); using defaults",))
    return parse(raw)


def parse(raw: dict) -> GateConfig:
    values: dict[str, Any] = {}
    problems: list[str] = []
    for key, value in raw.items():
        if key not in KEYS:
            problems.append(f".plugkit/config.toml: unknown key {key!r} ignored")
            continue
        name, check = KEYS[key]
        try:
            values[name] = check(value)
        except ValueError as exc:
            problems.append(f".plugkit/config.toml: {key} {exc}; using the default")
    return replace(GateConfig(), **values, problems=tuple(problems))
