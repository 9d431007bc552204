"""A run's spend against its caps, as `plugkit work status` shows it (runner/core/work/budget.py counts it)."""

# cap -> (what it caps, the flag that set it)
CAPS = {"tokens": ("tokens", "--budget-tokens"), "cost": ("cost", "--budget-cost"),
        "item_tokens": ("tokens", "--item-budget-tokens"), "item_cost": ("cost", "--item-budget-cost"),
        "item_min": ("worker_s", "--item-budget-min"),
        "day_tokens": ("day_tokens", "--budget-day-tokens"), "day_cost": ("day_cost", "--budget-day-cost")}


def _amount(what: str, x: float) -> str:
    return f"{int(x)} tokens" if what.endswith("tokens") else f"{x / 60:.2f} min" if what == "worker_s" else f"${x:.4f}"


def budget_lines(run: dict) -> list[str]:
    caps, spend = run.get("caps") or {}, run.get("spend") or {}
    if not caps:
        return []
    parts = []
    for name, limit in caps.items():
        what, flag = CAPS.get(name, (name, name))
        if name.startswith("item_"):
            top = max((i.get(what, 0) for i in run.get("items", [])), default=0)
            cap = limit * 60 if what == "worker_s" else limit
            parts.append(f"{flag} {_amount(what, cap)} (most by one item: {_amount(what, top)})")
        else:
            day = f" on {run['day_spend'].get('date')}" if name.startswith("day_") and run.get("day_spend") else ""
            parts.append(f"{_amount(what, spend.get(what, 0))}{day} of {flag} {_amount(what, limit)}")
    lines = ["  budget: " + "; ".join(parts)]
    if run.get("state") == "paused":
        day = "renews at local midnight" in (run.get("halt") or "")
        lines.append(f"next: plugkit work resume {'--budget-day-tokens' if day else '--budget-tokens'} N "
                     f"(a person, from their own terminal){' or local midnight' if day else ''} | plugkit work stop")
    return lines
