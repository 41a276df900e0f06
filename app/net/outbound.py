"""How many outbound requests a server has open at once, apart from everything else it does.

A request to an address a user chose runs on the event loop (app/net/fetch.py is async), so a
remote that answers slowly holds a socket and a slot here, never a worker thread: the thread pool
that database resolvers and ``/healthz`` share is not touched by it. The slots bound the sockets and
the bodies held in memory at once; a request that finds them all taken waits ``wait_seconds`` for
one, then is refused with a :class:`~app.errors.FetchError` saying so.

Like anyio's default thread limiter, the gate is one per event loop (a server's loop): the
lifespan sizes it from the settings (:func:`configure`); code that fetches asks for :func:`current`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from anyio.lowlevel import RunVar

from app.errors import FetchError
from app.settings import OutboundSettings


class Gate:
    """At most ``max_concurrent`` requests at once; a request waits ``wait_seconds`` for its turn."""

    def __init__(self, max_concurrent: int, wait_seconds: float) -> None:
        self.max_concurrent = max_concurrent
        self.wait_seconds = wait_seconds
        self._slots = asyncio.Semaphore(max_concurrent)
        self._open = 0

    @property
    def in_use(self) -> int:
        return self._open

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the block, or raise FetchError when none came free in time."""
        try:
            async with asyncio.timeout(self.wait_seconds):
                await self._slots.acquire()
        except TimeoutError:
            raise FetchError(
                f"this server already has {self.max_concurrent} outbound requests open, its limit "
                "(RAGCHAT_OUTBOUND__MAX_CONCURRENT); try again shortly"
            ) from None
        self._open += 1
        try:
            yield
        finally:
            self._open -= 1
            self._slots.release()


_GATE: RunVar[Gate] = RunVar("ragchat_outbound_gate")


def configure(settings: OutboundSettings) -> Gate:
    """Size the running loop's gate (the server's lifespan does, before any request)."""
    gate = Gate(settings.max_concurrent, settings.wait_seconds)
    _GATE.set(gate)
    return gate


def current() -> Gate:
    """The running loop's gate; one with the default settings if none was configured (a CLI run)."""
    try:
        return _GATE.get()
    except LookupError:
        return configure(OutboundSettings())
