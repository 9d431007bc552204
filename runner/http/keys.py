"""The aiohttp AppKeys of the runner's app, in a leaf module: whoever needs the app's
parts (lifespans, tests) imports the key, never the module that builds the app."""

from typing import Awaitable, Callable

from aiohttp import web

from runner.rpc.context import Context

CONTEXT = web.AppKey("context", Context)
# The app's answer to one request (runner/http/app.py), served by runner/http/wire.py.
HANDLER = web.AppKey("handler", Callable[..., Awaitable])
