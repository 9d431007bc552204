"""Server CPU per runner.info request, the runner's real app beside a trivial aiohttp handler:
load-robust where req/s on a shared machine is not (the CPU the server process spends is what
caps its throughput once cores are contended). Also a cProfile of the runner's side.

Usage: .venv/bin/python scripts/bench_inproc.py [CLIENTS] [CALLS_EACH] [--profile | --breakdown]

--breakdown: CPU per runner.info call, layer by layer without HTTP (the method alone, through
jsonrpcserver's public dispatch, through the runner's dispatch()), to say which layer a
throughput gap sits in.
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


def main() -> None:
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
