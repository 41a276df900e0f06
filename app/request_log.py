"""One id and one summary line for every HTTP request and websocket connection.

:class:`RequestLog` is the outermost middleware (pure ASGI, so websockets and streamed responses
pass through untouched). It takes the client's ``X-Request-ID`` when it is sane (1-64 characters
of ``A-Za-z0-9._:-``, starting with a letter or digit: a proxy's or a caller's own id) and makes
one otherwise, sets it in :data:`app.logs.request_id` for everything the request logs, and returns
it in the response's ``X-Request-ID`` (also on a websocket's handshake, and on the 500 it answers
itself when an exception escapes the app before a response started). The GraphQL context uses the
same id, so the "Unexpected error (request ...)" a client is shown finds its log lines.

When the request ends it logs one line on ``ragchat.request``: method, path (never the query
string, which can hold a GraphQL document and its variables), status, duration, the GraphQL
operations that ran and their outcome (:class:`RequestRecord`, filled in by
app/graphql/operation_log.py). A websocket's line is logged when it closes; its operations also get
a line each as they end.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from app import logs

log = logging.getLogger("ragchat.request")
errors = logging.getLogger("ragchat.error")  # tracebacks, beside (not inside) the one summary line

HEADER = "x-request-id"
_SANE_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,63}")
# Outcomes, worst last: a request's outcome is the worst of its operations'. Any other outcome is a
# result union's error member (ValidationError, NotFoundError, ...): the client's to act on.
OK, GRAPHQL_ERRORS, INTERNAL_ERROR = "ok", "graphql_errors", "internal_error"
_RANK = {OK: 0, GRAPHQL_ERRORS: 2, INTERNAL_ERROR: 3}
MAX_NAMES = 10  # distinct operation names kept per connection (a websocket can run thousands)


def rank(outcome: str) -> int:
    return _RANK.get(outcome, 1)


def worst(a: str, b: str) -> str:
    return b if rank(b) > rank(a) else a


def request_id_from(value: str | None) -> str:
    """The client's id when it is sane, else a new one."""
    if value is not None and _SANE_ID.fullmatch(value):
        return value
    return uuid.uuid4().hex[:12]


@dataclass
class RequestRecord:
    """What one request (or websocket connection) did, for its summary line."""

    request_id: str
    websocket: bool
    operation_count: int = 0
    names: dict[str, None] = field(default_factory=dict)  # ordered, distinct; anonymous ones have none
    types: dict[str, None] = field(default_factory=dict)
    outcome: str = OK

    def operation(self, name: str | None, kind: str | None, outcome: str) -> None:
        self.operation_count += 1
        if name and len(self.names) < MAX_NAMES:
            self.names[name] = None
        if kind:
            self.types[kind] = None
        self.note(outcome)

    def note(self, outcome: str) -> None:
        self.outcome = worst(self.outcome, outcome)


_record: ContextVar[RequestRecord | None] = ContextVar("ragchat_request_record", default=None)


def current() -> RequestRecord | None:
    return _record.get()


class RequestLog:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        websocket = scope["type"] == "websocket"
        rid = request_id_from(Headers(scope=scope).get(HEADER))
        # Not reset afterwards: each request runs in its own task (uvicorn's), and uvicorn's own
        # line about an exception that escapes the app is logged after we return, in this task.
        logs.request_id.set(rid)
        record = RequestRecord(rid, websocket)
        _record.set(record)
        started = time.perf_counter()
        status: int | None = None
        close_code: int | None = None
        header = (HEADER.encode(), rid.encode())

        async def sending(message: Message) -> None:
            nonlocal status, close_code
            kind = message["type"]
            if kind in ("http.response.start", "websocket.http.response.start"):
                status = message["status"]
                message = {**message, "headers": [*message.get("headers", []), header]}
            elif kind == "websocket.accept":
                status = 101
                message = {**message, "headers": [*message.get("headers", []), header]}
            elif kind == "websocket.close":
                status = status or 403  # closed before the handshake: uvicorn answers 403
                close_code = message.get("code", 1000)
            await send(message)

        async def receiving() -> Message:
            nonlocal close_code
            message = await receive()
            if message["type"] == "websocket.disconnect" and close_code is None:
                close_code = message.get("code", 1005)
            return message

        try:
            await self.app(scope, receiving if websocket else receive, sending)
        except Exception:  # a cancellation leaves the status unknown
            record.note(INTERNAL_ERROR)
            if websocket or status is not None:
                status = status or 500
                raise  # too late for an answer of ours: uvicorn logs the traceback and drops the connection
            # Answered here rather than by Starlette's error page, so the 500 carries the id that
            # finds this traceback in the log.
            errors.exception("request %s: unhandled error", rid)
            status = 500
            await send(
                {
                    "type": "http.response.start",
                    "status": 500,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"), header],
                }
            )
            await send({"type": "http.response.body", "body": f"Internal Server Error (request {rid})".encode()})
        finally:
            _summary(scope, record, status, close_code, (time.perf_counter() - started) * 1000)


def _summary(scope: Scope, record: RequestRecord, status: int | None, close_code: int | None, ms: float) -> None:
    method = "WS" if record.websocket else scope.get("method", "GET")
    path = scope.get("path", "")
    if status is None:  # the client left before an answer
        outcome = worst(record.outcome, "disconnected")
    elif record.operation_count == 0 and status >= 400:
        outcome = worst(record.outcome, f"http_{status}")
    else:
        outcome = record.outcome
    fields: dict[str, object] = {
        "method": method,
        "path": path,
        "status": status,
        "duration_ms": round(ms, 1),
        "outcome": outcome,
        "client": (scope.get("client") or ("-",))[0],
    }
    text = f"{method} {path} {status if status is not None else '-'} {ms:.1f} ms"
    if record.operation_count:
        names = ",".join(record.names) or None
        fields |= {"operation_name": names, "operation_type": ",".join(record.types) or None}
        text += f" {fields['operation_type'] or 'graphql'} {names or '(anonymous)'}"
    if record.websocket:
        fields |= {"close_code": close_code, "operation_count": record.operation_count}
        count = record.operation_count
        text += f" ({count} operation{'' if count == 1 else 's'}, close {close_code})"
    level = logging.WARNING if outcome == INTERNAL_ERROR or (status or 0) >= 500 else logging.INFO
    log.log(level, "%s %s", text, outcome, extra=fields)
