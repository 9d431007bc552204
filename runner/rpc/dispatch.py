"""Turns typed handlers into jsonrpcserver methods, and dispatches with clean errors.

Each handler takes (ctx, params_model) and returns a pydantic Result. The wrapper
validates params with the handler's model, answers a refusal (plugkit.refusals, by kind)
with its code from runner/rpc/errors.py and an RpcError with its own, and turns
anything unexpected into a generic internal error with a correlation id that is
in the log, so no exception text, traceback or path ever reaches a caller.
"""

import asyncio
import json
import secrets
from collections.abc import Mapping
from typing import Any, Awaitable, Callable, Type

from jsonrpcserver import Error, Success
from jsonrpcserver.async_dispatcher import call
from jsonrpcserver.dispatcher import create_request, to_response
from jsonrpcserver.response import ErrorResponse, ServerErrorResponse
from jsonrpcserver.result import MethodNotFoundResult
from jsonrpcserver.sentinels import NOID
from oslash.either import Left
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
    -32000: None,
}


def _serialize(response: Any) -> dict:
    if isinstance(response, Left):
        err: ErrorResponse = response._error
        error: dict[str, Any] = {"code": err.code, "message": err.message}
        if err.code in _GENERIC_DATA:
            hint = _GENERIC_DATA[err.code]
            if hint:
                error["data"] = hint
            if err.code == -32000:  # the library's "Server error": never show its text
                error = {"code": errors.INTERNAL_ERROR, "message": "Internal error"}
        elif isinstance(err.data, (dict, list)):
            error["data"] = err.data
        return {"jsonrpc": "2.0", "error": error, "id": err.id}
    ok = response._value
    return {"jsonrpc": "2.0", "result": ok.result, "id": ok.id}


_MESSAGES = {errors.PARSE_ERROR: "Parse error", errors.INVALID_REQUEST: "Invalid request"}


def _error(code: int, data: str) -> dict:
    return {"jsonrpc": "2.0", "error": {"code": code, "message": _MESSAGES[code], "data": data},
            "id": None}


_REQUEST_KEYS = frozenset({"jsonrpc", "method", "params", "id"})


def validate_request(request: Any) -> Any:
    """The library's request schema as plain checks: its jsonschema validation cost
    about a third of a millisecond per call, on every call."""
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


async def _dispatch_one(request: Any, methods: Mapping[str, Any], ctx: Context) -> Any:
    """One request object through the library's own steps (create_request, call, to_response)
    but for its argument check: that runs inspect.signature(method).bind on every call (~0.1 ms
    of a task.exec), and cannot fail for our methods, which all take (ctx, *args, **kwargs)
    (namespaces._counted wraps each one); `rpc` answers bad params itself, as -32602."""
    try:
        try:
            validate_request(request)
        except ValueError:
            return _error(errors.INVALID_REQUEST, _GENERIC_DATA[errors.INVALID_REQUEST])
        req = create_request(request)
        try:
            method = methods[req.method]
        except KeyError:
            result = Left(MethodNotFoundResult(req.method))
        else:
            result = await call(req, ctx, method)  # an exception in it: the library's internal error
        return None if req.id is NOID else _serialize(to_response(req, result))
    except Exception as exc:  # as the library: a fault of the dispatch itself is a server error
        log.exception("rpc_dispatch_error")
        return _serialize(Left(ServerErrorResponse(str(exc), None)))


async def dispatch(body: str, methods: dict, ctx: Context, max_batch: int) -> Any:
    """Returns a JSON-able dict, a list of them (batch), or None (notifications only).

    Batches are split here rather than in the library so that one malformed member
    gets its own Invalid Request reply instead of failing the whole batch (JSON-RPC 2.0 §6).
    """
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
