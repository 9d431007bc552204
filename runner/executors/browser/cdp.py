"""pyppeteer on the DevTools pipe: its Connection reading and writing our PipeTransport instead
of a websocket, and the Browser built on it. Imported off the loop (pyppeteer takes ~100 ms).

pyppeteer's Connection keeps the websocket in `_ws` (entered with `async with`, then
`recv()`/`send()`/`close()`) and treats ConnectionResetError from `recv()` as a closed
connection: everything else of it, CDP sessions and targets included, is used as it is.
Its __init__ would build a websocket client for a URL, so we set the same attributes it sets,
with the transport in place of the client (pinned to pyppeteer 2.0.x in pyproject.toml).
"""

from __future__ import annotations

import asyncio
from typing import Any, Optional

from pyee import EventEmitter
from pyppeteer.browser import Browser
from pyppeteer.connection import Connection

from runner.system.cdp_pipe import PipeTransport

PIPE_URL = "pipe:"  # what Connection.url reports: there is no endpoint anyone could dial


class PipeConnection(Connection):
    def __init__(self, transport: PipeTransport, loop: asyncio.AbstractEventLoop) -> None:
        EventEmitter.__init__(self)
        self._url = PIPE_URL
        self._lastId = 0
        self._callbacks: dict[int, asyncio.Future] = {}
        self._delay = 0.0
        self._loop = loop
        self._sessions: dict = {}
        self._connected = False
        self._closeCallback = None
        self._ws = transport
        self._recv_fut = loop.create_task(self._recv_loop(), name="cdp-pipe-reader")


async def connect(transport: PipeTransport, viewport: Optional[dict]) -> Any:
    """pyppeteer's Browser over the pipe; Browser.close() asks Chromium to exit."""
    connection = PipeConnection(transport, asyncio.get_running_loop())
    contexts = (await connection.send("Target.getBrowserContexts")).get("browserContextIds", [])
    return await Browser.create(connection, contexts, False, viewport, None,
                                lambda: connection.send("Browser.close"))
