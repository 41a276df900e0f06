"""A lean reader of an OpenAI-compatible server's stream of server-sent events.

The SDK still sends the request (retries, status errors, its timeouts); only reading the stream's
body is done here. The SDK's reader decodes every line into a ``ServerSentEvent`` through three
nested async generators, then passes each chunk through its response-data processing: ~13% of the
event loop's time at 32 concurrent streams. This one splits each piece of the body that arrives on
blank lines with bytes operations and parses each event's data with one ``json.loads``.

It keeps the SDK's behaviour: ``data: [DONE]`` ends the stream (the rest of an HTTP/1.1 body is
read so the connection can be reused), a chunk carrying an ``error`` object raises ``APIError``
with its message, a timeout or a broken connection mid-stream raises ``APITimeoutError`` /
``APIConnectionError``, and the response is closed however the stream ends. Lines may end in
``\\n``, ``\\r\\n`` or ``\\r`` (the SSE specification); comments and fields other than ``data`` and
``event`` are ignored; an event's several ``data`` lines are joined by newlines.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import openai

DRAIN_SECONDS = 0.1  # reading what follows [DONE] (usually nothing) so the connection is reused


class ChunkStream(openai.AsyncStream[object]):
    """``openai.AsyncStream`` whose items are each event's JSON data as parsed (dicts, mostly)."""

    async def __stream__(self) -> AsyncIterator[Any]:
        response = self.response
        pending = b""
        try:
            try:
                async for piece in response.aiter_bytes():
                    pending += piece
                    if b"\r" in pending:  # \r\n or \r ends a line too; a last \r may be half of a \r\n
                        held = b"\r" if pending.endswith(b"\r") else b""
                        pending = _lf(pending[: len(pending) - len(held)]) + held
                    if b"\n\n" not in pending:
                        continue
                    *events, pending = pending.split(b"\n\n")
                    for event in events:
                        data, name = _fields(event)
                        if data is None:
                            continue
                        if data.startswith(b"[DONE]"):
                            await _drain(response)
                            return
                        yield self._checked(json.loads(data), name)
            except httpx2.TimeoutException as exc:
                raise openai.APITimeoutError(request=response.request) from exc
            except httpx2.RequestError as exc:
                raise openai.APIConnectionError(request=response.request) from exc
            for event in _lf(pending).split(b"\n\n"):  # the body ended without a blank line after them
                data, name = _fields(event.strip(b"\n"))
                if data is None:
                    continue
                if data.startswith(b"[DONE]"):
                    return
                yield self._checked(json.loads(data), name)
        finally:
            await response.aclose()

    def _checked(self, data: Any, name: bytes | None) -> Any:
        error = data.get("error") if isinstance(data, dict) else None
        if error:
            message = error.get("message") if isinstance(error, dict) else None
            if not isinstance(message, str) or not message:
                message = "An error occurred during streaming"
            raise openai.APIError(message=message, request=self.response.request, body=error)
        return data


def _lf(text: bytes) -> bytes:
    return text.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _fields(event: bytes) -> tuple[bytes | None, bytes | None]:
    """An event's data (its ``data`` lines joined; None when it has none) and its ``event`` name."""
    if event.startswith(b"data: ") and b"\n" not in event:  # nearly every event: one data line
        return event[6:], None
    data: list[bytes] = []
    name = None
    for line in event.split(b"\n"):
        field, colon, value = line.partition(b":")
        if not colon or not field:  # a bare field name has an empty value; ":..." is a comment
            if field == b"data":
                data.append(b"")
            continue
        value = value[1:] if value.startswith(b" ") else value
        if field == b"data":
            data.append(value)
        elif field == b"event":
            name = value
    return (b"\n".join(data) if data else None), name


async def _drain(response: httpx2.Response) -> None:
    """Read what is left of the body (for HTTP/1.1 connection reuse), briefly; never an error."""
    if response.http_version != "HTTP/1.1" or response.is_closed:
        return
    with anyio.move_on_after(DRAIN_SECONDS):
        try:
            async for _ in response.aiter_raw():
                pass
        except (httpx2.RequestError, httpx2.StreamError):
            pass
