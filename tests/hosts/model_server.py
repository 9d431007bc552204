"""The scripted fake model: one aiohttp server on 127.0.0.1 (free port) in a thread,
speaking every model API the hosts use, playing a Script and recording each request.

Unknown paths are recorded too and answered 404, so a host that starts calling
something new shows up in `script.seen` rather than as a silent hang.
"""

import asyncio
import json
import threading
import time

from aiohttp import web

from tests.hosts import api_anthropic, api_gemini, api_openai
from tests.hosts.script import Hang, Limit, Script, Scripts, Seen

# API name -> (module, reader by path or one reader)
APIS = {"anthropic": (api_anthropic, api_anthropic.read), "openai": (api_openai, api_openai.READERS),
        "gemini": (api_gemini, api_gemini.read)}


class ModelServer:
    def __init__(self, script: Script | Scripts) -> None:
        self.script = script
        self.port = 0
        self.unknown: list[str] = []
        self._loop = asyncio.new_event_loop()
        self._runner: web.AppRunner | None = None
        self._stopping: asyncio.Event | None = None  # made on the server's loop; set when it stops
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, name="fake-model", daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> "ModelServer":
        self._thread.start()
        if not self._ready.wait(15) or not self.port:
            raise RuntimeError("the fake model server did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._start())
        self._ready.set()
        self._loop.run_forever()

    async def _start(self) -> None:
        self._stopping = asyncio.Event()
        app = web.Application(client_max_size=64 << 20)
        for api, (module, reader) in APIS.items():
            for method, path, handler, is_model in module.ROUTES:
                app.router.add_route(method, path, self._handler(api, handler, reader, is_model))
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = site._server.sockets[0].getsockname()[1]

    async def _stop(self) -> None:
        if self._stopping is not None:
            self._stopping.set()  # held (Hang) requests end first: cleanup waits for handlers
        if self._runner is not None:
            await self._runner.cleanup()

    def _handler(self, api: str, handler, reader, is_model: bool):
        async def handle(request: web.Request) -> web.StreamResponse:
            raw = await request.read()
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            if not is_model:
                return await handler(request, body, None)
            read = reader.get(request.path) if isinstance(reader, dict) else reader
            main, said, newest, everything = read(body)
            seen = Seen(api, request.path_qs, body, main, said, newest, everything)
            seen.answer = self.script.play(seen)
            if isinstance(seen.answer, Hang):
                assert self._stopping is not None
                await self._stopping.wait()
                return web.json_response({"error": {"message": "the fake model stopped"}}, status=503)
            if isinstance(seen.answer, Limit):
                seen.answered_at = time.monotonic()
                return APIS[api][0].limited(seen.answer)  # an API with no `limited` fails the test here
            try:
                return await handler(request, body, seen.answer)
            finally:
                seen.answered_at = time.monotonic()

        return handle

    async def _unknown(self, request: web.Request) -> web.Response:
        self.unknown.append(f"{request.method} {request.path_qs}")
        await request.read()
        return web.json_response({"error": {"message": "not faked", "type": "not_found"}}, status=404)
