"""Server-sent events for the fake model APIs, and the text walk every API module shares."""

import json

from aiohttp import web


async def stream(request: web.Request, events: list[tuple[str | None, object]]) -> web.StreamResponse:
    """(event name or None, data) pairs; data dicts are JSON, strings go as they are."""
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
    await resp.prepare(request)
    for name, data in events:
        text = data if isinstance(data, str) else json.dumps(data)
        head = f"event: {name}\n" if name else ""
        await resp.write(f"{head}data: {text}\n\n".encode())
    await resp.write_eof()
    return resp


def texts(node: object) -> list[str]:
    """Every string under a JSON value, in order: what the model would read of it."""
    if isinstance(node, str):
        return [node]
    if isinstance(node, dict):
        return [t for v in node.values() for t in texts(v)]
    if isinstance(node, list):
        return [t for v in node for t in texts(v)]
    return []


def after_last(items: list, is_model) -> tuple[list[str], str]:
    """(the text of each model turn in the history, the text of every item after the last one)."""
    said = ["\n".join(texts(item)) for item in items if is_model(item)]
    last = max((i for i, item in enumerate(items) if is_model(item)), default=-1)
    return said, "\n".join(texts(items[last + 1:]))
