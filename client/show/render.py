"""How tasks are described to the agent: exit codes, state lines, tables, follow-up
commands and the --json documents. No I/O with the runner."""

from plugkit import codec

from plugkit.vocab import TERMINAL_STATES


def finished(info: dict | None) -> bool:
    return info is not None and info["state"] in TERMINAL_STATES


def waiting(info: dict | None) -> bool:
    """Running, and blocked reading its stdin: only exec:type can move it on."""
    return info is not None and bool(info.get("waiting_for_input")) and not finished(info)


def waiting_head(tid: int) -> str:
    """The headline over the input rows (exec:type TEXT, --eof): they name the commands, once."""
    return f"task_{tid} is waiting for input on its stdin"


def waiting_line(me, tid: int) -> str:
    return f"task_{tid} is waiting for input: {me.command('exec:type', f'task_{tid}', 'TEXT')}, or --eof"


def input_rows(me, tid: int) -> list[tuple[str, str]]:
    name = f"task_{tid}"
    return [(me.command("exec:type", name, "TEXT"), "send TEXT and a newline to its stdin"),
            (me.command("exec:type", name, "--eof"), "close its stdin (end of input)"),
            (me.command("exec:close", name), "kill it (its record stays; --forget drops it)")]


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


def state_line(info: dict, detail: bool = False) -> str:
    """`task_7 running (bash, pid 12, 3.1s so far)` / `task_7 failed: exit 2 (python, 0.4s, cpu 0.31s)`.
    detail (exec:status): also its --name, command and listening ports, and memory in use."""
    name, state = f"task_{info['task_id']}", info["state"]
    if detail and info.get("name"):
        name += f" ({info['name']})"
    lang = info["lang"] + (f": {info['command']}" if detail and info.get("command") else "")
    if not finished(info):
        pid = f", pid {info['pid']}" if info.get("pid") else ""
        ports = f", listening on {', '.join(map(str, info['ports']))}" if info.get("ports") else ""
        return f"{name} {state} ({lang}{pid}, {seconds(info.get('duration_ms'))} so far{usage(info)}{ports})"
    how = []
    if info.get("exit_code") is not None:
        how.append(f"exit {info['exit_code']}")
    if info.get("signal"):
        how.append(f"signal {info['signal']}")
    if info.get("reason") not in (None, state, "exit_zero", "exit_nonzero", "signal", "timeout"):
        how.append(info["reason"])
    how_ = f": {', '.join(how)}" if how else ""
    return f"{name} {state}{how_} ({lang}, {seconds(info.get('duration_ms'))}{usage(info)})"


def usage(info: dict) -> str:
    """`, cpu 1.20s, mem 30.1 MiB, peak 35.0 MiB` from the task's cgroup; empty where none measured it."""
    cpu, now, peak = info.get("cpu_s"), info.get("memory_bytes"), info.get("memory_peak_bytes")
    return (f", cpu {cpu:.2f}s" if cpu is not None else "") + (f", mem {size(now)}" if now is not None else "") \
        + (f", peak {size(peak)}" if peak is not None else "")


def short_size(n: int | None) -> str:
    """`0`, `812`, `12K`, `3.4M`: a table cell."""
    if n is None:
        return "-"
    for unit in ("", "K", "M"):
        if n < 1024 or unit == "M":
            return f"{n:.0f}{unit}" if unit != "M" or n >= 10 else f"{n:.1f}{unit}"
        n /= 1024  # type: ignore[assignment]
    return ""


def task_table(tasks: list[dict], session: bool = False) -> str:
    """One task a row, widths fitted to the content: exec:tasks and runner status (session=True
    adds whose it is). CPU and MEM where a cgroup measures the task (MEM: in use while it runs,
    its peak once ended); PORTS: TCP ports its running tree listens on; COMMAND: the code's first line."""
    head = ("TASK", "NAME", "STATE", "EXIT", "LANG", "TIME", "CPU", "MEM", "OUT", "PORTS", "COMMAND")
    rows = [(("SESSION",) if session else ()) + head]
    for t in tasks:
        code = t.get("exit_code")
        exit_ = f"sig {t['signal']}" if t.get("signal") else ("-" if code is None else str(code))
        state = "waiting-input" if waiting(t) else t["state"]
        state += " (detached)" if t.get("detached") else ""  # outlives its session (exec --detach)
        cpu = t.get("cpu_s")
        mem = t.get("memory_peak_bytes") if finished(t) else t.get("memory_bytes")
        ports = ",".join(map(str, t.get("ports") or [])) or "-"
        row = (f"task_{t['task_id']}", t.get("name") or "-", state, exit_, t["lang"], seconds(t.get("duration_ms")),
               "-" if cpu is None else f"{cpu:.1f}s", short_size(mem), short_size(t.get("bytes_out") or 0), ports,
               t.get("command") or "-")
        rows.append(((str(t.get("session_id", ""))[:16],) if session else ()) + row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows)


STEP_BYTES = 12000  # the window a cut note's `--from A --to B` offers: one poll's worth, about 3000 tokens


def next_steps(me, tid: int, start: int, end: int, whole: int) -> str:
    """The bounded ways on from a cut: the next STEP_BYTES of what was left out (offsets start..end),
    only the lines matching a regex, and what --full would cost (`whole` bytes, all the runner keeps)."""
    name = f"task_{tid}"
    step = min(end, start + STEP_BYTES)
    return (f"next: `{me.command('exec:status', name, '--from', str(start), '--to', str(step))}` "
            f"({step - start} bytes), `{me.command('exec:status', name, '--grep', 'RE')}` (matching lines only); "
            f"--full prints all {whole} bytes")


def followups(me, tid: int) -> list[tuple[str, str]]:
    """The commands that pick a backgrounded task up again, with the caller's session flags."""
    name = f"task_{tid}"
    return [(me.command("exec:status", name), "new output and its state"),
            (me.command("exec:sleep", name, "30"), "wait up to 30 s more, printing output"),
            (me.command("exec:close", name), "kill it (its record stays; --forget drops it)")]


def print_followups(sink, me, tid: int, headline: str, follower=None, rows=None) -> None:
    """`rows`: (command, what it does) pairs; default followups(me, tid)."""
    if follower is not None and follower.skipping:
        sink.note(f"output past byte {follower.cursor} is not shown here yet (it goes on); "
                  f"`{me.command('exec:status', f'task_{tid}')}` shows its newest lines, "
                  f"`{me.command('exec:status', f'task_{tid}', '--grep', 'RE')}` the lines matching RE")
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
