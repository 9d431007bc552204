"""Work items: `.prd` at the workspace root, a JSON array, and its dependency graph.

`blocked_by` and `blocking` are two views of one relation (a blocks b <=> b.blocked_by
holds a <=> a.blocking holds b). Every write rebuilds both from one edge set, so an edit
to either side (or a hand edit of the file that touched one side only) leaves them
consistent; references to ids that do not exist are dropped on load. A change that
would close a cycle is refused with the cycle spelled out.
"""

import json
from typing import Iterable, Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plugkit.lifecycle.errors import Conflict, Cycle, Invalid, NotFound

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Status = Literal["pending", "in_progress", "completed", "blocked"]
Effort = Literal["small", "medium", "large"]
Risk = Literal["low", "medium", "high", "critical"]
DEFAULT_WAVE = 3


class Item(BaseModel):
    # Unknown keys a person (or an older tool) put in .prd survive our rewrites.
    model_config = ConfigDict(extra="allow")

    id: str = Field(pattern=ID_PATTERN)
    subject: str = Field(min_length=1, max_length=500)
    status: Status = "pending"
    acceptance: list[str] = []
    edge_cases: list[str] = []
    blocked_by: list[str] = []
    blocking: list[str] = []
    effort: Effort = "medium"
    risk: Risk = "low"
    evidence: list[str] = []  # receipt ids named when it was completed
    # The item's own check (else the workspace's `verify`): `plugkit work` runs it in the
    # item's worktree once its worker stops, and completes the item only if it passes.
    verify: Optional[str] = Field(default=None, min_length=1, max_length=2000)


Edges = list[tuple[str, str]]  # (blocker, blocked), in a stable order


def parse(raw: bytes) -> list[Item]:
    try:
        data = json.loads(raw)
        if not isinstance(data, list):
            raise ValueError("not a JSON array")
        items = [Item.model_validate(x) for x in data]
    except (ValueError, ValidationError) as exc:
        # Never moved aside or rewritten: .prd is the person's file. Writes stop until it is fixed.
        raise Conflict(f".prd is not a JSON array of work items ({_short(exc)}); fix or remove it") from None
    seen: set[str] = set()
    for item in items:
        if item.id in seen:
            raise Conflict(f".prd holds id {item.id} twice; fix the file")
        seen.add(item.id)
    relink(items, edges_of(items))
    return items


def dump(items: list[Item]) -> bytes:
    return join([render(i) for i in items]).encode()


def render(item: Item) -> str:
    """One item as it stands inside dump's array: json.dumps(list, indent=2) indents each
    element's own indent=2 text by two more spaces (JSON strings hold no raw newline), so
    the runner can reuse the text of items a change did not touch (plugkit.lifecycle.items_view)."""
    return "  " + json.dumps(item.model_dump(mode="json"), indent=2, ensure_ascii=False).replace("\n", "\n  ")


def join(rendered: list[str]) -> str:
    return ("[\n" + ",\n".join(rendered) + "\n]" if rendered else "[]") + "\n"


def _short(exc: Exception) -> str:
    return str(exc).splitlines()[0][:200]


def edges_of(items: list[Item]) -> Edges:
    """The union of both views, without dangling ends."""
    ids = {i.id for i in items}
    found: dict[tuple[str, str], None] = {}
    for item in items:
        for blocker in item.blocked_by:
            found[(blocker, item.id)] = None
        for blocked in item.blocking:
            found[(item.id, blocked)] = None
    return [(a, b) for (a, b) in found if a in ids and b in ids]


def relink(items: list[Item], edges: Edges) -> None:
    links: dict[str, tuple[list[str], list[str]]] = {i.id: ([], []) for i in items}
    for a, b in edges:
        links[b][0].append(a)
        links[a][1].append(b)
    for item in items:
        # Assigned only where they differ: the runner re-renders just the items a change touched
        # (plugkit.lifecycle.items_view), and an assignment through pydantic is not free either.
        blocked_by, blocking = links[item.id]
        if item.blocked_by != blocked_by:
            item.blocked_by = blocked_by
        if item.blocking != blocking:
            item.blocking = blocking


def find_cycle(ids: Iterable[str], edges: Edges, only_from: Optional[str] = None) -> Optional[list[str]]:
    """A cycle as [a, b, ..., a] along blocker -> blocked, or None (with only_from: a cycle
    reachable from that item). Iterative DFS: a long chain of items must not hit the recursion limit."""
    succ: dict[str, list[str]] = {i: [] for i in ids}
    for a, b in edges:
        succ[a].append(b)
    colour = dict.fromkeys(succ, 0)  # 0 unseen, 1 on the path, 2 done
    for start in succ if only_from is None else [only_from]:
        if colour[start]:
            continue
        path, stack = [start], [iter(succ[start])]
        colour[start] = 1
        while stack:
            nxt = next(stack[-1], None)
            if nxt is None:
                colour[path.pop()] = 2
                stack.pop()
            elif colour[nxt] == 1:
                return path[path.index(nxt):] + [nxt]
            elif colour[nxt] == 0:
                colour[nxt] = 1
                path.append(nxt)
                stack.append(iter(succ[nxt]))
    return None


def _checked_links(items: list[Item], item_id: str, blocked_by: Optional[list[str]],
                   blocking: Optional[list[str]], edges: Edges) -> Edges:
    ids = {i.id for i in items}
    for other in (blocked_by or []) + (blocking or []):
        if other not in ids:
            raise Invalid(f"no work item {other} (named as a dependency of {item_id})")
    # Drop the sides being replaced first, then add both new sides: a self-link named on
    # either side must survive to be caught as a cycle.
    if blocked_by is not None:
        edges = [(a, b) for (a, b) in edges if b != item_id]
    if blocking is not None:
        edges = [(a, b) for (a, b) in edges if a != item_id]
    added = [(a, item_id) for a in blocked_by or []] + [(item_id, b) for b in blocking or []]
    edges = list(dict.fromkeys(edges + added))
    # The graph was acyclic before this change, so any cycle runs through item_id: searching
    # from it alone names the cycle starting at the item being changed, and costs what the
    # change reaches rather than the whole .prd.
    cycle = find_cycle([i.id for i in items], edges, only_from=item_id)
    if cycle:
        raise Cycle(cycle)
    return edges


def next_id(items: list[Item]) -> str:
    taken = {i.id for i in items}
    # w<digits> (ids are ASCII by ID_PATTERN), without a regex per item: this runs on every add.
    n = 1 + max((int(i.id[1:]) for i in items if i.id[:1] == "w" and i.id[1:].isdigit()), default=0)
    while f"w{n}" in taken:
        n += 1
    return f"w{n}"


def add(items: list[Item], item: Item) -> Item:
    if any(i.id == item.id for i in items):
        raise Conflict(f"work item {item.id} already exists")
    wanted_by, wanted_blocking = list(item.blocked_by), list(item.blocking)
    item.blocked_by, item.blocking = [], []
    edges = _checked_links(items + [item], item.id, wanted_by, wanted_blocking, edges_of(items))
    items.append(item)
    relink(items, edges)
    return item


def get(items: list[Item], item_id: str) -> Item:
    for item in items:
        if item.id == item_id:
            return item
    raise NotFound(f"no work item {item_id} in .prd")


def set_links(items: list[Item], item_id: str, blocked_by: Optional[list[str]],
              blocking: Optional[list[str]]) -> None:
    get(items, item_id)
    relink(items, _checked_links(items, item_id, blocked_by, blocking, edges_of(items)))


def unfinished_blockers(items: list[Item], item: Item) -> list[str]:
    by_id = {i.id: i for i in items}
    return [b for b in item.blocked_by if by_id[b].status != "completed"]


def open_items(items: list[Item]) -> list[Item]:
    return [i for i in items if i.status != "completed"]


def ready(items: list[Item], limit: int = DEFAULT_WAVE) -> list[Item]:
    """The next wave: pending items whose blockers are all completed, in file order."""
    return [i for i in items if i.status == "pending" and not unfinished_blockers(items, i)][:limit]


def waves(items: list[Item]) -> list[list[str]]:
    """Every open item layered by dependency depth: wave 1 can start now (blockers done),
    wave 2 once wave 1 is done, and so on. Relies on the graph being acyclic."""
    done = {i.id for i in items if i.status == "completed"}
    left = [i for i in items if i.status != "completed"]
    layers: list[list[str]] = []
    while left:
        layer = [i.id for i in left if all(b in done for b in i.blocked_by)]
        if not layer:  # only a hand-made cycle gets here; never loop forever on it
            layers.append([i.id for i in left])
            break
        layers.append(layer)
        done.update(layer)
        left = [i for i in left if i.id not in done]
    return layers
