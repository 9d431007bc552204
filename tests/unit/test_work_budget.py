"""The budget's pure parts: OTLP/JSON exports shaped as the pinned hosts' exporters build them
(the @opentelemetry JS JSON serializer Claude Code, Gemini CLI and Qwen Code use; Codex's log
records), counted as tokens and cost; the caps refused at start; the cap that trips."""

import pytest

from plugkit.work import telemetry
from runner.core.work import budget
from runner.core.work.model import ItemRun, Run
from runner.core.work.otlp import Meter


def _attrs(**kv) -> list:
    out = []
    for k, v in kv.items():
        key = k.replace("__", ".")
        out.append({"key": key, "value": {"intValue": str(v)} if isinstance(v, int) else {"stringValue": v}})
    return out


def _metrics(name: str, points: list[tuple[dict, float]], temporality: int = 1, start: str = "1700000000000000000",
             unit: str = "tokens") -> dict:
    """As @opentelemetry/otlp-transformer's JSON serializer builds one export (a counter: asDouble)."""
    return {"resourceMetrics": [{
        "resource": {"attributes": _attrs(service__name="claude-code", service__version="2.1.197"),
                     "droppedAttributesCount": 0},
        "scopeMetrics": [{"scope": {"name": "com.anthropic.claude_code", "version": "2.1.197"}, "metrics": [{
            "name": name, "description": "Number of tokens used", "unit": unit,
            "sum": {"aggregationTemporality": temporality, "isMonotonic": True, "dataPoints": [
                {"attributes": _attrs(**a), "startTimeUnixNano": start, "timeUnixNano": "1700000005000000000",
                 "asDouble": v} for a, v in points]}}]}]}]}


CLAUDE_TOKENS = [({"model": "claude-sonnet-4-5", "type": "input"}, 1200.0),
                 ({"model": "claude-sonnet-4-5", "type": "output"}, 300.0),
                 ({"model": "claude-sonnet-4-5", "type": "cacheRead"}, 50000.0),
                 ({"model": "claude-sonnet-4-5", "type": "cacheCreation"}, 100.0)]


def test_claude_codes_delta_token_and_cost_counters_are_counted_and_cache_reads_are_not():
    meter = Meter(telemetry.ROWS["claude-code"].names)
    spend = meter.metrics(_metrics("claude_code.token.usage", CLAUDE_TOKENS))
    assert (spend.tokens, spend.model) == (1600, "claude-sonnet-4-5")
    again = meter.metrics(_metrics("claude_code.token.usage", CLAUDE_TOKENS))  # delta: each export is new spend
    assert again.tokens == 1600
    cost = meter.metrics(_metrics("claude_code.cost.usage", [({"model": "claude-sonnet-4-5"}, 0.0123)], unit="USD"))
    assert (cost.tokens, round(cost.cost, 6)) == (0, 0.0123)


def test_a_cumulative_series_counts_only_its_growth_and_a_resent_export_nothing():
    meter = Meter(telemetry.ROWS["gemini"].names)
    point = {"model": "gemini-2.5-pro", "type": "input"}
    assert meter.metrics(_metrics("gemini_cli.token.usage", [(point, 100.0)], temporality=2)).tokens == 100
    assert meter.metrics(_metrics("gemini_cli.token.usage", [(point, 250.0)], temporality=2)).tokens == 150
    assert meter.metrics(_metrics("gemini_cli.token.usage", [(point, 250.0)], temporality=2)).tokens == 0
    # a new start time is a new series (the host restarted its counter)
    assert meter.metrics(_metrics("gemini_cli.token.usage", [(point, 40.0)], temporality=2, start="1")).tokens == 40


def test_another_hosts_names_and_other_metrics_count_nothing():
    meter = Meter(telemetry.ROWS["qwen"].names)
    assert not meter.metrics(_metrics("claude_code.token.usage", CLAUDE_TOKENS))
    assert not meter.metrics(_metrics("qwen-code.tool.call.count", [({"type": "input"}, 5.0)]))
    qwen = _metrics("qwen-code.token.usage", [({"model": "qwen3-coder", "type": "output"}, 7.0)])
    assert meter.metrics(qwen).tokens == 7


def test_codex_response_events_in_logs_are_counted():
    meter = Meter(telemetry.ROWS["codex"].names)
    record = {"timeUnixNano": "1700000000000000000", "body": {"stringValue": "codex.sse_event"},
              "attributes": _attrs(event__name="codex.sse_event", event__kind="response.completed",
                                   model="gpt-5-codex", input_token_count=800, output_token_count=90)}
    payload = {"resourceLogs": [{"resource": {"attributes": []}, "scopeLogs": [{"scope": {"name": "codex"},
                                                                               "logRecords": [record]}]}]}
    spend = meter.logs(payload)
    assert (spend.tokens, spend.model) == (890, "gpt-5-codex")


@pytest.mark.parametrize("payload", [[], {"resourceMetrics": {}}, {"resourceMetrics": [{"scopeMetrics": 3}]},
                                     _metrics("claude_code.token.usage", [({"type": "input"}, -5.0)]),
                                     _metrics("claude_code.token.usage", [({"type": "input"}, "nan")])])
def test_what_is_not_an_otlp_export_is_refused_not_counted(payload):
    with pytest.raises(ValueError):
        Meter(telemetry.ROWS["claude-code"].names).metrics(payload)


def test_caps_no_worker_can_report_are_refused_at_start():
    assert budget.refusal("claude-code", {"tokens": 10, "cost": 1.0}, "local") is None
    assert budget.refusal("command", {"tokens": 10, "item_tokens": 5}, "local") is None
    assert "no price is known" in budget.refusal("command", {"cost": 1.0}, "local")
    assert "no price is known" in budget.refusal("gemini", {"item_cost": 1.0}, "local")
    assert "cannot be pointed" in budget.refusal("codex", {"tokens": 10}, "local")
    assert "cannot be pointed" in budget.refusal("qwen", {"item_tokens": 10}, "local")
    assert "--runtime local" in budget.refusal("claude-code", {"tokens": 10}, "ray")
    assert budget.refusal("codex", {}, "ray") is None


def test_the_first_spent_cap_is_named_run_and_item_alike():
    run = Run(id="r", workspace="/w", worker="command", parallel=1, afk=False, merge="ff", branch="main",
              base="x", started_at=0.0, stall_min=10.0, caps={"tokens": 1000.0, "item_tokens": 600.0})
    run.items = {"a": ItemRun(id="a", subject="a", tokens=300), "b": ItemRun(id="b", subject="b", tokens=400)}
    assert budget.tripped(run) is None
    run.items["b"].tokens = 600
    assert budget.tripped(run) == "b spent 600 tokens of its --item-budget-tokens 600 tokens"
    run.caps["item_tokens"] = 10_000
    run.items["a"].tokens = 400
    assert budget.tripped(run) == "the run spent 1000 tokens of its --budget-tokens 1000 tokens"
    assert run.spend == {"tokens": 1000, "cost": 0.0}


def test_the_worker_variables_point_its_host_here_with_its_own_secret():
    env = telemetry.env_for("claude-code", "http://127.0.0.1:32882", "s3cret")
    assert env["CLAUDE_CODE_ENABLE_TELEMETRY"] == "1" and env["OTEL_EXPORTER_OTLP_PROTOCOL"] == "http/json"
    assert env["OTEL_EXPORTER_OTLP_HEADERS"] == f"{telemetry.HEADER}=s3cret"
    assert telemetry.env_for("gemini", "http://e", "s")["GEMINI_TELEMETRY_OTLP_PROTOCOL"] == "http"
    assert telemetry.env_for("codex", "http://e", "s") == {}


def test_an_items_wall_clock_cap_counts_its_ended_attempts_and_its_live_worker():
    run = Run(id="r", workspace="/w", worker="codex", parallel=1, afk=False, merge="ff", branch="main",
              base="x", started_at=0.0, stall_min=10.0, caps={"item_min": 2.0})
    run.items = {"a": ItemRun(id="a", subject="a", worker_s=90.0)}
    assert budget.refusal("codex", run.caps, "local") is None  # the runner's own clock: no telemetry needed
    assert budget.tripped(run) is None and budget.tripped(run, {"a": 29.0}) is None
    assert budget.tripped(run, {"a": 30.0}) == "a spent 2.00 min of its --item-budget-min 2.00 min"
    assert budget.pause(run, budget.tripped(run, {"a": 30.0})) and run.state == "paused"
    assert run.halt.startswith("budget: a spent 2.00 min") and not budget.pause(run, "again")
