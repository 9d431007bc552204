"""structlog setup: JSON lines to $PLUGKIT_HOME/runner.log (rotated), readable text on a terminal."""

import logging
import logging.handlers
import os
import sys

import structlog

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
    """A processor: drop token-like keys and any registered secret inside values."""
    return _scrub(event_dict)  # type: ignore[return-value]


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
    shared = [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact,
    ]
    # The log may name sessions and paths: readable by this user only.
    os.close(os.open(log_file, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600))
    file_handler = _Rotating(
        log_file, maxBytes=max_bytes, backupCount=backups, encoding="utf-8"
    )
    file_handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                        structlog.processors.format_exc_info,
                        structlog.processors.JSONRenderer()],
            foreign_pre_chain=shared,
        )
    )
    handlers: list[logging.Handler] = [file_handler]
    if to_stderr:
        console = logging.StreamHandler(sys.stderr)
        console.setFormatter(
            structlog.stdlib.ProcessorFormatter(
                processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                            structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())],
                foreign_pre_chain=shared,
            )
        )
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
    structlog.configure(
        processors=shared + [structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )


def get(name: str = "plugkit") -> structlog.stdlib.BoundLogger:
    return structlog.get_logger(name)
