"""Each worker host's own OpenTelemetry, one row per worker: the variables that point its OTLP
export at the runner (runner/http/otlp.py) and the metric and event names it reports token
usage, cost and model under. Read from each pinned host's installed sources (names quoted
below as those sources spell them), so a budget (runner/core/work/budget.py) counts what the
worker itself says it spent.

- claude-code (the compiled `claude` binary's strings): CLAUDE_CODE_ENABLE_TELEMETRY=1 and the
  standard OTEL_* variables; OTEL_EXPORTER_OTLP_PROTOCOL "http/json" picks the JSON exporter.
  Counters claude_code.token.usage (attributes model, type: input|output|cacheRead|cacheCreation)
  and claude_code.cost.usage (USD, attribute model); it sets delta temporality itself when
  OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE is unset. Event claude_code.api_request too.
- gemini (@google/gemini-cli bundle): GEMINI_TELEMETRY_ENABLED, GEMINI_TELEMETRY_TARGET=local,
  GEMINI_TELEMETRY_OTLP_ENDPOINT, GEMINI_TELEMETRY_OTLP_PROTOCOL=http (the exporter-*-otlp-http
  packages: JSON; the headers from OTEL_EXPORTER_OTLP_HEADERS). Counter gemini_cli.token.usage
  (model, type: input|output|thought|cache|tool); no cost.
- qwen (@qwen-code/qwen-code cli.js, Gemini CLI's fork): QWEN_TELEMETRY_* likewise; counter
  qwen-code.token.usage (model, type: input|output|cache...); no cost. Not pointed here yet: with
  those variables set, the pinned Qwen Code exported nothing in 110 s of a scripted run
  (tests/hosts/test_work_hosts.py), so a cap on it would never trip: refused until it does.
- codex (the Rust binary): its exporter is set in config.toml `[otel]` (otlp-http, protocol
  json|binary, its own headers), not by environment: no row can point it here, so a token or
  cost cap is refused for it at start. Its events (codex.sse_event: input_token_count,
  output_token_count) are named for the day a row can.
- command (a program of the person's, the tests' scripted agent): the standard OTEL_* variables;
  it may speak for any host, so every host's token names count (its cost is never known).
"""

from dataclasses import dataclass, field

HEADER = "x-plugkit-telemetry"  # the per-worker secret travels in this header, never in a URL
EXPORT_INTERVAL_MS = 5000  # how often a host exports its metrics (Claude Code's default is 60 s)


@dataclass(frozen=True)
class Names:
    """What a host reports: token counters (their counted `type` values), cost counters (USD),
    token events (log records named by body or event.name) with their count attributes."""

    token_metrics: dict[str, frozenset[str]] = field(default_factory=dict)
    cost_metrics: frozenset[str] = frozenset()
    token_events: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cost_events: dict[str, str] = field(default_factory=dict)  # event -> its USD attribute


def _standard(endpoint: str, secret: str) -> dict[str, str]:
    """The OTel SDK's own variables (JS and Rust alike): JSON over HTTP, uncompressed (a gzip
    stream would be chunked, which the runner's framing refuses), delta sums, our header."""
    return {"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
            "OTEL_EXPORTER_OTLP_HEADERS": f"{HEADER}={secret}", "OTEL_EXPORTER_OTLP_COMPRESSION": "none",
            "OTEL_EXPORTER_OTLP_METRICS_TEMPORALITY_PREFERENCE": "delta",
            "OTEL_METRIC_EXPORT_INTERVAL": str(EXPORT_INTERVAL_MS), "OTEL_METRICS_EXPORTER": "otlp",
            "OTEL_LOGS_EXPORTER": "otlp", "OTEL_TRACES_EXPORTER": "none"}


def _claude(endpoint: str, secret: str) -> dict[str, str]:
    return {**_standard(endpoint, secret), "CLAUDE_CODE_ENABLE_TELEMETRY": "1"}


def _gemini_like(prefix: str):
    def env(endpoint: str, secret: str) -> dict[str, str]:
        return {**_standard(endpoint, secret), f"{prefix}_TELEMETRY_ENABLED": "true",
                f"{prefix}_TELEMETRY_TARGET": "local", f"{prefix}_TELEMETRY_OTLP_ENDPOINT": endpoint,
                f"{prefix}_TELEMETRY_OTLP_PROTOCOL": "http", f"{prefix}_TELEMETRY_LOG_PROMPTS": "false"}
    return env


CLAUDE = Names(token_metrics={"claude_code.token.usage": frozenset({"input", "output", "cacheCreation"})},
               cost_metrics=frozenset({"claude_code.cost.usage"}))
GEMINI = Names(token_metrics={"gemini_cli.token.usage": frozenset({"input", "output", "thought", "tool"})})
QWEN = Names(token_metrics={"qwen-code.token.usage": frozenset({"input", "output", "thought", "tool"})})
CODEX = Names(token_events={"codex.sse_event": ("input_token_count", "output_token_count")})


def _union(*rows: Names) -> Names:
    return Names(token_metrics={k: v for r in rows for k, v in r.token_metrics.items()},
                 token_events={k: v for r in rows for k, v in r.token_events.items()})


@dataclass(frozen=True)
class Row:
    names: Names
    env: object = None  # (endpoint, secret) -> the worker's variables; None: its environment cannot point it here

    @property
    def reports_tokens(self) -> bool:
        return self.env is not None

    @property
    def reports_cost(self) -> bool:
        """A price is known only where the host reports its own cost: no price table guesses one."""
        return self.env is not None and bool(self.names.cost_metrics or self.names.cost_events)


ROWS: dict[str, Row] = {
    "claude-code": Row(CLAUDE, _claude),
    "gemini": Row(GEMINI, _gemini_like("GEMINI")),
    "qwen": Row(QWEN, None),  # _gemini_like("QWEN") once a scripted run proves its export arrives
    "codex": Row(CODEX, None),
    # Its tokens are counted under any host's names; its cost never: a program of the person's
    # says which model it used, if anything, so a cost cap on it would guess (refused at start).
    "command": Row(Names(token_metrics=_union(CLAUDE, GEMINI, QWEN).token_metrics,
                         token_events=CODEX.token_events), _standard),
}


def env_for(worker: str, endpoint: str, secret: str) -> dict[str, str]:
    row = ROWS.get(worker)
    return row.env(endpoint, secret) if row is not None and row.env is not None else {}  # type: ignore[operator]
