"""The Gemini API (models/{m}:streamGenerateContent?alt=sse, :generateContent, :countTokens),
as Gemini CLI calls it. Side requests that want JSON (its routing classifier, its
next-speaker check) get an object built from their response schema."""

from aiohttp import web

from tests.hosts.script import Call, Say
from tests.hosts.sse import after_last, stream, texts


def read(body: dict) -> tuple[bool, int, str, str]:
    contents = body.get("contents") or []
    said, newest = after_last(contents, lambda c: isinstance(c, dict) and c.get("role") == "model")
    tools = [t for t in body.get("tools") or [] if isinstance(t, dict) and t.get("functionDeclarations")]
    return bool(tools), said, newest, "\n".join(texts([body.get("systemInstruction"), contents]))


def _fill(schema: object) -> object:
    """A value matching a JSON schema, preferring answers that end a turn ('user' speaks next)."""
    if not isinstance(schema, dict):
        return "ok"
    if schema.get("enum"):
        values = schema["enum"]
        return "user" if "user" in values else values[0]
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        return {k: _fill(v) for k, v in (schema.get("properties") or {}).items()}
    if kind in ("integer", "number"):
        return schema.get("minimum", 0)
    return {"array": [], "boolean": False}.get(kind, "ok")


def _candidate(body: dict, answer) -> dict:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    if answer is None and schema:
        import json

        answer = Say(json.dumps(_fill(schema)))
    answer = answer if answer is not None else Say("ok")
    part = {"functionCall": {"name": answer.name, "args": answer.args}} if isinstance(answer, Call) \
        else {"text": answer.text}
    return {"candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}}


async def generate(request: web.Request, body: dict, answer) -> web.StreamResponse:
    action = request.match_info["action"]
    if action == "countTokens":
        return web.json_response({"totalTokens": 10})
    if action == "streamGenerateContent":
        return await stream(request, [(None, _candidate(body, answer))])
    return web.json_response(_candidate(body, answer))


ROUTES = (("POST", "/v1beta/models/{model}:{action}", generate, True),)
