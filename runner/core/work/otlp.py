"""What one worker's OTLP/JSON export says it spent: tokens, cost (USD) and model, read from the
metrics and log records its host builds (names: plugkit/work/telemetry.py), nothing else.

Sums come as deltas (what we ask for) or cumulative (a host that ignores the preference): a
cumulative series (name, attributes, start time) counts only its growth since its last point,
so an exporter's retry or a cumulative re-send never counts twice. Malformed input is a
ValueError (the route answers 400); unknown metrics and records are skipped.
"""

from dataclasses import dataclass
from typing import Any, Optional

from plugkit.work.telemetry import Names

CUMULATIVE = 2  # AggregationTemporality: 1 delta, 2 cumulative (the JSON mapping may spell the enum)
MAX_SERIES = 2000  # cumulative series remembered per worker attempt


@dataclass
class Spend:
    tokens: int = 0
    cost: float = 0.0
    model: Optional[str] = None

    def __bool__(self) -> bool:
        return bool(self.tokens or self.cost)


def _list(obj: Any, key: str) -> list:
    got = obj.get(key, []) if isinstance(obj, dict) else None
    if not isinstance(got, list):
        raise ValueError(f"{key} is not a list")
    return got


def _value(v: Any) -> Any:
    """An OTLP AnyValue: {stringValue|intValue|doubleValue|boolValue: ...} (intValue a string in JSON)."""
    if not isinstance(v, dict):
        return None
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in v:
            return v[key]
    if "intValue" in v:
        return _number(v["intValue"])
    return None


def _attrs(obj: dict) -> dict[str, Any]:
    return {a["key"]: _value(a.get("value")) for a in _list(obj, "attributes")
            if isinstance(a, dict) and isinstance(a.get("key"), str)}


def _number(x: Any) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, str)):
        raise ValueError("not a number")
    n = float(x)
    if n != n or n in (float("inf"), float("-inf")) or n < 0:
        raise ValueError("not a count")
    return n


def _temporality(sum_: dict) -> int:
    t = sum_.get("aggregationTemporality", 1)
    return CUMULATIVE if t in (CUMULATIVE, "AGGREGATION_TEMPORALITY_CUMULATIVE") else 1


class Meter:
    def __init__(self, names: Names) -> None:
        self.names = names
        self._last: dict[tuple, float] = {}  # a cumulative series -> its last value

    def metrics(self, payload: Any) -> Spend:
        if not isinstance(payload, dict):
            raise ValueError("not an OTLP metrics export")
        spend = Spend()
        for resource in _list(payload, "resourceMetrics"):
            for scope in _list(resource, "scopeMetrics"):
                for metric in _list(scope, "metrics"):
                    if isinstance(metric, dict):
                        self._metric(metric, spend)
        return spend

    def _metric(self, metric: dict, spend: Spend) -> None:
        name, names = metric.get("name"), self.names
        counted = names.token_metrics.get(name) if isinstance(name, str) else None
        is_cost = name in names.cost_metrics
        sum_ = metric.get("sum")
        if (counted is None and not is_cost) or not isinstance(sum_, dict):
            return
        cumulative = _temporality(sum_) == CUMULATIVE
        for point in _list(sum_, "dataPoints"):
            if not isinstance(point, dict):
                continue
            attrs = _attrs(point)
            if counted is not None and attrs.get("type") not in counted:
                continue  # a cache read re-reads what was counted when it was written
            value = _number(point.get("asDouble", point.get("asInt", 0)))
            if cumulative:
                key = (name, tuple(sorted((k, str(v)) for k, v in attrs.items())), str(point.get("startTimeUnixNano")))
                last = self._last.get(key, 0.0)
                if key in self._last or len(self._last) < MAX_SERIES:
                    self._last[key] = max(last, value)
                value = max(0.0, value - last)
            if is_cost:
                spend.cost += value
            else:
                spend.tokens += int(value)
            if isinstance(attrs.get("model"), str):
                spend.model = attrs["model"][:200]

    def logs(self, payload: Any) -> Spend:
        if not isinstance(payload, dict):
            raise ValueError("not an OTLP logs export")
        spend = Spend()
        for resource in _list(payload, "resourceLogs"):
            for scope in _list(resource, "scopeLogs"):
                for record in _list(scope, "logRecords"):
                    if isinstance(record, dict):
                        self._record(record, spend)
        return spend

    def _record(self, record: dict, spend: Spend) -> None:
        attrs = _attrs(record)
        body = _value(record.get("body"))
        event = record.get("eventName") or attrs.get("event.name") or body
        fields = self.names.token_events.get(event) if isinstance(event, str) else None
        cost_field = self.names.cost_events.get(event) if isinstance(event, str) else None
        if fields is None and cost_field is None:
            return
        for f in fields or ():
            if attrs.get(f) is not None:
                spend.tokens += int(_number(attrs[f]))
        if cost_field and attrs.get(cost_field) is not None:
            spend.cost += _number(attrs[cost_field])
        model = attrs.get("model")
        if isinstance(model, str):
            spend.model = model[:200]
