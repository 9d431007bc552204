"""In-process fixtures: the real app from make_app(), served by aiohttp's test server."""

import secrets

import pytest

from plugkit.config import Limits
from runner.http.app import make_app
from runner.rpc.runtime import Runtime
from tests.support.inproc import TOKEN
from tests.support.runner_home import free_port


@pytest.fixture
def make_client(aiohttp_client, tmp_path):
    async def build(limits: Limits | None = None, namespaces: tuple = (), services=None):
        port = free_port()
        runtime = Runtime(home=str(tmp_path), port=port, token=TOKEN, runner_id=f"test{secrets.token_hex(4)}")
        app = make_app(runtime, limits=limits, namespaces=namespaces, services=services)
        client = await aiohttp_client(app, server_kwargs={"port": port})
        client.runtime = runtime
        return client

    return build


@pytest.fixture(scope="session", autouse=True)
def structured_logging(tmp_path_factory):
    """Route structlog through stdlib logging, as the daemon does, so caplog sees it."""
    from runner.system import logs

    logs.configure(str(tmp_path_factory.mktemp("logs") / "runner.log"), to_stderr=False)
