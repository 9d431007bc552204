"""In-process fixtures: the real app from make_app(), served by aiohttp's test server."""

import secrets

import pytest

from plugkit.config import Limits
from runner.http.app import make_app
from runner.rpc.runtime import Runtime
from tests.helpers import free_port

TOKEN = "test-token-0123456789"


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


def auth(**extra: str) -> dict:
    return {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **extra}


@pytest.fixture(scope="session", autouse=True)
def structured_logging(tmp_path_factory):
    """Route structlog through stdlib logging, as the daemon does, so caplog sees it."""
    from runner.system import logs

    logs.configure(str(tmp_path_factory.mktemp("logs") / "runner.log"), to_stderr=False)


class RpcError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(error.get("message"))
        self.code, self.data = error["code"], error.get("data")


async def call(client, method: str, **params):
    """One JSON-RPC call through the real app; returns the result or raises RpcError."""
    import json

    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    resp = await client.post("/rpc", data=json.dumps(body), headers=auth())
    reply = await resp.json()
    if "error" in reply:
        raise RpcError(reply["error"])
    return reply["result"]
