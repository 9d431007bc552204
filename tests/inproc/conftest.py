"""In-process fixtures: the real app from the composition root, served as the daemon serves it
(aiohttp behind the ConnGuard) on a loopback port, called with an aiohttp client."""

import dataclasses
import secrets
from types import SimpleNamespace

import aiohttp
import pytest
from aiohttp import web

from plugkit.config import Limits
from runner.boot import config as boot_config
from runner.boot.compose import compose
from runner.http import conn_guard
from runner.http.keys import CONTEXT
from runner.system import socket_owner
from tests.support.inproc import TOKEN
from tests.support.runner_home import bound_socket, free_port


class LiveClient:
    """What aiohttp's test client offered the tests (post, get, options; app, server.app,
    runtime; close), over a real ClientSession to the app served on its port."""

    def __init__(self, app: web.Application, app_runner: conn_guard.Serving, port: int) -> None:
        self.app, self.server = app, SimpleNamespace(app=app)
        self.runtime = app[CONTEXT].runtime
        self._runner, self._base = app_runner, f"http://127.0.0.1:{port}"
        self.session = aiohttp.ClientSession()
        self._closed = False

    def request(self, method: str, path: str, **kwargs):
        return self.session.request(method, self._base + path, **kwargs)

    def post(self, path: str, **kwargs):
        return self.request("POST", path, **kwargs)

    def get(self, path: str, **kwargs):
        return self.request("GET", path, **kwargs)

    def options(self, path: str, **kwargs):
        return self.request("OPTIONS", path, **kwargs)

    async def close(self) -> None:
        """The runner's stop: the site, then the app's cleanup chain (tasks, executors, ...)."""
        if not self._closed:
            self._closed = True
            await self.session.close()
            await self._runner.cleanup()


@pytest.fixture
async def make_client(tmp_path):
    """build(limits=, namespaces=, gates=, **settings): settings override RunnerConfig fields
    (browser_idle_s=0.3, ...) of the config a real runner would read from this environment."""
    made: list[LiveClient] = []

    async def build(limits: Limits | None = None, namespaces: tuple = (), gates: bool = True, **settings):
        port = free_port()
        config = dataclasses.replace(boot_config.load(), home=str(tmp_path), port=port, **settings,
                                     **({"limits": limits} if limits is not None else {}))
        app = compose(config, TOKEN, f"test{secrets.token_hex(4)}", namespaces=namespaces, gates=gates)
        app_runner = await conn_guard.serve(app, bound_socket(port), conn_guard.make_guard(socket_owner.owner_uid))
        client = LiveClient(app, app_runner, port)
        made.append(client)
        return client

    yield build
    for client in made:
        await client.close()


@pytest.fixture(scope="session", autouse=True)
def structured_logging(tmp_path_factory):
    """Log as the daemon does (runner/system/logs.py), so caplog sees it."""
    from runner.system import logs

    logs.configure(str(tmp_path_factory.mktemp("logs") / "runner.log"), to_stderr=False)
