"""`python -m runner [--detached]`: run the plugkit runner in the foreground."""

import asyncio
import os
import secrets
import sys

from plugkit import paths
from runner.boot.config import load as load_config


def raise_file_limit() -> None:
    """Soft RLIMIT_NOFILE up to the hard limit: a daemon handed the usual soft 1024 runs out
    of descriptors at ~1,000 connections, tasks' pipes and logs included; the hard limit is
    what this user may have anyway, so nothing is taken from anyone."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:  # Linux refuses an infinite NOFILE: take the kernel's ceiling
        try:
            with open("/proc/sys/fs/nr_open") as fh:
                hard = int(fh.read())
        except (OSError, ValueError):
            return
    if soft != resource.RLIM_INFINITY and soft < hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))
        except (ValueError, OSError):
            pass


def main(argv: list[str]) -> int:
    detached = "--detached" in argv
    try:
        # The one read of the environment: everything below gets this frozen config.
        config = load_config()
        home = paths.ensure_home(config.home)
    except (OSError, ValueError) as exc:
        print(f"plugkit runner: {exc}", file=sys.stderr)
        return 2
    raise_file_limit()
    # Set only by this runner's previous image in the environment of its in-place exec
    # (runner/boot/handover.py): popped before any part is built, so no task inherits it.
    from runner.system import handover as handover_file

    inherited = handover_file.Inherited.parse(os.environ.pop(handover_file.ENV, None))
    # Heavy imports after the cheap checks: a misconfigured start fails fast.
    from runner.system import logs
    from runner.system import instance, ports, reaper

    try:
        lock = instance.adopt(home, inherited.lock_fd) if inherited else instance.acquire(home)
    except instance.AlreadyRunning as exc:
        print(f"plugkit runner: {exc}", file=sys.stderr)
        return 3
    try:
        logs.keep_rich_out()  # structlog would import it: 0.1-0.4 s of the cold start (logs.py)
        logs.configure(paths.log_file(home), to_stderr=not detached)
        from runner.boot.adopt import inherit

        taken = inherit(home, config.port, inherited)
        runner_id = taken.runner_id or reaper.make_runner_id(os.getpid(), secrets.token_hex(4))
        # Before binding: what a crashed runner left behind must not race our own tasks.
        report = reaper.reap_orphans(home, runner_id)
        for dead, task_id, pids in report.trees:
            logs.get().warning("orphans_reaped", dead_runner_id=dead,
                               task_id=int(task_id) if task_id.isdecimal() else task_id, pids=list(pids))
        if report.runners:
            logs.get().warning("boot_reap_done", runners=len(report.runners), killed=report.killed,
                               survivors=list(report.survivors), ms=round(report.elapsed_s * 1000, 1))
        from runner.boot.serve import serve

        def bind():  # after the imports and the app's startup: a listening port is answered at once
            if taken.sock is not None:  # the previous image's: clients in its backlog are answered now
                return taken.sock
            return ports.bind(config.port, on_held=lambda held: logs.get().warning(
                "port_held_retrying", port=config.port, connections=held, retry_s=ports.HELD_RETRY_S))

        try:
            asyncio.run(serve(bind, config, runner_id, report, lock=lock, handover=taken.handover))
        except ports.PortTaken as exc:
            logs.get().error("port_taken", port=config.port, pid=exc.holder.pid, command=exc.holder.command)
            print(f"plugkit runner: {exc}", file=sys.stderr)
            return 4
        return 0
    finally:
        try:
            os.unlink(paths.pid_file(home))
        except OSError:
            pass
        lock.release()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
