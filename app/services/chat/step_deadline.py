"""A deadline for each step of a stream with one timer per stream, not one per step.

``await deadline.step(anext(stream), when)`` behaves like ``async with asyncio.timeout_at(when):
await anext(stream)``: the awaited step is cancelled when ``when`` (loop time) passes first, and
TimeoutError is raised in its place; a cancellation from elsewhere passes through as
CancelledError. A new ``asyncio.timeout`` per token scheduled a timer and cancelled it again for
every token: at 32 streams ~5% of the event loop's time (docs/BENCHMARKS.md, finding 7). Here a
step only stores its deadline; the one timer, when it fires, either moves itself to the current
deadline (tokens came meanwhile) or expires the step under way.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

T = TypeVar("T")


class StepDeadline:
    """Deadlines for the awaits of one task, one at a time. Close it when the stream ends."""

    def __init__(self) -> None:
        task = asyncio.current_task()
        if task is None:
            raise RuntimeError("StepDeadline is used inside a task")
        self._task = task
        self._loop = asyncio.get_running_loop()
        self._when = 0.0  # the current step's deadline
        self._armed = 0.0  # when the timer fires
        self._handle: asyncio.TimerHandle | None = None
        self._waiting = False
        self._expired = False

    def time(self) -> float:
        """The clock deadlines are given in (the event loop's)."""
        return self._loop.time()

    async def step(self, awaitable: Awaitable[T], when: float) -> T:
        """``await awaitable``, or TimeoutError once ``when`` has passed (``awaitable`` is then cancelled)."""
        self._when = when
        if self._handle is None or self._armed > when:
            self._arm(when)
        cancelling = self._task.cancelling()
        self._waiting = True
        try:
            result = await awaitable
        except asyncio.CancelledError:
            if self._expired:
                self._expired = False
                if self._task.uncancel() <= cancelling:  # our cancellation only: the deadline passed
                    raise TimeoutError from None
            raise
        finally:
            self._waiting = False
        if self._expired:  # the step swallowed our cancellation and ended: take the request back
            self._expired = False
            self._task.uncancel()
        return result

    def close(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _arm(self, when: float) -> None:
        if self._handle is not None:
            self._handle.cancel()
        self._armed = when
        self._handle = self._loop.call_at(when, self._fire)

    def _fire(self) -> None:
        self._handle = None
        if not self._waiting:
            return  # between steps: the next step arms the timer again
        if self._when > self._armed:
            self._arm(self._when)  # steps ended meanwhile: the current one's deadline is later
            return
        self._expired = True
        self._task.cancel()
