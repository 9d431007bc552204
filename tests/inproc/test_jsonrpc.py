"""JSON-RPC 2.0 semantics through the real app: codes, batches, notifications, no leaks."""

import json
import logging

from plugkit.errors import NOT_FOUND, RpcError
from plugkit.protocol import NoParams, RunnerInfo
from runner.rpc.dispatch import rpc
from tests.support.inproc import auth


def call(method, params=None, id=1):
    msg = {"jsonrpc": "2.0", "method": method, "params": params if params is not None else {}}
    if id is not None:
        msg["id"] = id
    return msg


async def post(client, payload):
    data = payload if isinstance(payload, str) else json.dumps(payload)
    resp = await client.post("/rpc", data=data, headers=auth())
    return resp.status, (await resp.text())


class Boom:
    """A namespace whose methods fail in the ways real ones can."""

    @staticmethod
    @rpc(NoParams)
    async def explode(ctx, params):
        raise ValueError("secret detail /home/someone/.ssh/id_rsa")

    @staticmethod
    @rpc(NoParams)
    async def missing(ctx, params):
        raise RpcError(NOT_FOUND, "no task 7 in this session", {"next": "plugkit exec:tasks"})

    METHODS = {"test.explode": explode, "test.missing": missing}


async def test_runner_info(make_client):
    client = await make_client()
    status, text = await post(client, call("runner.info"))
    result = json.loads(text)["result"]
    RunnerInfo.model_validate(result)
    assert result["port"] == client.runtime.port


async def test_standard_error_codes(make_client):
    client = await make_client()
    cases = [
        ("{not json", -32700),
        (json.dumps({"foo": 1}), -32600),
        (json.dumps([]), -32600),
        (json.dumps({"jsonrpc": "1.0", "method": "runner.info", "id": 1}), -32600),
        (json.dumps(call("no.such")), -32601),
        (json.dumps(call("runner.info", {"unexpected": True})), -32602),
        (json.dumps(call("runner.info", [1, 2])), -32602),
    ]
    for body, code in cases:
        status, text = await post(client, body)
        assert status == 200
        assert json.loads(text)["error"]["code"] == code, body


async def test_application_errors_keep_their_code_and_hint(make_client):
    client = await make_client(namespaces=(Boom,))
    _, text = await post(client, call("test.missing"))
    error = json.loads(text)["error"]
    assert error == {"code": NOT_FOUND, "message": "no task 7 in this session",
                     "data": {"next": "plugkit exec:tasks"}}


async def test_internal_errors_hide_details_but_log_a_correlation_id(make_client, caplog):
    client = await make_client(namespaces=(Boom,))
    with caplog.at_level(logging.ERROR):
        _, text = await post(client, call("test.explode"))
    error = json.loads(text)["error"]
    assert error["code"] == -32603
    assert "secret" not in text and "/home" not in text and "Traceback" not in text
    cid = error["data"]["correlation_id"]
    assert cid in caplog.text and "secret detail" in caplog.text


async def test_batch_with_mixed_valid_and_invalid_calls(make_client):
    client = await make_client()
    batch = [call("runner.info", id=1), call("nope", id=2), call("runner.info", {"x": 1}, id=3),
             {"id": 4}, call("runner.info", id=None)]
    _, text = await post(client, batch)
    replies = {r["id"]: r for r in json.loads(text) if r.get("id") is not None}
    assert "result" in replies[1]
    assert replies[2]["error"]["code"] == -32601
    assert replies[3]["error"]["code"] == -32602
    assert len(json.loads(text)) == 4  # the notification gets no entry; the bad object does


async def test_notifications_get_no_response_body(make_client):
    client = await make_client()
    status, text = await post(client, call("runner.info", id=None))
    assert status == 204 and text == ""
    status, text = await post(client, [call("runner.info", id=None), call("runner.info", id=None)])
    assert status == 204 and text == ""
    assert client.runtime.requests["runner.info"] == 3


async def test_invalid_utf8_body_is_a_parse_error(make_client):
    client = await make_client()
    resp = await client.post("/rpc", data=b"\xff\xfe{", headers=auth())
    assert (await resp.json())["error"]["code"] == -32700


async def test_a_notification_gets_no_reply_even_when_it_fails(make_client):
    client = await make_client(namespaces=(Boom,))
    for method in ("no.such", "test.explode", "test.missing"):
        status, text = await post(client, call(method, id=None))
        assert status == 204 and text == "", method
    status, text = await post(client, call("runner.info", [1], id=None))  # bad params, no id: silent too
    assert status == 204 and text == ""


async def test_an_invalid_request_is_answered_with_a_null_id(make_client):
    client = await make_client()
    _, text = await post(client, {"jsonrpc": "2.0", "method": 7, "id": 5})
    reply = json.loads(text)
    assert reply["id"] is None and reply["error"]["code"] == -32600
    _, text = await post(client, call("no.such", id="abc"))
    reply = json.loads(text)
    assert reply == {"jsonrpc": "2.0", "error": {"code": -32601, "message": "Method not found"}, "id": "abc"}
