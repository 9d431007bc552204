"""`python -m runner [--detached]`: run the plugkit runner in the foreground."""

import asyncio
import os
import sys

from plugkit import paths


def main(argv: list[str]) -> int:
    detached = "--detached" in argv
    try:
        home = paths.ensure_home()
        port = paths.port()
    except (OSError, ValueError) as exc:
        print(f"plugkit runner: {exc}", file=sys.stderr)
        return 2
    # Heavy imports after the cheap checks: a misconfigured start fails fast.
    from runner import logs
    from runner.system import instance, ports

    try:
        lock = instance.acquire()
    except instance.AlreadyRunning as exc:
        print(f"plugkit runner: {exc}", file=sys.stderr)
        return 3
    try:
        logs.configure(paths.log_file(), to_stderr=not detached)
        try:
            sock = ports.bind(port)
        except ports.PortTaken as exc:
            logs.get().error("port_taken", port=port, pid=exc.holder.pid, command=exc.holder.command)
            print(f"plugkit runner: {exc}", file=sys.stderr)
            return 4
        from runner.server import serve

        asyncio.run(serve(sock, home, port))
        return 0
    finally:
        try:
            os.unlink(paths.pid_file())
        except OSError:
            pass
        lock.release()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
