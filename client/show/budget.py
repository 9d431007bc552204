"""A run's spend against its caps, as `plugkit work status` shows it (runner/core/work/budget.py counts it)."""

# cap -> (what it caps, the flag that set it)
CAPS = {"tokens": ("tokens", "--budget-tokens"), "cost": ("cost", "--budget-cost"),
        "item_tokens": ("tokens", "--item-budget-tokens"), "item_cost": ("cost", "--item-budget-cost"),
        "item_min": ("worker_s", "--item-budget-min")}


def _amount(what: str, x: float) -> str:
    return f"{int(x)} tokens" if what == "tokens" else f"{x / 60:.2f} min" if what == "worker_s" else f"${x:.4f}"


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
            parts.append(f"{_amount(what, spend.get(what, 0))} of {flag} {_amount(what, limit)}")
    lines = ["  budget: " + "; ".join(parts)]
    if run.get("state") == "paused":
        lines.append("next: plugkit work resume --budget-tokens N (a person, from their own terminal) | "
                     "plugkit work stop")
    return lines
