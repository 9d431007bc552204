"""Structured logs: `log.info("event", key=value)` becomes one JSON line in $PLUGKIT_HOME/runner.log
(rotated) and, on a terminal, a readable line; structlog renders both.

A call builds a stdlib LogRecord carrying the event and its fields (Event): no structlog on the
calling path, and none imported until configure(). The handlers' formatters are structlog's
ProcessorFormatter: every record, ours or a library's (aiohttp, jsonrpcserver), goes through the
same processors, so the token and every registered secret are scrubbed from fields, messages
and tracebacks alike. structlog's dev module imports rich wherever rich is installed (0.1-0.4 s
of a cold start): the daemon keeps rich out (keep_rich_out) before configure() imports it.
"""

import asyncio
import functools
import logging
import logging.handlers
import os
import sys

LATER_S = 0.005  # how long info_later waits (a short task's answer goes out well inside it)
_SECRETS: set[str] = set()
_SECRET_KEYS = {"token", "authorization", "auth"}
REDACTED = "[redacted]"


def add_secret(value: str) -> None:
    """Register a value (the bearer token) that must never appear in a log line."""
    if value:
        _SECRETS.add(value)


def _scrub(value: object) -> object:
    if isinstance(value, str):
        for secret in _SECRETS:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: REDACTED if str(k).lower() in _SECRET_KEYS else _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_scrub(v) for v in value]
    return value


def redact(_logger: object, _name: str, event_dict: dict) -> dict:
    """Drop token-like keys and any registered secret inside values."""
    return _scrub(event_dict)  # type: ignore[return-value]


class Event:
    """A record's message: the event's name and its fields. str() is what other formatters (and
    pytest's caplog) show: the name, then the fields."""

    __slots__ = ("name", "fields")

    def __init__(self, name: str, fields: dict) -> None:
        self.name, self.fields = name, fields

    def __str__(self) -> str:
        return " ".join([self.name, *(f"{k}={v!r}" for k, v in self.fields.items())])


class Logger:
    """What `get` hands out: an event name and keyword fields per call, on a stdlib logger."""

    __slots__ = ("_log",)

    def __init__(self, name: str) -> None:
        self._log = logging.getLogger(name)

    def _emit(self, level: int, event: str, fields: dict, exc_info: bool = False) -> None:
        if self._log.isEnabledFor(level):
            self._log.log(level, Event(event, fields), exc_info=exc_info, stacklevel=3)

    def debug(self, event: str, **fields) -> None:
        self._emit(logging.DEBUG, event, fields)

    def info(self, event: str, **fields) -> None:
        self._emit(logging.INFO, event, fields)

    def warning(self, event: str, **fields) -> None:
        self._emit(logging.WARNING, event, fields)

    def error(self, event: str, **fields) -> None:
        self._emit(logging.ERROR, event, fields)

    def exception(self, event: str, **fields) -> None:
        self._emit(logging.ERROR, event, fields, exc_info=True)

    def info_later(self, event: str, **fields) -> None:
        """info(), LATER_S from now on the running loop (now without one): formatting and writing
        a line cost ~0.2 ms, kept off an answer that goes out within that time. Timers keep their
        order, so lines do too."""
        try:
            asyncio.get_running_loop().call_later(LATER_S, functools.partial(self.info, event, **fields))
        except RuntimeError:
            self.info(event, **fields)


def _event_fields(_logger: object, _name: str, event_dict: dict) -> dict:
    """structlog pre-chain: our records' event and fields (Event) as the event dict."""
    msg = event_dict["_record"].msg
    if isinstance(msg, Event):
        event_dict["event"] = msg.name
        event_dict.update(msg.fields)
    return event_dict


def _formatter(renderer: object) -> logging.Formatter:
    import structlog

    return structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[_event_fields, structlog.stdlib.add_log_level,
                           structlog.processors.TimeStamper(fmt="iso", utc=True)],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                    structlog.processors.format_exc_info,  # the traceback as text, then scrubbed below
                    redact, renderer])


def keep_rich_out() -> None:
    """For the daemon, before configure(): structlog's dev module imports rich where it is
    installed; the runner renders no rich tracebacks, so rich's import fails as if absent."""
    for name in ("rich", "better_exceptions"):
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]


class _Rotating(logging.handlers.RotatingFileHandler):
    """Rotates once the file has reached max_bytes. The stdlib's check formats every record twice
    (once to measure it) and stats the file twice per line; with two lines per task that was about
    a tenth of the runner's CPU per `true` (py-spy, issue 31). The file is ours, regular, and
    written only through this handler in append mode, so its position is its size; a file may
    pass max_bytes by one line."""

    def shouldRollover(self, record: logging.LogRecord) -> bool:
        if self.stream is None:  # delay=True, or just rotated
            self.stream = self._open()
        return self.maxBytes > 0 and self.stream.tell() >= self.maxBytes


def configure(log_file: str, *, to_stderr: bool, max_bytes: int = 5 << 20, backups: int = 3) -> None:
    # The log may name sessions and paths: readable by this user only.
    os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    file_handler = _Rotating(log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8")
    import structlog

    file_handler.setFormatter(_formatter(structlog.processors.JSONRenderer(default=repr)))
    handlers: list[logging.Handler] = [file_handler]
    if to_stderr:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(_formatter(structlog.dev.ConsoleRenderer(
            colors=False, pad_event_to=0, exception_formatter=structlog.dev.plain_traceback)))
        handlers.append(console)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        old.close()
    for handler in handlers:
        root.addHandler(handler)
    root.setLevel(logging.INFO)
    # aiohttp's access log line per request is noise at our request rates.
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)


def get(name: str = "plugkit") -> Logger:
    return Logger(name)
