"""How tasks are described to the agent: exit codes, state lines, tables, follow-up
commands and the --json documents. No I/O with the runner."""

from client.wire import codec

from plugkit.vocab import TERMINAL_STATES


def finished(info: dict | None) -> bool:
    return info is not None and info["state"] in TERMINAL_STATES


def waiting(info: dict | None) -> bool:
    """Running, and blocked reading its stdin: only exec:type can move it on."""
    return info is not None and bool(info.get("waiting_for_input")) and not finished(info)


def waiting_line(me, tid: int) -> str:
    return f"task_{tid} is waiting for input: {me.command('exec:type', f'task_{tid}', 'TEXT')}, or --eof"


def input_rows(me, tid: int) -> list[tuple[str, str]]:
    name = f"task_{tid}"
    return [(me.command("exec:type", name, "TEXT"), "send TEXT and a newline to its stdin"),
            (me.command("exec:type", name, "--eof"), "close its stdin (end of input)"),
            (me.command("exec:close", name), "kill it and forget it")]


def exit_code(info: dict) -> int:
    """The shell's conventions: the task's own code, 124 for a timeout, 128+N for signal N."""
    state, sig, code = info["state"], info.get("signal"), info.get("exit_code")
    if state == "completed":
        return 0
    if state == "timed_out":
        return 124
    if sig:
        return 128 + sig
    if state == "killed":
        return 128 + 15  # ended on request, though it exited by itself on the TERM
    if info.get("reason") == "spawn_failed":
        return 126
    return code if code else 1


def size(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB"):
        if n < 1024 or unit == "MiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return ""


def seconds(ms: int | None) -> str:
    s = (ms or 0) / 1000
    return f"{s:.1f}s" if s < 600 else f"{s / 60:.0f}m"


def state_line(info: dict) -> str:
    """`task_7 running (bash, pid 12, 3.1s so far)` / `task_7 failed: exit 2 (python, 0.4s, cpu 0.31s)`."""
    name, state = f"task_{info['task_id']}", info["state"]
    if not finished(info):
        pid = f", pid {info['pid']}" if info.get("pid") else ""
        return f"{name} {state} ({info['lang']}{pid}, {seconds(info.get('duration_ms'))} so far)"
    how = []
    if info.get("exit_code") is not None:
        how.append(f"exit {info['exit_code']}")
    if info.get("signal"):
        how.append(f"signal {info['signal']}")
    if info.get("reason") not in (None, state, "exit_zero", "exit_nonzero", "signal", "timeout"):
        how.append(info["reason"])
    detail = f": {', '.join(how)}" if how else ""
    return f"{name} {state}{detail} ({info['lang']}, {seconds(info.get('duration_ms'))}{usage(info)})"


def usage(info: dict) -> str:
    """`, cpu 1.20s, peak 35.0 MiB` from the task's cgroup; empty where none measured it."""
    cpu, peak = info.get("cpu_s"), info.get("memory_peak_bytes")
    return (f", cpu {cpu:.2f}s" if cpu is not None else "") + (f", peak {size(peak)}" if peak is not None else "")


def task_table(tasks: list[dict]) -> str:
    """A compact table, one task a row, widths fitted to the content."""
    rows = [("TASK", "STATE", "EXIT", "LANG", "TIME", "OUTPUT", "PID")]
    for t in tasks:
        code = t.get("exit_code")
        exit_ = f"sig {t['signal']}" if t.get("signal") else ("-" if code is None else str(code))
        state = "waiting-input" if waiting(t) else t["state"]
        state += " (detached)" if t.get("detached") else ""  # outlives its session (exec --detach)
        rows.append((f"task_{t['task_id']}", state, exit_, t["lang"], seconds(t.get("duration_ms")),
                     size(t.get("bytes_out") or 0), str(t.get("pid") or "-")))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)


def followups(me, tid: int) -> list[tuple[str, str]]:
    """The commands that pick a backgrounded task up again, with the caller's session flags."""
    name = f"task_{tid}"
    return [(me.command("exec:status", name), "new output and its state"),
            (me.command("exec:sleep", name, "30"), "wait up to 30 s more, printing output"),
            (me.command("exec:close", name), "kill it and forget it")]


def print_followups(sink, me, tid: int, headline: str, follower=None, rows=None) -> None:
    """`rows`: (command, what it does) pairs; default followups(me, tid)."""
    if follower is not None and follower.skipping:
        sink.note(f"output past the first {size(follower.cursor)} is not shown here; "
                  f"`{me.command('exec:status', f'task_{tid}', '--full')}` prints the rest")
    rows = rows or followups(me, tid)
    width = max(len(cmd) for cmd, _ in rows)
    lines = "\n".join(f"  {cmd.ljust(width)}   {what}" for cmd, what in rows)
    sink.note(f"{headline}; it keeps running in the runner. Follow up with:\n{lines}")


def print_json(info: dict, sink, follower, nxt: list[str] | None = None, **extra: object) -> None:
    """The --json document of exec, exec:status and exec:sleep: one object, printed last."""
    done = finished(info)
    doc = {"task": info, "running": not done, "exit_code": exit_code(info) if done else None,
           "output": sink.chunks, "notes": sink.notes, "omitted": follower.omitted,
           "cuts": follower.cuts, "dropped": follower.dropped, "cursor": follower.cursor, **extra}
    if nxt:
        doc["next"] = nxt
    print(codec.dumps(doc))
