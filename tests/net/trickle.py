"""A hostile loopback HTTP server that sends its response headers one byte at a time, ``interval``
seconds apart, for as long as it likes: every byte renews a per-read timeout, so only a wall-clock
deadline ends the exchange.

All its connections are served by one thread's event loop (the server adds no thread per client,
so a test can count the threads of the server under test). It stops trickling to a client as soon
as that client closes the connection, and records how many bytes it had sent by then."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager


class Trickle:
    def __init__(self, interval: float, length: int) -> None:
        self.interval = interval
        # A status line, then one header long enough to last length * interval seconds.
        self.head = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nX-Slow: " + b"z" * length
        self.accepted = 0
        self.open = 0
        self.sent_when_closed: list[int] = []  # per finished connection, bytes sent before the client left
        self.port = 0

    async def serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        self.open += 1
        sent = 0
        try:
            await reader.readuntil(b"\r\n\r\n")
            gone = asyncio.ensure_future(reader.read())  # a request body is read and dropped; b"" is the client leaving
            try:
                for byte in self.head:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    sent += 1
                    done, _ = await asyncio.wait([gone], timeout=self.interval)
                    if done:
                        break
            finally:
                gone.cancel()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self.open -= 1
            self.sent_when_closed.append(sent)
            writer.close()

    @property
    def seconds(self) -> float:
        """How long one full trickle lasts."""
        return len(self.head) * self.interval


@contextmanager
def trickling(host: str = "127.0.0.1", *, interval: float = 0.25, length: int = 60) -> Iterator[Trickle]:
    trickle = Trickle(interval, length)
    loop = asyncio.new_event_loop()
    started = threading.Event()
    server: asyncio.Server | None = None

    async def start() -> None:
        nonlocal server
        server = await asyncio.start_server(trickle.serve, host, 0)
        trickle.port = server.sockets[0].getsockname()[1]

    def run() -> None:
        loop.run_until_complete(start())
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, daemon=True, name="trickle")
    thread.start()
    started.wait(10)
    try:
        yield trickle
    finally:

        async def stop() -> None:
            assert server is not None
            server.close()
            serving = [task for task in asyncio.all_tasks() if task is not asyncio.current_task()]
            for task in serving:
                task.cancel()
            await asyncio.gather(*serving, return_exceptions=True)
            loop.call_soon(loop.stop)  # after the transports' own closing callbacks

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        thread.join(10)
        loop.close()
