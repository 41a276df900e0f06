"""A scriptable HTTP/1.1 server on 127.0.0.1, for testing provider adapters over a real socket.

A vendor fake subclasses :class:`WireServer` and implements :meth:`WireServer.answer` (the
vendor's wire protocol). Tests script failures with :meth:`WireServer.enqueue` (the next requests
get these replies instead) and read :attr:`WireServer.history` (every request received).
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, Self


@dataclass(frozen=True)
class Received:
    """One request as the server saw it."""

    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # decoded JSON


@dataclass(frozen=True)
class Reply:
    """What to answer. ``drop`` sends the headers and half the body, then closes the connection;
    ``hang`` never answers (until the server stops)."""

    status: int = 200
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    mode: Literal["normal", "drop", "hang"] = "normal"


class WireServer:
    """Base class of the vendor fakes; use as a context manager (``with OpenAIWire() as server``)."""

    def __init__(self) -> None:
        self.history: list[Received] = []
        self._script: deque[Reply] = deque()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"

    def answer(self, request: Received) -> Reply:
        """The vendor's normal behaviour; subclasses implement it."""
        raise NotImplementedError

    def enqueue(self, *replies: Reply) -> None:
        """Answer the next requests with ``replies``, in order, then go back to :meth:`answer`."""
        with self._lock:
            self._script.extend(replies)

    def _reply_to(self, request: Received) -> Reply:
        with self._lock:
            self.history.append(request)
            scripted = self._script.popleft() if self._script else None
        return scripted or self.answer(request)

    def __enter__(self) -> Self:
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()  # releases hanging handlers
        self._httpd.shutdown()
        self._httpd.server_close()


def _handler_for(server: WireServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length) if length else b""
            headers = {name.lower(): value for name, value in self.headers.items()}
            request = Received("POST", self.path, headers, json.loads(raw) if raw else None)
            self._send(server._reply_to(request))

        def _send(self, reply: Reply) -> None:
            if reply.mode == "hang":
                server._stopping.wait(30)
                self.close_connection = True
                return
            payload = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            if reply.mode == "drop":
                self.wfile.write(payload[: len(payload) // 2])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(payload)

        def log_message(self, format: str, *args: object) -> None:
            pass  # keep test output quiet

    return Handler


@contextmanager
def refusing_url() -> Iterator[str]:
    """A loopback URL where nothing listens (the port was free a moment ago)."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}"
