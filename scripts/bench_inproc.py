"""Server CPU per runner.info request, the runner's real app beside a trivial aiohttp handler:
load-robust where req/s on a shared machine is not (the CPU the server process spends is what
caps its throughput once cores are contended). Also a cProfile of the runner's side.

Usage: .venv/bin/python scripts/bench_inproc.py [CLIENTS] [CALLS_EACH] [--profile | --breakdown | --calls]

--breakdown: CPU per runner.info call, layer by layer without HTTP (the method alone, through
jsonrpcserver's public dispatch, through the runner's dispatch()), to say which layer a
throughput gap sits in.

--calls: Python function calls the server makes per runner.info request, by whose code they are
(aiohttp, asyncio, jsonrpcserver and oslash, the runner's own, ...), runner beside the trivial
handler. A count, not a time: it holds still on a loaded machine where CPU times swing 30%.
"""

import asyncio
import cProfile
import dataclasses
import os
import pstats
import secrets
import socket
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's sources

# One keep-alive connection sending runner.info and reading each answer whole.
CLIENT = r'''
import socket, sys
port, n, token = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
body = b'{"jsonrpc":"2.0","id":1,"method":"runner.info","params":{}}'
req = (f"POST /rpc HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n"
       f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body
s = socket.create_connection(("127.0.0.1", port))
for i in range(n):
    s.sendall(req)
    buf = b""
    while True:
        buf += s.recv(65536)
        head, sep, rest = buf.partition(b"\r\n\r\n")
        if sep:
            length = int(next(l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")).split(b":")[1])
            if len(rest) >= length:
                break
    if b" 200 " not in head.split(b"\r\n")[0]:
        sys.exit(f"not answered 200: {buf[:200]!r}")
'''


async def _trivial(sock: socket.socket):
    from aiohttp import web

    async def rpc(request):
        call = await request.json()
        return web.json_response({"jsonrpc": "2.0", "result": {"ok": True}, "id": call.get("id")})

    app = web.Application()
    app.router.add_post("/rpc", rpc)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock.listen()
    await web.SockSite(runner, sock).start()
    return runner


async def _runner(sock: socket.socket, token: str, home: str):
    from runner.boot import config as boot_config
    from runner.boot.compose import compose
    from runner.http import conn_guard
    from runner.system import logs, socket_owner

    logs.configure(os.path.join(home, "runner.log"), to_stderr=False)
    config = dataclasses.replace(boot_config.load(), home=home, port=sock.getsockname()[1])
    app = compose(config, token, "bench" + secrets.token_hex(3))
    return await conn_guard.serve(app, sock, conn_guard.make_guard(socket_owner.owner_uid))


async def _drive(port: int, token: str, clients: int, calls: int) -> None:
    procs = [await asyncio.create_subprocess_exec(sys.executable, "-c", CLIENT, str(port), str(calls), token)
             for _ in range(clients)]
    for proc in procs:
        if await proc.wait() != 0:
            raise SystemExit("a client failed")


async def measure(which: str, clients: int, calls: int, profile: bool) -> float:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port, token = sock.getsockname()[1], secrets.token_urlsafe(32)
    serving = await (_trivial(sock) if which == "trivial" else _runner(sock, token, tempfile.mkdtemp()))
    try:
        await _drive(port, token, 1, 200)  # warm
        prof = cProfile.Profile(time.thread_time) if profile else None
        began = time.process_time()
        if prof:
            prof.enable()
        await _drive(port, token, clients, calls)
        if prof:
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
        return (time.process_time() - began) / (clients * calls)
    finally:
        await serving.cleanup()


async def breakdown(calls: int) -> None:
    import json

    from jsonrpcserver import async_dispatch_to_serializable

    from runner.boot import config as boot_config
    from runner.boot.compose import compose
    from runner.http.keys import CONTEXT
    from runner.rpc.dispatch import _parsed, dispatch, validate_request
    from runner.rpc.namespaces import build_methods
    from runner.system import logs

    home = tempfile.mkdtemp()
    logs.configure(os.path.join(home, "runner.log"), to_stderr=False)
    config = dataclasses.replace(boot_config.load(), home=home, port=1)
    ctx = compose(config, secrets.token_urlsafe(32), "bench")[CONTEXT]
    methods, body = build_methods(), '{"jsonrpc":"2.0","id":1,"method":"runner.info","params":{}}'
    method = methods["runner.info"]
    layers = {
        "runner.info method alone": lambda: method(ctx),
        "jsonrpcserver async_dispatch_to_serializable": lambda: async_dispatch_to_serializable(
            json.loads(body), methods, context=ctx, deserializer=_parsed, validator=validate_request),
        "runner dispatch() (the route's call)": lambda: dispatch(body, methods, ctx, 100),
    }
    for label, call in layers.items():
        for _ in range(calls // 10):
            await call()
        began = time.process_time()
        for _ in range(calls):
            await call()
        print(f"{label}: {(time.process_time() - began) / calls * 1e6:.0f} us CPU a call")


def _owner(filename: str, name: str) -> str:
    for part in ("jsonrpcserver", "oslash", "aiohttp", "multidict", "yarl", "pydantic", "asyncio", "inspect.py"):
        if part in filename:
            return "jsonrpcserver" if part == "oslash" else part.removesuffix(".py")
    for part in ("/runner/", "/plugkit/"):
        if part in filename:
            return part.strip("/") + " (ours)"
    return "the rest of the stdlib" if "python3" in filename or filename.startswith("<frozen") else filename


async def call_counts(which: str, clients: int, each: int) -> dict[str, float]:
    import collections

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port, token = sock.getsockname()[1], secrets.token_urlsafe(32)
    serving = await (_trivial(sock) if which == "trivial" else _runner(sock, token, tempfile.mkdtemp()))
    try:
        await _drive(port, token, 1, 200)  # warm
        prof = cProfile.Profile()
        prof.enable()
        await _drive(port, token, clients, each)
        prof.disable()
    finally:
        await serving.cleanup()
    by: collections.Counter = collections.Counter()
    for (filename, _line, name), stat in pstats.Stats(prof).stats.items():  # type: ignore[attr-defined]
        if filename != "~":
            by[_owner(filename, name)] += stat[1]
            continue
        for (caller, _l, caller_name), counts in stat[4].items():  # a C call: its caller's
            by[_owner(caller, caller_name)] += counts[1]
    return {owner: n / (clients * each) for owner, n in by.items()}


def main() -> None:
    if "--calls" in sys.argv:
        ours, floor = asyncio.run(call_counts("runner", 8, 400)), asyncio.run(call_counts("trivial", 8, 400))
        print(f"Python calls per runner.info request: runner {sum(ours.values()):.0f}, "
              f"trivial aiohttp handler {sum(floor.values()):.0f}")
        for owner in sorted(ours, key=lambda o: -ours[o]):
            if ours[owner] >= 0.5:
                print(f"  {owner:40s} {ours[owner]:6.1f}   (trivial: {floor.get(owner, 0):.1f})")
        return
    if "--breakdown" in sys.argv:
        asyncio.run(breakdown(3000))
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    clients, calls = (int(args[0]) if args else 8), (int(args[1]) if len(args) > 1 else 800)
    profile = "--profile" in sys.argv
    if profile:
        asyncio.run(measure("runner", clients, calls, True))
        return
    trivial = asyncio.run(measure("trivial", clients, calls, False))
    ours = asyncio.run(measure("runner", clients, calls, False))
    print(f"server CPU per runner.info, {clients} clients: runner {ours * 1e6:.0f} us, "
          f"trivial aiohttp handler {trivial * 1e6:.0f} us, ratio {trivial / ours:.2f}x (throughput bound)")


if __name__ == "__main__":
    main()
