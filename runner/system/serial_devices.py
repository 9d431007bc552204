"""Which serial devices a task may open, opening them, and who holds one: the system side of exec:serial.

Everything here is blocking (stat, open, termios, a /proc scan) and is called
off the event loop or before anything async starts. Refusals are plugkit.refusals
(by kind: invalid, unavailable, conflict) written for the caller, raised before any task exists.
"""

import errno
import grp
import itertools
import os
import queue
import stat
from dataclasses import dataclass
from typing import Optional

import serial
from serial.serialutil import iterbytes
from serial.urlhandler import protocol_loop

from plugkit.protocol.serial import SerialOpenSpec
from plugkit.refusals import Conflict, Invalid, Refused, Unavailable

LOOP_URL = "loop://"
# pyserial URL handlers that reach past the path checks: socket:// and rfc2217://
# connect out, hwgrep:// opens whatever port a regex matches, spy:// wraps any of
# them and writes a log file wherever its ?file= says, alt:// picks another
# implementation class, cp2110:// opens a USB HID device.
BYPASSING_SCHEMES = frozenset({"socket", "rfc2217", "hwgrep", "spy", "alt", "cp2110"})
# Character devices that are ttys but not serial lines: (major, minor) -> what they are.
NOT_A_LINE = {
    (5, 0): "/dev/tty, the runner's own controlling terminal",
    (5, 1): "the system console",
    (5, 2): "the pty multiplexer (/dev/ptmx)",
}
_PTY_MAJORS = range(136, 144)  # Unix98 pty slaves: devpts registers no sysfs entry for them
_loop_ids = itertools.count(1)


@dataclass(frozen=True)
class Target:
    """A checked request: `key` is what ownership is keyed on (the device's realpath,
    or a private id for each loop://), `path` is what gets opened."""

    key: str
    path: str
    rdev: Optional[int]  # the device number, compared again after the open
    loop: bool = False


def refuse(message: str) -> Invalid:
    return Invalid(message)


def resolve(port: str) -> Target:
    """Check a requested port; raise a refusal for anything that is not a local serial line."""
    if port == LOOP_URL:
        return Target(key=f"{LOOP_URL}#{next(_loop_ids)}", path=LOOP_URL, rdev=None, loop=True)
    if "://" in port:
        scheme = port.split("://", 1)[0].lower()
        what = ("it would reach past the local device checks (network, regex match, spy log "
                "or another driver)" if scheme in BYPASSING_SCHEMES else "only device paths are opened")
        raise refuse(f"{scheme}:// ports are refused: {what}; give a device under /dev "
                     f"(or {LOOP_URL} for tests)")
    if not port.startswith("/") or "\0" in port:
        raise refuse(f"{port!r} is not an absolute device path; give one under /dev, "
                     "e.g. /dev/ttyUSB0 (plugkit serial list shows them)")
    # realpath first: ../ tricks and symlinks (say, one planted in world-writable
    # /dev/shm) are judged by where they really lead, and that is what gets opened.
    real = os.path.realpath(port)
    if not real.startswith("/dev/"):
        raise refuse(f"{port} resolves to {real}, which is not under /dev; only device paths are opened")
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise Unavailable(f"no such device {port}; is it plugged in? "
                          "(plugkit serial list shows the ports the system sees)") from None
    except OSError as exc:
        raise Unavailable(f"cannot look at {port}: {exc.strerror}") from None
    if not stat.S_ISCHR(st.st_mode):
        raise refuse(f"{port} is {_kind(st.st_mode)}, not a character device; give a serial device")
    why = _not_a_serial_line(real, st.st_rdev)
    if why:
        # Opening some character devices acts by itself (/dev/watchdog arms a reboot):
        # only ttys get as far as open().
        raise refuse(f"{port} is {why}, not a serial line")
    if not os.access(real, os.R_OK | os.W_OK):
        raise Unavailable(permission_message(port, st))
    return Target(key=real, path=real, rdev=st.st_rdev)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISREG, "a regular file"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a device"


def _not_a_serial_line(real: str, rdev: int) -> Optional[str]:
    major, minor = os.major(rdev), os.minor(rdev)
    if (major, minor) in NOT_A_LINE:
        return NOT_A_LINE[(major, minor)]
    if major == 4 and minor < 64:
        return "a virtual console"
    if major in _PTY_MAJORS:
        return None
    if os.path.isdir("/sys/dev/char"):
        subsystem = os.path.realpath(f"/sys/dev/char/{major}:{minor}/subsystem")
        return None if os.path.basename(subsystem) == "tty" else "not a tty (no tty class in sysfs)"
    # No sysfs (macOS, BSD): fall back on the names their serial drivers use.
    name = os.path.basename(real)
    return None if name.startswith(("tty", "cu.")) else "not a tty"


def permission_message(port: str, st: os.stat_result) -> str:
    """Say which group to join, as the device's group and mode tell it."""
    try:
        group = grp.getgrgid(st.st_gid).gr_name
    except KeyError:
        group = str(st.st_gid)
    if st.st_mode & 0o060 == 0o060 and st.st_gid != 0:
        return (f"permission denied for {port} (owned by group {group}, mode "
                f"{stat.S_IMODE(st.st_mode):o}); join the group: sudo usermod -aG {group} $USER, "
                "then log out and back in (or run: newgrp " + group + ")")
    return (f"permission denied for {port} (owner uid {st.st_uid}, group {group}, mode "
            f"{stat.S_IMODE(st.st_mode):o}); a udev rule giving a group read/write access is needed")


# --- opening ---------------------------------------------------------------------

class DeviceSerial(serial.Serial):
    """pyserial's POSIX port with the two calls the asyncio transport makes on the
    event loop reduced to one syscall each.

    pyserial's write() retries EAGAIN in a loop when write_timeout is 0, so a device
    that stops draining (hardware flow control held off) would spin the whole
    runner; here EAGAIN surfaces as BlockingIOError, which the transport re-buffers.
    Its flush() is tcdrain(), which blocks until the line has sent everything: the
    transport calls it while closing, so a stalled line would freeze the runner.
    Closing discards unsent output instead (see SerialRun.kill for the short drain).
    """

    def read(self, size: int = 1) -> bytes:
        try:
            data = os.read(self.fd, size)
        except (BlockingIOError, InterruptedError):
            return b""
        except OSError as exc:  # EIO: the device is gone (unplug, pty master closed)
            raise serial.SerialException(f"read failed: {exc.strerror}") from None
        if not data:
            # Readable yet nothing to read: with VMIN=0 that is a hangup.
            raise serial.SerialException("the device reported end of file")
        return data

    def write(self, data: bytes) -> int:
        try:
            return os.write(self.fd, data)
        except (BlockingIOError, InterruptedError):
            raise
        except OSError as exc:
            raise serial.SerialException(f"write failed: {exc.strerror}") from None

    def flush(self) -> None:
        return None


class LoopSerial(protocol_loop.Serial):
    """pyserial's loop:// for tests, with a write that never blocks: the original
    refuses every write when write_timeout is 0 (it models time on the line)."""

    def write(self, data: bytes) -> int:
        written = 0
        for byte in iterbytes(data):
            try:
                self.queue.put_nowait(byte)
            except queue.Full:  # the transport keeps the rest for later
                break
            written += 1
        if data and not written:
            raise BlockingIOError(errno.EAGAIN, "loop buffer full")
        return written


def open_port(target: Target, spec: SerialOpenSpec) -> serial.SerialBase:
    """Open and configure (blocking; run it in a thread). Raises a refusal; on any
    failure nothing stays open."""
    ser = LoopSerial() if target.loop else DeviceSerial()
    try:
        ser.baudrate, ser.bytesize, ser.parity = spec.baud, spec.bytesize, spec.parity
        ser.stopbits, ser.rtscts, ser.xonxoff = spec.stopbits, spec.rtscts, spec.xonxoff
        ser.timeout = ser.write_timeout = 0
        if not target.loop:
            # flock: another program opening it the same way (pyserial, minicom with
            # locking) is told it is in use, and so are we.
            ser.exclusive = True
        ser.port = target.path
    except ValueError as exc:
        raise refuse(f"invalid serial settings for {target.path}: {exc}") from None
    try:
        ser.open()
    except serial.SerialException as exc:
        raise _open_error(target, exc) from None
    except ValueError as exc:  # a rate the driver refuses (custom baud not supported)
        raise refuse(f"{target.path} refused the settings: {exc}") from None
    except OSError as exc:
        raise _open_error(target, exc) from None
    if target.rdev is not None and os.fstat(ser.fd).st_rdev != target.rdev:
        # Checked path and opened file differ: the node was swapped after resolve().
        ser.close()
        raise refuse(f"{target.path} changed while it was being opened; refused")
    return ser


def _open_error(target: Target, exc: OSError) -> Refused:
    code = exc.errno
    path = target.path
    if code in (errno.EAGAIN, errno.EWOULDBLOCK, errno.EBUSY):
        return Conflict(f"{path} is in use by another process: "
                        f"{describe_holders(path)}; close it there first")
    if code in (errno.EACCES, errno.EPERM):
        try:
            return Unavailable(permission_message(path, os.stat(path)))
        except OSError:
            return Unavailable(f"permission denied for {path}")
    if code == errno.ENOENT:
        return Unavailable(f"no such device {path}; is it plugged in?")
    if code in (errno.ENXIO, errno.ENODEV, errno.EIO):
        return Unavailable(f"{path} exists but no device answers "
                           "(unplugged, or its driver is not loaded)")
    return Unavailable(f"could not open {path}: "
                       f"{exc.strerror or str(exc).split(': ', 1)[-1]}")


def describe_holders(path: str, limit: int = 5) -> str:
    found = holders(path)
    if not found:
        return "a process this user cannot see (its pid is hidden)"
    me = os.getpid()
    shown = [f"pid {pid} ({name})" + (" = this runner" if pid == me else "") for pid, name in found[:limit]]
    return ", ".join(shown) + (f" and {len(found) - limit} more" if len(found) > limit else "")


def holders(path: str) -> list[tuple[int, str]]:
    """Processes with the device open, from /proc/<pid>/fd. psutil's open_files()
    lists regular files only, so it cannot see a tty."""
    found = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return found
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:  # gone, or another user's
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    found.append((pid, _comm(pid)))
                    break
            except OSError:
                continue
    return found


def _comm(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return "?"


# --- listing ---------------------------------------------------------------------

@dataclass(frozen=True)
class PortInfo:
    device: str
    description: str
    hwid: str
    vid: Optional[int]
    pid: Optional[int]
    serial_number: Optional[str]
    manufacturer: Optional[str]
    product: Optional[str]
    location: Optional[str]


def list_ports() -> list[PortInfo]:
    """The ports pyserial sees (blocking: it walks sysfs)."""
    from serial.tools import list_ports as lp

    return [PortInfo(device=p.device, description=p.description or "", hwid=p.hwid or "",
                     vid=p.vid, pid=p.pid, serial_number=p.serial_number,
                     manufacturer=p.manufacturer, product=p.product, location=p.location)
            for p in sorted(lp.comports(), key=lambda p: p.device)]
