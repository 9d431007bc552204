"""`plugkit doctor`: one line per check, each problem with what to do about it.

Levels: ok, warn (an optional feature will not work), FAIL (plugkit itself will
not work). Exit 1 if anything FAILs. Checks are rows of CHECKS; each yields
(level, name, detail, fix). Interpreters are looked up as for a task this shell
starts: tasks run in their caller's environment, so on this shell's PATH (python: an
explicit $PLUGKIT_PYTHON, else $VIRTUAL_ENV's, else python3 on PATH; plugkit/languages/caller.py).
"""

import json
import os
import shutil
import subprocess
import sys
import socket

from client.args import FLAG, Help, parse
from client.wire.rpc import Connection, read_discovery
from client.verbs import doctor_cluster
from plugkit import SERVICE, languages, paths

USAGE = """usage: plugkit doctor [--json]

Checks the interpreters of every language, Chromium, socat, serial port access,
the runner's TCP port and the state directory's permissions; says what to fix.
Exit 1 if anything plugkit needs is broken."""

REQUIRED_LANGUAGES = frozenset({"bash", "python"})
# Named by the path helpers, so a renamed file is still checked.
PRIVATE_FILES = tuple(os.path.basename(f()) for f in (paths.token_file, paths.port_file, paths.log_file,
                                                     paths.stdio_file, paths.ledger_file))


def check_languages():
    workspace = os.getcwd()
    # As for a task this shell starts: it sends its environment, whose PLUGKIT_PYTHON counts too.
    for name, usable, detail in languages.availability(workspace, environ=dict(os.environ)):
        if usable:
            yield "ok", name, detail, ""
        else:
            yield ("FAIL" if name in REQUIRED_LANGUAGES else "warn"), name, detail, ""
    from plugkit.languages import plugins as lang_plugins

    for problem in lang_plugins.check_plugins(workspace):
        yield "warn", "lang plugin", problem, "fix or remove the file; other languages are unaffected"


def explain(lang: str, me) -> int:
    """`exec:<lang> --explain`: the argv a task of this caller would run, and where its program
    came from; runs nothing. The runner resolves the same way from the environment we send."""
    try:
        language = languages.lookup(lang, workspace=me.cwd)
        plan = languages.resolve(language, environ=me.environ() or dict(os.environ))
    except languages.LanguageError as exc:
        print(f"exec:{lang}: {exc}")
        return 1
    names = {"file": "FILE", "out": "OUT", "dir": "DIR", "main": "Main"}

    def shown(word: str) -> str:  # a multi-line program argument (python's launcher) by its role
        return "<launcher: runs FILE as python -c would>" if "\n" in word else word

    try:
        argv = " && ".join(" ".join(map(shown, languages.render(step, **names)))
                           for step in (plan.compile, plan.run) if step)
    except ValueError:  # a plugin row's own placeholder: show the template
        argv = " ".join(plan.run)
    where = f" ({language.name} from {plan.source})" if plan.source else ""
    print(f"exec:{lang} in {me.cwd} would run: {argv.strip()}{where}")
    if language.origin:
        print(f"  the row comes from {language.origin}")
    return 0


def check_chromium():
    from plugkit.chromium import ChromiumNotFound, find_chromium, sandbox_for

    try:
        exe = find_chromium()  # the runner's rule, so doctor reports on the browser it would start
    except ChromiumNotFound as exc:
        yield "warn", "chromium", f"{exc} (exec:browser needs it)", ""
        return
    sandbox = sandbox_for(exe)
    # Found is not enough: a broken install (missing libraries) fails only when started.
    started, detail = _starts(exe)
    if started:
        yield "ok", "chromium", f"{exe} ({detail})", ""
    else:
        yield ("warn", "chromium", f"{exe} does not start: {detail}",
               "reinstall it (apt-get install --reinstall chromium) or set PLUGKIT_CHROMIUM")
    if sandbox.on:
        yield "ok", "chromium sandbox", f"on: {sandbox.why}", ""
    else:
        yield "warn", "chromium sandbox", f"off: {sandbox.why}", ""


def _starts(exe: str) -> tuple[bool, str]:
    try:
        probe = subprocess.run([exe, "--headless", "--no-sandbox", "--version"], capture_output=True,
                               text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, str(exc)
    if probe.returncode == 0 and probe.stdout.strip():
        return True, probe.stdout.strip()
    return False, (probe.stderr.strip().splitlines() or [f"exit code {probe.returncode}"])[-1][:200]


def check_socat():
    exe = shutil.which("socat")
    if exe:
        yield "ok", "socat", exe, ""
    else:
        yield "warn", "socat", "not found (virtual serial port pairs for testing need it)", "apt-get install socat"


def check_sandbox():
    """The worker sandbox's mode and self-test, run as the runner runs it before every worker."""
    try:
        # -P: a `runner/` package of the repository (the cwd) is never imported in plugkit's place
        done = subprocess.run([sys.executable, "-P", "-m", "runner.system.sandbox", paths.home()],
                              capture_output=True, text=True, timeout=60)
        line, ok = (done.stdout.strip().splitlines() or ["no answer"])[-1], done.returncode == 0
    except (OSError, subprocess.SubprocessError) as exc:
        line, ok = str(exc), False
    if ok:
        yield "ok", "worker sandbox", line, ""
    else:
        yield ("warn", "worker sandbox", f"{line[:200]}; `plugkit work` refuses to start workers",
               "apt-get install bubblewrap (or scripts/setup); a person may run `plugkit work --no-sandbox`")


def check_serial():
    import glob
    import grp

    devices = sorted(glob.glob("/dev/ttyUSB*") + glob.glob("/dev/ttyACM*"))
    if os.getuid() == 0:
        yield "ok", "serial", "running as root: every serial device can be opened", ""
        return
    try:
        member = grp.getgrnam("dialout").gr_gid in os.getgroups()
    except KeyError:
        member = None
    fix = "sudo usermod -aG dialout $USER, then log out and in again"
    blocked = [d for d in devices if not os.access(d, os.R_OK | os.W_OK)]
    if blocked:
        yield "warn", "serial", f"cannot open {', '.join(blocked)}", fix
    elif member is False:
        yield "warn", "serial", "you are not in the dialout group (serial devices will be refused)", fix
    else:
        yield "ok", "serial", f"{len(devices)} device(s), all usable" if devices else "access ok", ""


def check_port():
    try:
        port = paths.port()
    except ValueError as exc:
        yield "FAIL", "port", str(exc), "unset PLUGKIT_PORT or set it to a free port"
        return
    name = f"port {port}"
    yield _reservation(port)
    try:
        conn = Connection(port, timeout=1.0)
    except OSError:
        yield "ok", name, "free (the runner takes it when it starts)", ""
        return
    try:
        status, body = conn.request("GET", "/health")
        health = json.loads(body) if status == 200 else {}
        if not isinstance(health, dict):
            health = {}
    except (OSError, ValueError):
        health = None
    finally:
        conn.close()
    discovery = read_discovery()
    if health and health.get("service") == SERVICE:
        if discovery == (port, health.get("pid")):
            yield "ok", name, f"our runner (pid {health.get('pid')})", ""
        else:
            yield ("FAIL", name, f"a plugkit runner of another PLUGKIT_HOME (pid {health.get('pid')})",
                   f"stop it (`kill {health.get('pid')}`) or set PLUGKIT_PORT to another port")
        return
    holder = _holder(port)
    what = "something that does not answer /health (a wedged runner?)" if health is None else "another program"
    yield "FAIL", name, f"held by {holder or what}", f"plugkit kill-port {port}, or set PLUGKIT_PORT to another port"


# Linux picks the local port of every outgoing connection from ip_local_port_range, skipping
# ip_local_reserved_ports: a runner port inside the range and not reserved can be briefly taken.
PORT_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
RESERVED_PORTS = "/proc/sys/net/ipv4/ip_local_reserved_ports"
SYSCTL_FILE = "/etc/sysctl.d/60-plugkit.conf"


def parse_ports(text: str) -> list[tuple[int, int]]:
    """'1000-1002,2000' or '32768\t60999' (the range file) -> [(1000, 1002), (2000, 2000)]."""
    text = text.strip()
    if not text:
        return []
    if "," not in text and "-" not in text and len(text.split()) == 2:  # ip_local_port_range
        low, high = map(int, text.split())
        return [(low, high)]
    spans = []
    for item in text.split(","):
        low, _, high = item.strip().partition("-")
        spans.append((int(low), int(high or low)))
    return spans


def reservation_row(port: int, port_range: str, reserved: str) -> tuple[str, str, str, str]:
    """The doctor row for `port` given the two sysctl files' contents (pure: tests feed strings)."""
    name = "port reserved"
    if any(low <= port <= high for low, high in parse_ports(reserved)):
        return "ok", name, f"{port} is in net.ipv4.ip_local_reserved_ports", ""
    if not any(low <= port <= high for low, high in parse_ports(port_range)):
        return "ok", name, f"{port} is outside the ephemeral range ({'-'.join(port_range.split())})", ""
    value = ",".join([reserved.strip(), str(port)] if reserved.strip() else [str(port)])
    key = "net.ipv4.ip_local_reserved_ports"
    return ("warn", name,
            f"{port} is in the ephemeral range ({'-'.join(port_range.split())}): an outgoing connection can "
            f"hold it and the runner cannot start",
            f"sudo sysctl -w {key}={value}; to keep it after a reboot: "
            f"echo '{key} = {value}' | sudo tee {SYSCTL_FILE}")


def _reservation(port: int) -> tuple[str, str, str, str]:
    try:
        with open(PORT_RANGE) as rng, open(RESERVED_PORTS) as rsv:
            return reservation_row(port, rng.read(), rsv.read())
    except (OSError, ValueError) as exc:  # not Linux, or /proc hidden: nothing to say
        return "ok", "port reserved", f"cannot read the kernel's port ranges ({exc})", ""


def _holder(port: int) -> str:
    try:
        import psutil

        for c in psutil.net_connections(kind="tcp"):
            if c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port and c.pid:
                return f"pid {c.pid} ({' '.join(psutil.Process(c.pid).cmdline())[:80]})"
    except Exception:  # naming the holder is a courtesy; the check stands without it
        pass
    return ""


def check_state_dir():
    home = paths.home()
    try:
        st = os.stat(home)
    except FileNotFoundError:
        yield "ok", "state dir", f"{home} (not created yet; made 0700 on first use)", ""
        return
    if not os.path.isdir(home):
        yield "FAIL", "state dir", f"{home} is not a directory", "remove it, or set PLUGKIT_HOME elsewhere"
        return
    if st.st_uid != os.getuid():
        yield "FAIL", "state dir", f"{home} belongs to uid {st.st_uid}", "set PLUGKIT_HOME to a directory of yours"
        return
    problems = []
    if st.st_mode & 0o077:
        problems.append((f"{home} is mode {st.st_mode & 0o777:04o}", f"chmod 700 {home}"))
    for name in PRIVATE_FILES:
        path = os.path.join(home, name)
        try:
            mode = os.stat(path).st_mode
        except OSError:
            continue
        if mode & 0o077:
            problems.append((f"{path} is mode {mode & 0o777:04o}", f"chmod 600 {path}"))
    for detail, fix in problems:
        yield "FAIL", "state dir", detail, fix
    if not problems:
        yield "ok", "state dir", f"{home} (private)", ""


def check_runner():
    from client.wire.rpc import Client, ClientError, connect_verified

    try:
        conn = connect_verified()
    except ClientError as exc:  # there, but stopped or not answering
        yield "FAIL", "runner", str(exc), "plugkit runner restart"
        return
    if conn is None:
        yield "ok", "runner", "not running (the first plugkit command starts it)", ""
        yield "ok", "task isolation", "decided when the runner starts (see `plugkit doctor` then)", ""
        return
    found = read_discovery()
    yield "ok", "runner", f"running, pid {found[1] if found else '?'}", ""
    try:
        client = Client(conn)
    except ClientError as exc:
        conn.close()
        yield "FAIL", "runner", str(exc), "plugkit runner restart"
        return
    try:
        process = client.call("debug.snapshot", timeout=5)["snapshot"].get("executors", {}).get("process", {})
    except ClientError as exc:
        yield "warn", "task isolation", f"could not ask the runner: {exc}", ""
        return
    finally:
        client.close()
    yield isolation_row(process.get("isolation") or "tags")
    yield "ok", "task spawn", process.get("spawn") or "unknown (an older runner)", ""


def isolation_row(isolation: str) -> tuple[str, str, str, str]:
    """How the runner contains tasks: a cgroup each, or environment tags + the orphans it adopts (what can escape)."""
    if isolation == "tags":
        return ("warn", "task isolation", "tags + adopted orphans: no cgroup per task, so no CPU or memory "
                "figures, and a task child that drops its environment and leaves the runner's "
                "process tree (systemd-run, at) can outlive its task",
                "run the runner where a cgroup2 subtree is writable (root, or a systemd unit with "
                "Delegate=yes), and without PLUGKIT_CGROUPS=0")
    return "ok", "task isolation", isolation, ""


CHECKS = (check_languages, check_chromium, check_socat, check_sandbox, check_serial, check_port, check_state_dir,
          check_runner, doctor_cluster.check_cluster)


def main(argv: list[str]) -> int:
    try:
        opts, _ = parse(argv, {"--json": FLAG}, max_pos=0, usage=USAGE)
    except Help:
        print(USAGE)
        return 0
    rows = []
    for check in CHECKS:
        try:
            rows.extend(check())
        except (OSError, socket.error) as exc:
            rows.append(("FAIL", check.__name__.removeprefix("check_"), f"the check itself failed: {exc}",
                         "see `plugkit runner logs`"))
    if opts.get("json"):
        print(json.dumps([{"level": lv, "check": n, "detail": d, "fix": f} for lv, n, d, f in rows]))
    else:
        width = max(len(n) for _, n, _, _ in rows)
        for level, name, detail, fix in rows:
            print(f"{level:4}  {name.ljust(width)}  {detail}" + (f"; to fix: {fix}" if fix else ""))
        print(summary(rows))
    return 1 if any(lv == "FAIL" for lv, _, _, _ in rows) else 0


def summary(rows: list) -> str:
    """The one line a person reads first: the counts, and what a FAIL or warn means."""
    count = {lv: sum(1 for r in rows if r[0] == lv) for lv in ("ok", "warn", "FAIL")}
    said = ", ".join(f"{n} {lv}" for lv, n in count.items() if n)
    if count["FAIL"]:
        return f"doctor: {said}: plugkit will not work until each FAIL above is fixed"
    if count["warn"]:
        return f"doctor: {said}: plugkit works; a warn is an optional feature that will not"
    return f"doctor: {said}: all good"
