"""Turns typed handlers into jsonrpcserver methods, and dispatches through jsonrpcserver's
public API (async_dispatch_to_serializable).

Each handler takes (ctx, params_model) and returns a pydantic Result. The wrapper
validates params with the handler's model, answers a refusal (plugkit.refusals, by kind)
with its code from runner/rpc/errors.py and an RpcError with its own, and turns
anything unexpected into a generic internal error with a correlation id that is
in the log, so no exception text, traceback or path ever reaches a caller.

What is wrapped around the library's dispatch, and why:
- The body is parsed here, and each batch member is handed to the library on its own (as
  already-parsed data, through its `deserializer` hook): the library validates a batch as a
  whole, so one malformed member would fail every other (JSON-RPC 2.0 section 6 gives it its
  own Invalid Request); a batch is capped before anything runs; a body nesting past the
  parser's depth (RecursionError) is a parse error like any other.
- The request check is the library's `validator` hook with plain checks: its default
  jsonschema validation cost about a third of a millisecond per call.
- The library's error `data` for parse, invalid-request and server errors carries an
  exception's text: replaced by a fixed hint.
"""

import asyncio
import json
import secrets
from typing import Any, Awaitable, Callable, Type

from jsonrpcserver import Error, Success, async_dispatch_to_serializable
from pydantic import BaseModel, ValidationError

from plugkit import errors
from plugkit.protocol import Params
from plugkit.refusals import Refused
from runner.rpc import errors as rpc_errors
from runner.system import logs
from runner.rpc.context import Context  # also the namespaces' import of it

log = logs.get("plugkit.rpc")



Handler = Callable[[Context, Any], Awaitable[BaseModel]]


def rpc(model: Type[Params]) -> Callable[[Handler], Callable[..., Awaitable[Any]]]:
    """Decorate a handler; the result is a jsonrpcserver method taking (ctx, **params)."""

    def decorate(handler: Handler) -> Callable[..., Awaitable[Any]]:
        async def method(ctx: Context, *args: Any, **kwargs: Any) -> Any:
            if args:
                return Error(errors.INVALID_PARAMS, "params must be an object (named fields)")
            try:
                params = model.model_validate(kwargs, context=ctx.config.limits)  # bounds: protocol/bounds.py
            except ValidationError as exc:
                problems = _describe(exc)
                # The message names the field, so a one-line error is enough to fix the call.
                first = problems[0]
                return Error(errors.INVALID_PARAMS,
                             f"Invalid params: {first['field']}: {first['problem']}", problems)
            try:
                result = await handler(ctx, params)
            except (Refused, errors.RpcError) as raised:
                exc = rpc_errors.wire(raised) if isinstance(raised, Refused) else raised
                ctx.runtime.errors[exc.code] += 1
                data = {} if exc.data is None else {"data": exc.data}
                return Error(exc.code, exc.message, **data)
            except Exception:
                cid = secrets.token_hex(6)
                log.exception("rpc_internal_error", method=handler.__name__, correlation_id=cid)
                ctx.runtime.errors[errors.INTERNAL_ERROR] += 1
                return Error(errors.INTERNAL_ERROR, "Internal error",
                             {"correlation_id": cid, "next": "plugkit runner logs"})
            return Success(result.model_dump(mode="json"))

        method.__name__ = handler.__name__
        method.__doc__ = handler.__doc__
        method.params_model = model  # type: ignore[attr-defined]  # read by tests walking every method
        return method

    return decorate


def _describe(exc: ValidationError) -> list[dict]:
    """Field-level messages without echoing values back (they may be large or secret)."""
    return [
        {"field": ".".join(str(p) for p in e["loc"]) or "(params)",
         "problem": e["msg"].removeprefix("Value error, ")}
        for e in exc.errors(include_url=False, include_input=False)[:10]
    ]


# Error codes whose library-made `data` may carry an exception's text: replaced.
_GENERIC_DATA = {
    errors.PARSE_ERROR: "the body is not valid JSON",
    errors.INVALID_REQUEST: "not a JSON-RPC 2.0 request object (or batch of them)",
    errors.METHOD_NOT_FOUND: None,
}
SERVER_ERROR = -32000  # the library's own fault: never show its text
_MESSAGES = {errors.PARSE_ERROR: "Parse error", errors.INVALID_REQUEST: "Invalid request"}
_REQUEST_KEYS = frozenset({"jsonrpc", "method", "params", "id"})


def _error(code: int, data: str) -> dict:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": _MESSAGES[code], "data": data}, "id": None}


def validate_request(request: Any) -> Any:
    """The library's request schema as plain checks (its `validator` hook): raising is Invalid Request."""
    if not (isinstance(request, dict) and request.get("jsonrpc") == "2.0"
            and isinstance(request.get("method"), str) and request.keys() <= _REQUEST_KEYS):
        raise ValueError("invalid request")
    if "params" in request and not isinstance(request["params"], (list, dict)):
        raise ValueError("invalid params container")
    if "id" in request:
        rid = request["id"]
        if isinstance(rid, bool) or not isinstance(rid, (str, int, float, type(None))):
            raise ValueError("invalid id")
    return request


def _parsed(request: Any) -> Any:
    return request  # the library's deserializer hook: the body was parsed already


def _clean(reply: Any) -> Any:
    """The library's serialised reply with its exception texts replaced (_GENERIC_DATA)."""
    if reply is None or "error" not in reply:
        return reply
    code = reply["error"]["code"]
    if code == SERVER_ERROR:
        log.error("rpc_dispatch_error", data=reply["error"].get("data"))
        reply["error"] = {"code": errors.INTERNAL_ERROR, "message": "Internal error"}
    elif code in _GENERIC_DATA:
        hint = _GENERIC_DATA[code]
        reply["error"].pop("data", None)
        if hint:
            reply["error"]["data"] = hint
    elif not isinstance(reply["error"].get("data"), (dict, list)):
        reply["error"].pop("data", None)
    return reply


async def _dispatch_one(request: Any, methods: Any, ctx: Context) -> Any:
    return _clean(await async_dispatch_to_serializable(request, methods, context=ctx, deserializer=_parsed,
                                                      validator=validate_request))


async def dispatch(body: str, methods: Any, ctx: Context, max_batch: int) -> Any:
    """Returns a JSON-able dict, a list of them (batch), or None (notifications only)."""
    try:
        request = json.loads(body)
    except ValueError:
        return _error(errors.PARSE_ERROR, _GENERIC_DATA[errors.PARSE_ERROR])
    except RecursionError:  # 100,000 `[`: the parser's depth, not ours, ran out; was an HTTP 500
        return _error(errors.PARSE_ERROR, "the body nests deeper than the parser's limit")
    if not isinstance(request, list):
        return await _dispatch_one(request, methods, ctx)
    if not request:
        return _error(errors.INVALID_REQUEST, "empty batch")
    # Cap batches before anything runs: one POST must not start 10,000 tasks.
    if len(request) > max_batch:
        return _error(errors.INVALID_REQUEST, f"batch over {max_batch} calls; split it")
    replies = await asyncio.gather(*(_dispatch_one(r, methods, ctx) for r in request))
    replies = [r for r in replies if r is not None]
    return replies or None
