"""The upload limit, enforced while a request body streams in.

Without it the whole body was read (spooled to disk by the multipart parser) before a resolver
could compare a file's size with ``RAGCHAT_API__MAX_UPLOAD_BYTES``: a client could make the server
read 300 MB to be told no. This pure ASGI middleware answers ``413`` as soon as the declared
``Content-Length`` or the bytes received so far exceed the limit plus room for the multipart
envelope (the operation, the map, part headers), and closes the connection so the rest is never read.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# The GraphQL operation, the map and each part's headers around the files themselves.
ENVELOPE_BYTES = 256 * 1024
GRAPHQL = frozenset({"/graphql"})


class BodyLimitMiddleware:
    """Refuse ``POST`` bodies to ``paths`` larger than ``max_bytes() + ENVELOPE_BYTES``.

    ``max_bytes`` is read per request, so a changed setting applies to the next request."""

    def __init__(self, app: ASGIApp, max_bytes: Callable[[], int], paths: frozenset[str] = GRAPHQL) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.paths = paths

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] not in self.paths:
            await self.app(scope, receive, send)
            return
        upload_limit = self.max_bytes()
        limit = upload_limit + ENVELOPE_BYTES
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(send, upload_limit)
            return
        received = 0
        refused = False

        async def counted() -> Message:
            nonlocal received, refused
            if refused:
                return {"type": "http.disconnect"}
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    refused = True
                    await _refuse(send, upload_limit)
                    return {"type": "http.disconnect"}  # the app stops reading; its answer is dropped
            return message

        async def guarded(message: Message) -> None:
            if not refused:
                await send(message)

        try:
            await self.app(scope, counted, guarded)
        except Exception:
            if not refused:  # the app failing on the cut-off body is expected; anything else is not
                raise


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


async def _refuse(send: Send, upload_limit: int) -> None:
    message = f"the request body is larger than the upload limit of {upload_limit} bytes"
    body = json.dumps({"errors": [{"message": message}]}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 413,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                (b"connection", b"close"),  # the server stops reading the rest of the body
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
