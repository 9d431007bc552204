"""OTLP/HTTP with JSON encoding on the runner's own port: POST /v1/metrics and /v1/logs, where a
`plugkit work` worker's host exports what it spent (runner/core/work/budget.py counts it).

Not the token's: the guard (runner/http/guards.py) checks Host and Origin, then leaves these
paths to the check here, a per-worker-attempt secret in the x-plugkit-telemetry header that the
runner put in that worker's OTEL_EXPORTER_OTLP_HEADERS. An absent or unknown secret is 401, so
nobody else (another local user, a page, a worker forging another's spend) reaches a budget;
the body is bounded (framing.py reads it, chunked allowed here alone); JSON only (protobuf is
415: every pinned host that can be pointed here sends JSON when told http/json)."""

import json

from aiohttp import web

from plugkit.work.telemetry import HEADER
from runner.http.replies import error, reply
from runner.rpc.context import Context
from runner.system import logs

log = logs.get("plugkit.http")

OTLP_PATHS = {"/v1/metrics": "metrics", "/v1/logs": "logs"}
MAX_OTLP_BYTES = 512 << 10  # one export; a host sends one every few seconds


def add_otlp_routes(app: web.Application, ctx: Context) -> None:
    async def receive(request: web.Request) -> web.StreamResponse:
        secret = request.headers.get(HEADER, "")
        manager = ctx.work.peek() if ctx.work is not None else None
        attempt = manager.metering(secret) if secret and manager is not None else None
        if attempt is None:  # before the body is parsed (framing.py has read it, bounded and timed)
            return _refused(request, "no worker telemetry secret this runner gave out" if not secret else
                            "an unknown worker telemetry secret")
        body = await request.read()
        if len(body) > MAX_OTLP_BYTES:
            return error(413, f"an OTLP export is at most {MAX_OTLP_BYTES} bytes", close=True)
        if request.content_type != "application/json":
            return error(415, "OTLP is received as JSON only: OTEL_EXPORTER_OTLP_PROTOCOL=http/json")
        try:
            payload = json.loads(body)
            manager.telemetry(attempt, OTLP_PATHS[request.path], payload)
        except (ValueError, RecursionError):
            return error(400, "not an OTLP/JSON export")
        return reply({})  # Export*ServiceResponse: everything accepted

    for path in OTLP_PATHS:
        app.router.add_post(path, receive)


def _refused(request: web.Request, why: str) -> web.Response:
    log.warning("request_refused", status=401, reason="otlp_secret", path=request.path)
    return error(401, f"{why}: OTLP here is for plugkit work's workers only")
