"""The page's handlers: the login link minted and redeemed, the page and its assets, the
read-only JSON API and its event stream. Every answer carries the CSP of access.py."""

import json
import os

from aiohttp import web

from runner.http.replies import error, reply
from runner.http.ui import data
from runner.http.ui.access import LINK_TTL_S, NO_SESSION, Access, cross_site_navigation, guarded, refuse, set_cookie
from runner.http.ui.events import KEEPALIVE_S, Watcher
from runner.rpc.context import Context

STATIC = os.path.join(os.path.dirname(__file__), "static")
ASSETS = {"app.js": "text/javascript", "app.css": "text/css"}
# The login's answer to a navigation another site (a local file) started: on to the page, same-site.
ONWARD = (b'<!doctype html><meta charset="utf-8"><meta name="referrer" content="no-referrer">'
          b'<meta http-equiv="refresh" content="0;url=/ui"><title>plugkit</title><a href="/ui">the page</a>')
API = sorted([*data.READERS, *data.ASYNC_READERS, "events"])


class Page:
    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self.access = Access(ctx.runtime.port)
        self.watcher = Watcher(ctx)

    def _refused(self, request: web.Request) -> "web.Response | None":
        foreign = self.access.foreign(request)
        if foreign is not None:
            return foreign
        if not self.access.signed_in(request):
            return refuse(request, 401, "no_session", NO_SESSION)
        return None

    async def mint(self, request: web.Request) -> web.StreamResponse:
        """POST /login (bearer token, through the runner's guard) -> {url, expires_in_s}."""
        port = self.ctx.runtime.port
        return reply({"url": f"http://127.0.0.1:{port}/ui/login?t={self.access.mint()}",
                      "expires_in_s": LINK_TTL_S})

    async def login(self, request: web.Request) -> web.StreamResponse:
        foreign = self.access.foreign(request, navigation=True)
        if foreign is not None:
            return foreign
        value = self.access.redeem(request.query.get("t", ""))
        if value is None:
            return refuse(request, 403, "bad_link", "this login link was used or expired: run `plugkit ui` for a new one")
        if cross_site_navigation(request):
            # A redirect would carry on the other site's navigation, and the browser sends no
            # SameSite=Strict cookie in it: this page of ours goes to /ui itself, same-site.
            response = web.Response(status=200, body=ONWARD, content_type="text/html", charset="utf-8")
        else:
            response = web.Response(status=303, headers={"Location": "/ui"})
        set_cookie(response, self.access.cookie, value)
        return guarded(response)

    async def page(self, request: web.Request) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        with open(os.path.join(STATIC, "index.html"), "rb") as f:
            return guarded(web.Response(body=f.read(), content_type="text/html", charset="utf-8"))

    async def asset(self, request: web.Request) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        name = request.match_info["name"]
        if name not in ASSETS:  # a table, never a path joined from the request
            return guarded(error(404, "no such asset"))
        with open(os.path.join(STATIC, name), "rb") as f:
            return guarded(web.Response(body=f.read(), content_type=ASSETS[name], charset="utf-8"))

    async def api(self, request: web.Request) -> web.StreamResponse:
        refused = self._refused(request)
        if refused is not None:
            return refused
        name = request.match_info["name"]
        if name == "events":
            return await self.events(request)
        if name in data.READERS:
            return guarded(reply(data.READERS[name](self.ctx)))
        if name in data.ASYNC_READERS:
            return guarded(reply(await data.ASYNC_READERS[name](self.ctx)))
        return guarded(error(404, f"no such API: /api/v1/ has {', '.join(API)}"))

    async def events(self, request: web.Request) -> web.StreamResponse:
        """text/event-stream: `event: version` with the new version each time it moves."""
        stream = guarded(web.StreamResponse(headers={"Content-Type": "text/event-stream"}))
        await stream.prepare(request)
        watcher = self.watcher
        watcher.listen()
        try:
            sent = None
            while not watcher.closed:
                version = await watcher.next(sent if sent is not None else -1, KEEPALIVE_S)
                if watcher.closed:
                    break  # the runner stops: the stream ends (the page's EventSource retries)
                if version != sent:
                    await stream.write(f"event: version\ndata: {json.dumps({'version': version})}\n\n".encode())
                    sent = version
                else:
                    await stream.write(b": alive\n\n")
        except (ConnectionResetError, ConnectionError):
            pass  # the page went away
        finally:
            watcher.leave()
        return stream

    async def close(self) -> None:
        await self.watcher.close()
