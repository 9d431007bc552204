"""The runner's validated view of a workspace's items, keyed by the ledger's exact text of them.

Validating every item with pydantic and rendering every item as indented JSON on each gate
operation made a change cost the size of `.prd` (issue 31). The ledger's items text is the
version: while it is the text this process last parsed or wrote, the items parsed from it
are reused (handed out as copies, so a transaction that fails leaves nothing behind and a
reader never sees a writer's half-made change), and writing renders only the items whose
fields differ from that version's (the rest reuse their text, byte for byte what prd.dump
gives). Another process writing the ledger changes the text, so this process parses again:
the cache can be stale only by being missed, never believed.
"""

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from plugkit.lifecycle import prd

MAX_WORKSPACES = 32  # a runner serves a few workspaces at a time; the rest parse again
_LISTS = ("acceptance", "edge_cases", "blocked_by", "blocking", "evidence")


@dataclass(frozen=True)
class _Version:
    text: str  # the ledger's items, exactly
    items: dict[str, prd.Item]  # parsed from it, in its order; never handed out or changed
    rendered: dict[str, str]  # item id -> its text inside `text` (filled as first needed)


_versions: "OrderedDict[tuple[int, str], _Version]" = OrderedDict()
_lock = threading.Lock()


def _key(ws: Any) -> tuple[int, str]:
    return id(ws.ledger), ws.root


def _get(ws: Any, text: str) -> "_Version | None":
    with _lock:
        v = _versions.get(_key(ws))
        if v is not None:
            _versions.move_to_end(_key(ws))
    return v if v is not None and (v.text is text or v.text == text) else None


def _keep(ws: Any, v: _Version) -> None:
    with _lock:
        _versions[_key(ws)] = v
        _versions.move_to_end(_key(ws))
        while len(_versions) > MAX_WORKSPACES:
            _versions.popitem(last=False)


def _copy(item: prd.Item) -> prd.Item:
    """Shallow, with its own lists: an in-place change to the copy never reaches the version.
    What pydantic's __copy__ does (Item has no private attributes), without copy.copy's
    dispatch: this runs for every item of every gate operation."""
    out = _new(prd.Item)
    d = dict(item.__dict__)
    for name in _LISTS:
        d[name] = list(d[name])
    _set(out, "__dict__", d)
    extra = item.__pydantic_extra__
    _set(out, "__pydantic_extra__", dict(extra) if extra is not None else None)
    _set(out, "__pydantic_fields_set__", set(item.__pydantic_fields_set__))
    _set(out, "__pydantic_private__", None)
    return out


_new = object.__new__
_set = object.__setattr__


def items(ws: Any, text: str) -> list[prd.Item]:
    """The ledger's items (text) as models the caller may change freely."""
    v = _get(ws, text)
    if v is None:
        parsed = prd.parse(text.encode())
        v = _Version(text, {i.id: i for i in parsed}, {})
        _keep(ws, v)
    return [_copy(i) for i in v.items.values()]


def _same(a: prd.Item, b: prd.Item) -> bool:
    return a.__dict__ == b.__dict__ and a.__pydantic_extra__ == b.__pydantic_extra__


def dump(ws: Any, before: str, now: list[prd.Item]) -> str:
    """prd.dump(now) as text, rendering only the items that differ from version `before`;
    `now` becomes the version the next call finds."""
    v = _get(ws, before)
    kept: dict[str, prd.Item] = {}
    rendered: dict[str, str] = {}
    for item in now:
        old = v.items.get(item.id) if v is not None else None
        if v is not None and old is not None and _same(old, item):
            kept[item.id] = old  # unchanged: the version's own model and text carry over
            text = v.rendered.get(item.id)
            rendered[item.id] = text if text is not None else prd.render(old)
        else:
            kept[item.id] = _copy(item)
            rendered[item.id] = prd.render(item)
    out = prd.join(list(rendered.values()))
    _keep(ws, _Version(out, kept, rendered))
    return out
