"""Calling the real app in-process: the test token, its headers, one JSON-RPC call."""

import json

TOKEN = "test-token-0123456789"


def auth(**extra: str) -> dict:
    return {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json", **extra}


class RpcError(Exception):
    def __init__(self, error: dict) -> None:
        super().__init__(error.get("message"))
        self.code, self.data = error["code"], error.get("data")


async def call(client, method: str, **params):
    """One JSON-RPC call through the real app; returns the result or raises RpcError."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    resp = await client.post("/rpc", data=json.dumps(body), headers=auth())
    reply = await resp.json()
    if "error" in reply:
        raise RpcError(reply["error"])
    return reply["result"]
