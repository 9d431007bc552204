"""The runner's HTTP answers: JSON bodies, and refusals that say whether the connection closes."""

import json
from typing import Optional

from aiohttp import web


def reply(data: object, status: int = 200) -> web.Response:
    return web.Response(status=status, body=json.dumps(data).encode(), content_type="application/json",
                        charset="utf-8")


def error(status: int, text: str, close: bool = False, headers: Optional[dict[str, str]] = None) -> web.Response:
    """{"error": text}; close=True: the connection ends after it (the request was ambiguous or
    too big, so nothing after it on the connection can be trusted to start where it seems to)."""
    response = reply({"error": text}, status)
    if headers:
        response.headers.update(headers)
    if close:
        response.force_close()
    return response
