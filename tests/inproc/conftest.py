"""In-process fixtures: the real app from the composition root, served by aiohttp's test server."""

import dataclasses
import secrets

import pytest

from plugkit.config import Limits
from runner.boot import config as boot_config
from runner.boot.compose import compose
from runner.http.keys import CONTEXT
from tests.support.inproc import TOKEN
from tests.support.runner_home import free_port


@pytest.fixture
def make_client(aiohttp_client, tmp_path):
    """build(limits=, namespaces=, gates=, **settings): settings override RunnerConfig fields
    (browser_idle_s=0.3, ...) of the config a real runner would read from this environment."""

    async def build(limits: Limits | None = None, namespaces: tuple = (), gates: bool = True, **settings):
        port = free_port()
        config = dataclasses.replace(boot_config.load(), home=str(tmp_path), port=port, **settings,
                                     **({"limits": limits} if limits is not None else {}))
        app = compose(config, TOKEN, f"test{secrets.token_hex(4)}", namespaces=namespaces, gates=gates)
        client = await aiohttp_client(app, server_kwargs={"port": port})
        client.runtime = app[CONTEXT].runtime
        return client

    return build


@pytest.fixture(scope="session", autouse=True)
def structured_logging(tmp_path_factory):
    """Log as the daemon does (runner/system/logs.py), so caplog sees it."""
    from runner.system import logs

    logs.configure(str(tmp_path_factory.mktemp("logs") / "runner.log"), to_stderr=False)
