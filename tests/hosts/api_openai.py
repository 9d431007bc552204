"""OpenAI chat completions (Qwen Code) and Responses (Codex CLI), SSE when `stream`."""

import itertools
import json
import time

from aiohttp import web

from tests.hosts.script import Call, Say
from tests.hosts.sse import after_last, stream, texts

IDS = itertools.count(1)
MODEL_ITEMS = ("function_call", "custom_tool_call", "local_shell_call", "reasoning")


def read_chat(body: dict) -> tuple[bool, int, str, str]:
    messages = body.get("messages") or []
    said, newest = after_last(messages, lambda m: isinstance(m, dict) and m.get("role") == "assistant")
    return bool(body.get("tools")), said, newest, "\n".join(texts(messages))


def read_responses(body: dict) -> tuple[bool, int, str, str]:
    items = body.get("input") or []
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]

    def is_model(item: object) -> bool:
        return isinstance(item, dict) and (item.get("role") == "assistant" or item.get("type") in MODEL_ITEMS)

    said, newest = after_last(items, is_model)
    return bool(body.get("tools")), said, newest, "\n".join(texts([body.get("instructions"), items]))


async def chat(request: web.Request, body: dict, answer) -> web.StreamResponse:
    answer = answer if answer is not None else Say("ok")
    n = next(IDS)
    head = {"id": f"chatcmpl-{n}", "object": "chat.completion.chunk", "created": int(time.time()),
            "model": body.get("model", "fake")}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    if isinstance(answer, Call):
        call = {"id": f"call_{n:04d}", "type": "function",
                "function": {"name": answer.name, "arguments": json.dumps(answer.args)}}
        message, finish = {"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": answer.text}, "stop"
    if not body.get("stream"):
        return web.json_response({**head, "object": "chat.completion", "usage": usage,
                                  "choices": [{"index": 0, "message": message, "finish_reason": finish}]})
    delta = dict(message)
    if "tool_calls" in delta:
        delta["tool_calls"] = [{"index": 0, **c} for c in delta["tool_calls"]]
    return await stream(request, [
        (None, {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]}),
        (None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}),
        (None, {**head, "choices": [], "usage": usage}),
        (None, "[DONE]"),
    ])


async def responses(request: web.Request, body: dict, answer) -> web.StreamResponse:
    answer = answer if answer is not None else Say("ok")
    n = next(IDS)
    if isinstance(answer, Call) and answer.freeform:
        item = {"type": "custom_tool_call", "id": f"ctc_{n:04d}", "call_id": f"call_{n:04d}", "name": answer.name,
                "input": answer.args["input"], "status": "completed"}
    elif isinstance(answer, Call):
        item = {"type": "function_call", "id": f"fc_{n:04d}", "call_id": f"call_{n:04d}", "name": answer.name,
                "arguments": json.dumps(answer.args), "status": "completed"}
    else:
        item = {"type": "message", "id": f"msg_{n:04d}", "role": "assistant", "status": "completed",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}]}
    resp = {"id": f"resp_{n:04d}", "object": "response", "created_at": int(time.time()), "status": "completed",
            "model": body.get("model", "fake"), "output": [item],
            "usage": {"input_tokens": 10, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 5,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 15}}
    if not body.get("stream"):
        return web.json_response(resp)
    events: list = [("response.created", {"type": "response.created", "response": {**resp, "status": "in_progress",
                                                                                   "output": []}}),
                    ("response.output_item.added", {"type": "response.output_item.added", "output_index": 0,
                                                    "item": item})]
    if item["type"] == "message":
        events.append(("response.output_text.delta", {"type": "response.output_text.delta", "item_id": item["id"],
                                                      "output_index": 0, "content_index": 0, "delta": answer.text}))
    events += [("response.output_item.done", {"type": "response.output_item.done", "output_index": 0, "item": item}),
               ("response.completed", {"type": "response.completed", "response": resp})]
    return await stream(request, events)


async def models(request: web.Request, body: dict, answer) -> web.Response:
    return web.json_response({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "fake"}]})


ROUTES = (("POST", "/v1/chat/completions", chat, True), ("POST", "/v1/responses", responses, True),
          ("GET", "/v1/models", models, False))
READERS = {"/v1/chat/completions": read_chat, "/v1/responses": read_responses}
