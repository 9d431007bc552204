"""The runner's validated view of a workspace's items, keyed by the ledger's exact text of them.

Validating every item with pydantic and rendering every item as indented JSON on each gate
operation made a change cost the size of `.prd` (issue 31). The ledger's items text is the
version: while it is the text this process last parsed or wrote, the items parsed from it
are reused, and writing renders only the items whose fields differ from that version's (the
rest reuse their text, byte for byte what prd.dump gives).

Each version keeps its items' fields as parsed or written (never handed out) beside live
models. The workspace's writer (the one transaction holding its lock: `writing`) gets the
live models without a copy, and an operation that names what it changed (`dump(changed=)`)
costs what it changed: the rest carry over untouched. A transaction that failed half way,
or read the live models without writing them back, may have left them changed: the next
writer checks each against its fields first and makes the ones that differ again. Readers
(no lock) get fresh models made from the fields: a writer's half-made change is never theirs
to see. Another process writing the ledger changes the text, so this process parses again:
the cache can be stale only by being missed, never believed.
"""

import contextlib
import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any, Iterator, Optional

from plugkit.lifecycle import prd

MAX_WORKSPACES = 32  # a runner serves a few workspaces at a time; the rest parse again
_LISTS = ("acceptance", "edge_cases", "blocked_by", "blocking", "evidence")
# An item's fields as written: its values (lists copied), its extra keys, which were set.
Fields = tuple[dict, Optional[dict], frozenset]


@dataclass(frozen=True)
class _Version:
    text: str  # the ledger's items, exactly
    fields: dict[str, Fields]  # item id -> its fields in `text`, in its order; never handed out
    rendered: dict[str, str]  # item id -> its text inside `text` (filled as first needed)
    live: dict[str, prd.Item]  # models for the workspace's writer, checked against `fields`
    rev: Optional[int] = None  # the ledger's rev of these items, once known (runner.system.stores.gates)
    data: Optional[bytes] = None  # text, encoded: what .prd holds when the view is the items
    written: Optional[list[tuple[str, str]]] = None  # (id, text) the dump that made it rendered, in order


_versions: "OrderedDict[tuple[int, str], _Version]" = OrderedDict()
_lock = threading.Lock()
_writer = threading.local()  # .roots: root -> whether this thread's transaction holds unwritten live models
_suspect: set[tuple[int, str]] = set()  # versions whose live models a transaction may have left changed


def _key(ws: Any) -> tuple[int, str]:
    return id(ws.ledger), ws.root


@contextlib.contextmanager
def writing(ws: Any) -> Iterator[None]:
    """Marks this thread as the workspace's writer (call with its lock held)."""
    roots = _writer.__dict__.setdefault("roots", {})
    roots[ws.root] = False
    done = False
    try:
        yield
        done = True
    finally:
        if roots.pop(ws.root, False) or not done:
            with _lock:
                _suspect.add(_key(ws))


def _is_writer(ws: Any) -> bool:
    return ws.root in _writer.__dict__.get("roots", ())


def _get(ws: Any, text: Optional[str], rev: Optional[int] = None) -> Optional[_Version]:
    """The cached version whose rev is `rev` or, without one, whose text is `text`."""
    with _lock:
        v = _versions.get(_key(ws))
        if v is not None:
            _versions.move_to_end(_key(ws))
    if v is None:
        return None
    if rev is not None and v.rev is not None:
        return v if v.rev == rev else None
    return v if text is not None and (v.text is text or v.text == text) else None


def _keep(ws: Any, v: _Version) -> None:
    with _lock:
        _versions[_key(ws)] = v
        _versions.move_to_end(_key(ws))
        while len(_versions) > MAX_WORKSPACES:
            _versions.popitem(last=False)


def _fields(item: prd.Item) -> Fields:
    values = dict(item.__dict__)
    for name in _LISTS:
        values[name] = list(values[name])
    extra = item.__pydantic_extra__
    return values, copy.deepcopy(extra) if extra else extra, frozenset(item.__pydantic_fields_set__)


def _model(fields: Fields) -> prd.Item:
    """A model of its own from an item's fields: what pydantic's __copy__ does (Item has no
    private attributes), with the lists copied too."""
    values, extra, was_set = fields
    out = _new(prd.Item)
    own = dict(values)
    for name in _LISTS:
        own[name] = list(own[name])
    _set(out, "__dict__", own)
    _set(out, "__pydantic_extra__", copy.deepcopy(extra) if extra else extra)
    _set(out, "__pydantic_fields_set__", set(was_set))
    _set(out, "__pydantic_private__", None)
    return out


_new = object.__new__
_set = object.__setattr__


def _same(item: prd.Item, fields: Fields) -> bool:
    return item.__dict__ == fields[0] and item.__pydantic_extra__ == fields[1]


def items(ws: Any, text: str, rev: Optional[int] = None) -> list[prd.Item]:
    """The ledger's items (text, of rev when known) as models the caller may change: the live
    ones for the workspace's writer, fresh ones for anyone else."""
    v = _get(ws, text, rev)
    if v is None:
        data = text.encode()
        parsed = prd.parse(data)
        v = _Version(text, {i.id: _fields(i) for i in parsed}, {}, {i.id: i for i in parsed}, rev, data)
        _keep(ws, v)
    return _hand_out(ws, v)


def items_at(ws: Any, rev: Optional[int]) -> Optional[list[prd.Item]]:
    """As items(), from the cached version of that rev without its text; None when not cached."""
    v = _get(ws, None, rev) if rev is not None else None
    return _hand_out(ws, v) if v is not None else None


def holds(ws: Any, rev: Optional[int]) -> bool:
    """Whether the items of that rev are cached (their text need not be read)."""
    return rev is not None and _get(ws, None, rev) is not None


def view_at(ws: Any, rev: Optional[int]) -> Optional[bytes]:
    """The items' text of that rev as bytes, when cached: a view that is the items is compared
    against these rather than read from the ledger on every state-only operation."""
    v = _get(ws, None, rev) if rev is not None else None
    if v is None:
        return None
    if v.data is None:
        v = replace(v, data=v.text.encode())
        _keep(ws, v)
    return v.data


def written(ws: Any, text: str) -> Optional[list[tuple[str, str]]]:
    """The (id, text) of each item the dump that made `text` rendered (new ones last, in order);
    None when it compared every item (store the whole list then)."""
    v = _get(ws, text)
    return v.written if v is not None else None


def stamp(ws: Any, text: str, rev: Optional[int]) -> None:
    """The ledger stored `text` as `rev`: the version is found by it from now on."""
    v = _get(ws, text)
    if v is not None and rev is not None:
        _keep(ws, replace(v, rev=rev))


def _hand_out(ws: Any, v: _Version) -> list[prd.Item]:
    if not _is_writer(ws):
        return [_model(f) for f in v.fields.values()]
    with _lock:
        suspect = _key(ws) in _suspect
        _suspect.discard(_key(ws))
    if suspect and any(not _same(m, v.fields[i]) for i, m in v.live.items()):
        v = replace(v, live={i: _model(f) for i, f in v.fields.items()})
        _keep(ws, v)
    _writer.roots[ws.root] = True  # handed out: unless dump takes them back, the next writer checks
    return list(v.live.values())


def dump(ws: Any, before: Optional[str], now: list[prd.Item], changed: Optional[dict[str, prd.Item]] = None,
         rev: Optional[int] = None) -> str:
    """prd.dump(now) as text, rendering only the items that differ from version `before` (its
    text, or its rev) (changed: those items by id, known to the caller; else each item is compared with
    the version's); `now` becomes the version the next call finds (its models the writer's live ones)."""
    v = _get(ws, before, rev)
    if v is not None and changed is not None and len(now) == len(v.fields) + len(changed.keys() - v.fields.keys()):
        out = _dump_changed(ws, v, now, changed)
    else:
        out = _dump_compared(ws, v, now)
    if _is_writer(ws):
        _writer.roots[ws.root] = False  # the live models are what was written
    return out


def _dump_changed(ws: Any, v: _Version, now: list[prd.Item], changed: dict[str, prd.Item]) -> str:
    # Items only ever change in place or are appended, so the version's order plus the new
    # ids (appended in `now`'s order) is `now`'s order; copies of its dicts, not a pass in Python.
    fields, rendered, live = dict(v.fields), dict(v.rendered), dict(v.live)
    new = [i.id for i in now[len(v.fields):]]
    live.update((i.id, i) for i in now[len(v.fields):])
    live.update(changed)
    order = [i for i in changed if i in v.fields] + new
    for item_id in order:
        fields[item_id] = _fields(live[item_id])
        rendered[item_id] = prd.render(live[item_id])
    rows: Optional[list[tuple[str, str]]] = [(i, rendered[i]) for i in order]
    if len(rendered) != len(fields):
        # A version just parsed renders lazily, once; the ledger then stores every row as
        # rendered here (written=None), so its rows are this text whatever wrote them before.
        rendered = {i: rendered.get(i) or prd.render(live[i]) for i in fields}
        rows = None
    out = prd.join(list(rendered.values()))
    _keep(ws, _Version(out, fields, rendered, live, written=rows))
    return out


def _dump_compared(ws: Any, v: Optional[_Version], now: list[prd.Item]) -> str:
    fields: dict[str, Fields] = {}
    rendered: dict[str, str] = {}
    for item in now:
        old = v.fields.get(item.id) if v is not None else None
        if v is not None and old is not None and _same(item, old):
            fields[item.id] = old  # unchanged: the version's fields and text carry over
            text = v.rendered.get(item.id)
            rendered[item.id] = text if text is not None else prd.render(item)
        else:
            fields[item.id] = _fields(item)
            rendered[item.id] = prd.render(item)
    out = prd.join(list(rendered.values()))
    _keep(ws, _Version(out, fields, rendered, {i.id: i for i in now}))
    return out
