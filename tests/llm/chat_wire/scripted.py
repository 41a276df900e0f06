"""A scriptable HTTP/1.1 server on loopback, for the failures real servers rarely produce on demand.

Each request gets the next :class:`Reply` from the script (the last one repeats): a status and a
body sent in pieces with chunked encoding, then a clean end, a dropped connection (no final
chunk) or a stall (the connection stays open, silent). Requests are recorded as they arrive.
Runs on the test's own event loop: ``async with ScriptedServer([...]) as server: server.url``.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Literal

Ending = Literal["finish", "drop", "stall"]


@dataclass(frozen=True)
class Reply:
    status: int = 200
    content_type: str = "application/json"
    pieces: tuple[bytes, ...] = ()
    then: Ending = "finish"
    answer: bool = True  # False: read the request, then say nothing at all (not even headers)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def json_reply(status: int, payload: object) -> Reply:
    return Reply(status=status, pieces=(json.dumps(payload).encode(),))


def sse_reply(events: list[dict[str, Any]], *, done: bool = True, then: Ending = "finish") -> Reply:
    """OpenAI's streaming format: ``data: {json}`` events, then ``data: [DONE]``."""
    pieces = [f"data: {json.dumps(event)}\n\n".encode() for event in events]
    if done:
        pieces.append(b"data: [DONE]\n\n")
    return Reply(content_type="text/event-stream", pieces=tuple(pieces), then=then)


def ndjson_reply(lines: list[dict[str, Any]], *, then: Ending = "finish") -> Reply:
    """Ollama's streaming format: one JSON object per line."""
    pieces = tuple(json.dumps(line).encode() + b"\n" for line in lines)
    return Reply(content_type="application/x-ndjson", pieces=pieces, then=then)


STALL = Reply(answer=False)


@dataclass
class ScriptedServer:
    script: list[Reply]
    received: list[Received] = field(default_factory=list)
    _server: asyncio.Server | None = None
    _writers: list[asyncio.StreamWriter] = field(default_factory=list)
    _stop: asyncio.Event = field(default_factory=asyncio.Event)

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}"

    async def __aenter__(self) -> ScriptedServer:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._stop.set()
        self._server.close()
        for writer in self._writers:
            writer.close()
        await self._server.wait_closed()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._writers.append(writer)
        try:
            request = await _read_request(reader)
            if request is None:
                return
            self.received.append(request)
            reply = self.script[min(len(self.received), len(self.script)) - 1]
            await self._answer(reply, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client gave up first: that is what some tests are about
        finally:
            writer.close()

    async def _answer(self, reply: Reply, writer: asyncio.StreamWriter) -> None:
        if not reply.answer:
            await self._stop.wait()
            return
        head = (
            f"HTTP/1.1 {reply.status} Scripted\r\ncontent-type: {reply.content_type}\r\n"
            "transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
        )
        writer.write(head.encode())
        for piece in reply.pieces:
            writer.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            await writer.drain()
            await asyncio.sleep(0.005)  # separate reads on the client, like a model emitting tokens
        if reply.then == "finish":
            writer.write(b"0\r\n\r\n")
            await writer.drain()
        elif reply.then == "stall":
            await self._stop.wait()
        # "drop": close without the final chunk, as a crashed server would


async def _read_request(reader: asyncio.StreamReader) -> Received | None:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    if not lines or not lines[0]:
        return None
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    body = await reader.readexactly(int(headers.get("content-length", "0")))
    return Received(method, path, headers, body)
