"""Logging, configured once at start-up: ``ragchat serve`` and the CLI call :func:`configure`.

One handler on the root logger, writing to stderr, so our lines, uvicorn's and the libraries' share
one format: readable text by default, or one JSON object per line with ``RAGCHAT_LOG__FORMAT=json``
(``ts``, ``level``, ``logger``, ``message``, ``request_id`` inside a request, the record's
structured extras, ``exc`` with the traceback). ``RAGCHAT_LOG__LEVEL`` sets the level.

The request id lives in a context variable, set where an HTTP request or websocket connection
starts (app/request_log.py); the handler's filter copies it onto every record, library ones
included, so each line a request causes carries it. Tasks copy their creator's context, so a chat
turn carries the id of the request that started it.

Secrets: nothing logs headers, query strings or GraphQL variables; as a last guard the configured
API keys are replaced by ``[redacted]`` in every formatted line.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import traceback
from collections.abc import Iterable
from contextvars import ContextVar
from typing import IO, Any

from app.settings import LogSettings, Settings

request_id: ContextVar[str | None] = ContextVar("ragchat_request_id", default=None)
# The OpenTelemetry trace of the request being served, when tracing is on (app/ops/tracing.py): the
# log lines and the spans (and the stored retrieval trace) join on it.
trace_id: ContextVar[str | None] = ContextVar("ragchat_trace_id", default=None)

# The attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "request_id",
    "trace_id",
}
# uvicorn's colour variant of its own message; noise in a log file.
_DROPPED_EXTRAS = frozenset({"color_message"})
# Chatty at info (a line per HTTP call to a provider; alembic at every start); shown at debug.
_QUIET_AT_INFO = ("httpx", "httpcore", "alembic")
REDACTED = "[redacted]"
MIN_REDACTED = 8
_ESCAPES = {code: f"\\x{code:02x}" for code in [*range(32), 127]} | {10: "\\n", 13: "\\r", 9: "\\t"}


def current_request_id() -> str | None:
    """The id of the HTTP request or websocket connection being served, or None outside one."""
    return request_id.get()


class RequestIdFilter(logging.Filter):
    """Puts the current request id on each record (None outside a request)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "request_id", None) is None:
            record.request_id = request_id.get()
        if getattr(record, "trace_id", None) is None:
            record.trace_id = trace_id.get()
        return True


class UvicornHandshakeLines(logging.Filter):
    """Drops uvicorn's own per-connection lines for websockets ('"WebSocket /graphql" [accepted]',
    'connection open', 'connection closed'): the connection's summary line (app/request_log.py)
    replaces them, and uvicorn's repeats the query string, which may hold what a client should not
    have put there. (Its HTTP access log is turned off in :func:`uvicorn_options`.)"""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name != "uvicorn.error" or not isinstance(record.msg, str):
            return True
        return not (
            record.msg.startswith('%s - "WebSocket %s"') or record.msg in ("connection open", "connection closed")
        )


def extras(record: logging.LogRecord) -> dict[str, Any]:
    """The structured fields a call passed with ``extra=``."""
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and key not in _DROPPED_EXTRAS and not key.startswith("_")
    }


class _Redacting(logging.Formatter):
    def __init__(self, secrets: Iterable[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Short values are skipped: redacting every "abc" would garble the log and hide nothing.
        self.secrets = tuple(s for s in secrets if len(s) >= MIN_REDACTED)

    def redact(self, line: str) -> str:
        for secret in self.secrets:
            if secret in line:
                line = line.replace(secret, REDACTED)
        return line


class JsonFormatter(_Redacting):
    """One JSON object per line: ts (UTC, ms), level, logger, message, request_id, extras, exc."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if (rid := getattr(record, "request_id", None)) is not None:
            entry["request_id"] = rid
        if (tid := getattr(record, "trace_id", None)) is not None:
            entry["trace_id"] = tid
        for key, value in extras(record).items():
            entry.setdefault(key, value)
        if record.exc_info:
            entry["exc"] = "".join(traceback.format_exception(*record.exc_info)).rstrip()
        if record.stack_info:
            entry["stack"] = record.stack_info
        return self.redact(json.dumps(entry, ensure_ascii=False, default=str))


class TextFormatter(_Redacting):
    """``2025-06-01 12:00:00.123 INFO  ragchat.request [3f9c0a1b2d4e] POST /graphql 200 ...``: the
    message says what a reader needs (the structured extras are for the JSON format). Control
    characters in it are escaped, so text a client sent cannot forge a line."""

    def format(self, record: logging.LogRecord) -> str:
        ts = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created)) + f".{int(record.msecs):03d}"
        rid = getattr(record, "request_id", None)
        line = f"{ts} {record.levelname:<5} {record.name}{f' [{rid}]' if rid else ''} "
        line += record.getMessage().translate(_ESCAPES)
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return self.redact(line)


def secrets_of(settings: Settings) -> list[str]:
    """The configured secret values, never to appear in a log line."""
    values = [key.get_secret_value() for key in settings.api.api_keys]
    if settings.openai.api_key is not None:
        values.append(settings.openai.api_key.get_secret_value())
    return [value for value in values if value]


class _CurrentStderr(logging.StreamHandler[IO[str]]):
    """Writes to whatever ``sys.stderr`` is when a line is written, not when the handler was made:
    a handler that kept the stderr of its moment outlives it when something swaps stderr for a
    while (pytest's capture, a test server's thread), and then fails on every line with "I/O
    operation on closed file". The standard library's last-resort handler does the same."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> IO[str]:
        return sys.stderr

    @stream.setter
    def stream(self, _value: IO[str]) -> None:
        pass


def build_handler(log: LogSettings, secrets: Iterable[str] = (), stream: IO[str] | None = None) -> logging.Handler:
    handler = logging.StreamHandler(stream) if stream is not None else _CurrentStderr()
    handler.setFormatter(JsonFormatter(secrets) if log.format == "json" else TextFormatter(secrets))
    handler.addFilter(RequestIdFilter())
    handler.addFilter(UvicornHandshakeLines())
    handler.set_name("ragchat")
    return handler


def configure(settings: Settings, *, level: str | None = None, stream: IO[str] | None = None) -> logging.Handler:
    """Send every logger's records through one ragchat handler on the root logger, at ``level``
    (default ``settings.log.level``). Calling it again replaces the handler instead of adding one."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "ragchat"]:
        root.removeHandler(old)
    handler = build_handler(settings.log, secrets_of(settings), stream)
    root.addHandler(handler)
    numeric = logging.getLevelNamesMapping()[(level or settings.log.level).upper()]
    root.setLevel(numeric)
    for name in _QUIET_AT_INFO:
        logging.getLogger(name).setLevel(logging.NOTSET if numeric <= logging.DEBUG else logging.WARNING)
    # uvicorn's loggers keep no handlers of their own: their lines reach ours once, through the root.
    for name in ("uvicorn", "uvicorn.error", "uvicorn.access", "uvicorn.asgi"):
        logger = logging.getLogger(name)
        logger.handlers.clear()
        logger.propagate = True
        logger.setLevel(logging.NOTSET)
    return handler


def uvicorn_options(settings: Settings) -> dict[str, Any]:
    """What ``uvicorn.run`` needs so that it keeps to :func:`configure`'s logging: no logging
    config of its own and no access log (app/request_log.py writes one line per request instead)."""
    return {"log_config": None, "access_log": False, "log_level": settings.log.level}
