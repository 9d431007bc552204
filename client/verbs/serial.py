"""`plugkit exec:serial PORT [BAUD]` (a serial port as a background task) and `plugkit serial list`.

exec:serial builds the JSON `code` of task.exec lang "serial" (runner/executors/serial/executor.py
has the contract) and then follows the task exactly as exec:<lang> does (exec_verbs.start
and follow_started), with two differences that come from a port never ending by itself:
the default wait is short, and the timeout defaults to the longest the runner allows
(the wire default, 5 minutes, would close a console the agent is still watching).

Range checks on the settings (baud 50..12000000, parity N|E|O|M|S, ...) are the runner's:
this side only turns words into JSON numbers, so the limits live in one place
(plugkit.protocol.SerialOpenSpec) and the runner's message names the field.
"""

import json
import time

from client.verbs import exec as exec_verbs
from client.show import follow
from client.args import FLAG, VALUE, UsageError, number, parse_or_help
from client.wire.rpc import ClientError, RpcFailure
from client.wire.session import Caller, connect
from plugkit import errors

# Long enough for a board's boot banner or a prompt already waiting to show up, short
# enough that the agent gets the task id back promptly: the port streams forever, so
# every exec:serial runs to this ceiling (or --until). PLUGKIT_WAIT is not used: it is
# tuned for commands that end, and would only make each open block longer.
DEFAULT_WAIT_S = 2.0
# With --until the agent asked to wait for something (a prompt, a boot message): give it
# the time exec:<lang> gives a command, unless --wait says otherwise.
UNTIL_WAIT_S = 15.0

OPTIONS = {"--bytesize": VALUE, "--parity": VALUE, "--stopbits": VALUE, "--rtscts": FLAG, "--xonxoff": FLAG,
           "--hex": FLAG, "--timeout": VALUE, "--wait": VALUE, "--until": VALUE, "--session": VALUE,
           "--cwd": VALUE, "--json": FLAG, "--full": FLAG, "--kill-on-interrupt": FLAG}

USAGE = """usage: plugkit exec:serial PORT [BAUD] [options]

Opens the serial device PORT (default 115200 8N1) as a background task of this
session: everything the device sends becomes the task's output. Prints what arrives
within --wait seconds, then the task id and the commands to go on with:
  plugkit exec:status TASK             what arrived since, and its state
  plugkit exec:sleep TASK 30 --until TEXT   wait for TEXT from the device
  plugkit exec:type TASK TEXT [--eol lf|crlf|cr|none]   send TEXT and a line ending
  plugkit exec:close TASK              close the port (the task ends completed)
`plugkit serial list` shows the ports the system sees. PORT is a device under /dev
(symlinks such as /dev/serial/by-id/... are fine); network URLs are refused.

  --bytesize 5|6|7|8   data bits (default 8)
  --parity N|E|O|M|S   parity (default N)
  --stopbits 1|1.5|2   stop bits (default 1)
  --rtscts, --xonxoff  hardware / software flow control
  --hex                output as a hex dump; exec:type then takes hex digits
                       ('41 54 0d 0a': the line ending is yours to include)
  --timeout S          close the port after S seconds (default: the runner's maximum,
                       24 h unless PLUGKIT_MAX_TIMEOUT_MS says otherwise)
  --wait S             how long to show what arrives before returning (default 2;
                       15 with --until)
  --until TEXT         return as soon as TEXT arrives (a prompt, a boot message)
  --cwd D  --session ID  --json  --full  --kill-on-interrupt   as for exec:<lang>
Exit codes: 0 the port is open (or was closed); 2 bad settings or not a serial
device; 1 the device is missing, busy or not permitted (the message says which
group to join); 1 also if the device went away (reason device_lost)."""


def exec_serial(argv: list[str]) -> int:
    opts, words = parse_or_help(argv, OPTIONS, USAGE, min_pos=1, max_pos=2)
    code, spec = build_code(opts, words)
    until = opts.get("until")
    if until == "":
        raise UsageError("--until needs some text to wait for")
    default_wait = UNTIL_WAIT_S if until else DEFAULT_WAIT_S
    wait_s: float = number(opts, "wait", "--wait", default_wait)  # type: ignore[assignment]
    timeout_s = number(opts, "timeout", "--timeout", None, minimum=0.001) or max_timeout_s()
    me = Caller(opts)
    sink = follow.Collector() if opts.get("json") else follow.Printer()
    deadline = time.monotonic() + wait_s
    client = connect()
    try:
        follower = follow.Follower(client, {}, sink, follow.output_limit(bool(opts.get("full"))),
                                   until=until)  # type: ignore[arg-type]
        try:
            info, first = exec_verbs.start(client, me, follower, "serial", code, wait_s, timeout_s)
        except RpcFailure as exc:
            raise _refusal(exc) from None
        rows = followups(me, info["task_id"], bool(spec.get("hex")))
        return exec_verbs.follow_started(client, follower, info, first, me, opts, wait_s, deadline, rows)
    finally:
        client.close()


def build_code(opts: dict, words: list[str]) -> tuple[str, dict]:
    """The task.exec `code` (JSON text) and the dict it encodes. Only the settings given
    are sent: the runner's defaults are the documented ones."""
    port = words[0]
    if not port.strip():
        raise UsageError("PORT is empty; give a device such as /dev/ttyUSB0 (see `plugkit serial list`)")
    spec: dict[str, object] = {"port": port}
    if len(words) > 1:
        spec["baud"] = _whole(words[1], "BAUD", "e.g. 115200")
    if opts.get("bytesize") is not None:
        spec["bytesize"] = _whole(str(opts["bytesize"]), "--bytesize", "5, 6, 7 or 8")
    if opts.get("parity") is not None:
        spec["parity"] = str(opts["parity"]).upper()  # `--parity e` is what people type
    if opts.get("stopbits") is not None:
        spec["stopbits"] = _stopbits(str(opts["stopbits"]))
    for flag in ("rtscts", "xonxoff", "hex"):
        if opts.get(flag):
            spec[flag] = True
    return json.dumps(spec), spec


def _whole(raw: str, name: str, example: str) -> int:
    if not raw.isascii() or not raw.isdigit():
        raise UsageError(f"{name} must be a whole number ({example}), not {raw!r}")
    return int(raw)


def _stopbits(raw: str) -> float | int:
    # 1 and 2 go as JSON integers, 1.5 as a float: the runner's Literal[1, 1.5, 2] takes both.
    try:
        value = float(raw)
    except ValueError:
        raise UsageError(f"--stopbits must be 1, 1.5 or 2, not {raw!r}") from None
    return int(value) if value.is_integer() else value


def max_timeout_s() -> float:
    """The longest task the runner accepts: its limit comes from the same PLUGKIT_*
    environment an auto-started runner inherits."""
    from plugkit.config import Limits

    try:
        return Limits.from_env().max_timeout_ms / 1000
    except ValueError:  # a malformed PLUGKIT_* variable: the runner would not start on it either
        return Limits.max_timeout_ms / 1000


def _refusal(exc: RpcFailure) -> ClientError:
    # UNAVAILABLE exits 127 for exec:<lang> ("interpreter missing", as a shell says);
    # for a device that is missing or not permitted, plain failure (1) is the honest code.
    if exc.code == errors.UNAVAILABLE:
        return ClientError(exc.message)
    if exc.code == errors.INVALID_PARAMS:
        # The runner's hint is about the wire's JSON `code`; a CLI user wants the flags.
        return RpcFailure(exc.code, exc.message, {"next": "plugkit exec:serial --help"})
    return exc


def followups(me: Caller, tid: int, hex_mode: bool) -> list[tuple[str, str]]:
    name = f"task_{tid}"
    typing = ((me.command("exec:type", name, "41 54 0d 0a"), "send bytes as hex digits (include the line ending)")
              if hex_mode else
              (me.command("exec:type", name, "TEXT"), "send TEXT and a newline (--eol crlf|cr|none)"))
    return [(me.command("exec:status", name), "what arrived since, and its state"),
            (me.command("exec:sleep", name, "30", "--until", "TEXT"), "wait up to 30 s for TEXT from the device"),
            typing,
            (me.command("exec:close", name), "close the port (the task ends completed)")]


# --- serial list ----------------------------------------------------------------------

LIST_USAGE = """usage: plugkit serial list [--json]

Lists the serial ports the system sees (USB adapters, on-board UARTs with a driver):
device, description and hardware id (USB VID:PID, serial number, location).
Pseudo-terminals are not listed. Open one with `plugkit exec:serial DEVICE [BAUD]`."""

SUBVERBS = ("list",)


def serial_main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(LIST_USAGE)
        return 0 if argv else 2
    if argv[0] not in SUBVERBS:
        raise UsageError(f"unknown serial verb {argv[0]!r}; there is `plugkit serial list` "
                         "(open a port with `plugkit exec:serial PORT`)")
    opts, _ = parse_or_help(argv[1:], {"--json": FLAG}, LIST_USAGE, max_pos=0)
    client = connect()
    try:
        ports = client.call("serial.list", {})["ports"]
    finally:
        client.close()
    if opts.get("json"):
        print(json.dumps({"ports": ports}))
    elif not ports:
        print("no serial ports found (pseudo-terminals are not listed; "
              "a USB adapter shows up here once plugged in)")
    else:
        print(port_table(ports))
    return 0


def port_table(ports: list[dict]) -> str:
    rows = [("DEVICE", "DESCRIPTION", "HWID")]
    # pyserial says "n/a" for a port it knows nothing about: a dash reads better in a table.
    rows += [(p["device"], _cell(p.get("description")), _cell(p.get("hwid"))) for p in ports]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    return "\n".join(f"{r[0].ljust(widths[0])}  {r[1].ljust(widths[1])}  {r[2]}".rstrip() for r in rows)


def _cell(value: str | None) -> str:
    return "-" if not value or value == "n/a" else value
