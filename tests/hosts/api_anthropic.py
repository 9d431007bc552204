"""Anthropic Messages (POST /v1/messages, SSE when `stream`), as Claude Code calls it."""

import itertools
import json

from aiohttp import web

from tests.hosts.script import Call, Limit, Say
from tests.hosts.sse import after_last, stream, texts

IDS = itertools.count(1)


def read(body: dict) -> tuple[bool, int, str, str]:
    messages = body.get("messages") or []
    said, newest = after_last(messages, lambda m: isinstance(m, dict) and m.get("role") == "assistant")
    # Side requests (titles, quota probes) offer no tools.
    return bool(body.get("tools")), said, newest, "\n".join(texts([body.get("system"), messages]))


def _blocks(answer) -> tuple[list[dict], str]:
    n = next(IDS)
    if isinstance(answer, Call):
        return [{"type": "tool_use", "id": f"toolu_{n:04d}", "name": answer.name, "input": answer.args}], "tool_use"
    return [{"type": "text", "text": answer.text}], "end_turn"


async def respond(request: web.Request, body: dict, answer) -> web.StreamResponse:
    blocks, stop = _blocks(answer if answer is not None else Say("ok"))
    model = body.get("model", "claude-fake")
    usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    msg = {"id": f"msg_{next(IDS):04d}", "type": "message", "role": "assistant", "model": model}
    if not body.get("stream"):
        return web.json_response({**msg, "content": blocks, "stop_reason": stop, "stop_sequence": None,
                                  "usage": usage})
    events: list = [("message_start", {"type": "message_start", "message": {
        **msg, "content": [], "stop_reason": None, "stop_sequence": None, "usage": {**usage, "output_tokens": 1}}})]
    for i, block in enumerate(blocks):
        if block["type"] == "text":
            events += [("content_block_start", {"type": "content_block_start", "index": i,
                                                "content_block": {"type": "text", "text": ""}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i,
                                                "delta": {"type": "text_delta", "text": block["text"]}})]
        else:
            events += [("content_block_start", {"type": "content_block_start", "index": i, "content_block": {
                           **block, "input": {}}}),
                       ("content_block_delta", {"type": "content_block_delta", "index": i, "delta": {
                           "type": "input_json_delta", "partial_json": json.dumps(block["input"])}})]
        events.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
    events += [("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": 5}}),
               ("message_stop", {"type": "message_stop"})]
    return await stream(request, events)


def limited(limit: Limit) -> web.Response:
    """A subscription's usage limit, as the Anthropic API refuses a request over it: 429, the
    unified limit's headers (status, reset, which claim) and no retry. Claude Code 2.1 reads
    these (its `Oda`/`xfp`) and, signed in with a claude.ai subscription, prints "You've hit your
    session limit · resets 3pm (UTC)" (`hJ`/`Vee`: the reset to the minute, in local time)."""
    body = {"type": "error", "error": {"type": "rate_limit_error",
                                       "message": "This request would exceed your account's rate limit."}}
    return web.json_response(body, status=429, headers={
        "anthropic-ratelimit-unified-status": "rejected", "anthropic-ratelimit-unified-reset": str(int(limit.reset_at)),
        "anthropic-ratelimit-unified-representative-claim": limit.claim, "x-should-retry": "false"})


async def count_tokens(request: web.Request, body: dict, answer) -> web.Response:
    return web.json_response({"input_tokens": 10})


# (method, path, handler, counts as a model request)
ROUTES = (("POST", "/v1/messages", respond, True), ("POST", "/v1/messages/count_tokens", count_tokens, False))
