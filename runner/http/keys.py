"""The aiohttp AppKeys of the runner's app, in a leaf module: whoever needs the app's
parts (lifespans, tests) imports the key, never the module that builds the app."""

from aiohttp import web

from runner.rpc.context import Context

CONTEXT = web.AppKey("context", Context)
