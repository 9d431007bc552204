"""Work items: `.prd` at the workspace root, a JSON array, and its dependency graph.

`blocked_by` and `blocking` are two views of one relation (a blocks b <=> b.blocked_by
holds a <=> a.blocking holds b). Every write rebuilds both from one edge set, so an edit
to either side (or a hand edit of the file that touched one side only) leaves them
consistent; references to ids that do not exist are dropped on load. A change that
would close a cycle is refused with the cycle spelled out.
"""

import json
import re
from typing import Literal, Optional

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from plugkit.lifecycle.errors import Conflict, Cycle, Invalid, NotFound

ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
Status = Literal["pending", "in_progress", "completed", "blocked"]
Effort = Literal["small", "medium", "large"]
Risk = Literal["low", "medium", "high", "critical"]
DEFAULT_WAVE = 3
_W_ID = re.compile(r"^w([0-9]+)$", re.MULTILINE)


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


def _cycle_through(by_id: dict[str, Item], item_id: str, blocked_by: list[str],
                   blocking: list[str]) -> Optional[list[str]]:
    """A cycle [item_id, ..., item_id] the item's new links would close, or None. The graph was
    acyclic before, so any cycle runs through the item: a search from it along `blocking`
    costs what the change reaches, never the whole .prd (issue 31). Edges into the item are
    exactly its new blockers; everyone else's other edges are as they stand."""
    into = set(blocked_by)

    def succ(node: str) -> list[str]:
        if node == item_id:
            return blocking + [item_id] if item_id in into else blocking
        out = [b for b in by_id[node].blocking if b != item_id]
        return out + [item_id] if node in into else out

    path, stack, colour = [item_id], [iter(succ(item_id))], {item_id: 1}  # 1 on the path, 2 done
    while stack:
        nxt = next(stack[-1], None)
        if nxt is None:
            colour[path.pop()] = 2
            stack.pop()
        elif colour.get(nxt) == 1:
            return path[path.index(nxt):] + [nxt]
        elif nxt not in colour:
            colour[nxt] = 1
            path.append(nxt)
            stack.append(iter(succ(nxt)))
    return None


def link(by_id: dict[str, Item], item_id: str, blocked_by: Optional[list[str]],
         blocking: Optional[list[str]]) -> set[str]:
    """Sets the item's blockers and/or the items it blocks (None: that side as it is), and the
    other side of each link that changed; returns the ids of every item it changed. Touches
    only the item and its old and new neighbours (a whole-graph rebuild per change made an
    add cost the size of .prd)."""
    item = by_id[item_id]
    for other in (blocked_by or []) + (blocking or []):
        if other not in by_id:
            raise Invalid(f"no work item {other} (named as a dependency of {item_id})")
    new_by = list(dict.fromkeys(blocked_by)) if blocked_by is not None else list(item.blocked_by)
    new_blocking = list(dict.fromkeys(blocking)) if blocking is not None else list(item.blocking)
    cycle = _cycle_through(by_id, item_id, new_by, new_blocking)
    if cycle:
        raise Cycle(cycle)
    changed = {item_id} if (new_by, new_blocking) != (item.blocked_by, item.blocking) else set()
    for side, _other, old, new in (("blocking", "blocked_by", item.blocked_by, new_by),
                                 ("blocked_by", "blocking", item.blocking, new_blocking)):
        for gone in set(old) - set(new):  # e.g. a blocker no longer blocks the item
            getattr(by_id[gone], side).remove(item_id)
            changed.add(gone)
        for came in new:
            if came not in old:
                getattr(by_id[came], side).append(item_id)
                changed.add(came)
    if item.blocked_by != new_by:
        item.blocked_by = new_by
    if item.blocking != new_blocking:
        item.blocking = new_blocking
    return changed


def next_id(items: list[Item], by_id: Optional[dict[str, Item]] = None) -> str:
    taken = by_id if by_id is not None else {i.id: i for i in items}
    # w<digits>: one regex over all the ids at once rather than a Python step per item (this
    # runs on every add). Ids hold no newline (ID_PATTERN), so each line is one id.
    n = 1 + max(map(int, _W_ID.findall("\n".join(taken))), default=0)
    while f"w{n}" in taken:
        n += 1
    return f"w{n}"


def add(items: list[Item], item: Item, by_id: Optional[dict[str, Item]] = None) -> set[str]:
    """Appends the item, linked as it names; returns the ids of every item changed (its own too)."""
    by_id = by_id if by_id is not None else {i.id: i for i in items}
    if item.id in by_id:
        raise Conflict(f"work item {item.id} already exists")
    wanted_by, wanted_blocking = list(item.blocked_by), list(item.blocking)
    item.blocked_by, item.blocking = [], []
    by_id[item.id] = item
    try:
        changed = link(by_id, item.id, wanted_by, wanted_blocking)
    except Invalid:
        del by_id[item.id]
        raise
    items.append(item)
    return changed | {item.id}


def get(items: list[Item], item_id: str) -> Item:
    for item in items:
        if item.id == item_id:
            return item
    raise NotFound(f"no work item {item_id} in .prd")


def set_links(items: list[Item], item_id: str, blocked_by: Optional[list[str]],
              blocking: Optional[list[str]], by_id: Optional[dict[str, Item]] = None) -> set[str]:
    by_id = by_id if by_id is not None else {i.id: i for i in items}
    if item_id not in by_id:
        raise NotFound(f"no work item {item_id} in .prd")
    return link(by_id, item_id, blocked_by, blocking)


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
