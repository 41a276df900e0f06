"""Graceful shutdown: a stopping server takes no new chat turns and lets the answers streaming in
this process finish, for up to ``RAGCHAT_OPS__SHUTDOWN_GRACE`` seconds, before uvicorn closes the
connections (which would cut the websockets streaming them, close code 1012).

uvicorn handles SIGTERM and SIGINT itself (it stops at once, closing every websocket). At start-up
:meth:`Drain.install` puts a handler in front of uvicorn's: the first signal starts the drain (new
turns are refused with ``BusyError``, so a client retries elsewhere) and hands the signal on to
uvicorn when the answers are done or the grace has passed; a second signal hands it on at once.
It applies where uvicorn handles the signals: the main thread of a ``ragchat serve`` process (and of
each of its workers); an app served from another thread (tests) stops as before.
"""

from __future__ import annotations

import asyncio
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

log = logging.getLogger("ragchat")

_stopping = False


def stopping() -> bool:
    """Whether this process is draining: a new turn is refused."""
    return _stopping


class Drain:
    def __init__(self, grace: float, running: Callable[[], int]) -> None:
        self.grace = grace
        self.running = running
        self._loop: asyncio.AbstractEventLoop | None = None
        self._previous: dict[int, Any] = {}
        self._task: asyncio.Task[None] | None = None

    def install(self) -> bool:
        """Put the drain in front of the current SIGTERM / SIGINT handlers (uvicorn's); False where
        signals cannot be handled (not the main thread)."""
        global _stopping
        _stopping = False
        if threading.current_thread() is not threading.main_thread() or self.grace <= 0:
            return False
        self._loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            self._previous[sig] = signal.getsignal(sig)
            signal.signal(sig, self._signalled)
        return True

    def uninstall(self) -> None:
        for sig, handler in self._previous.items():
            if signal.getsignal(sig) == self._signalled:
                signal.signal(sig, handler)
        self._previous.clear()

    def _signalled(self, sig: int, frame: FrameType | None) -> None:
        global _stopping
        if _stopping or self._loop is None:  # a second signal: stop now
            self._hand_on(sig, frame)
            return
        _stopping = True
        self._loop.call_soon_threadsafe(self._start, sig)

    def _start(self, sig: int) -> None:
        self._task = asyncio.ensure_future(self._drain(sig))

    async def _drain(self, sig: int) -> None:
        streaming = self.running()
        if streaming:
            log.info(
                "stopping: no new chat turns; waiting up to %g s for %d streaming answer%s to finish",
                self.grace,
                streaming,
                "" if streaming == 1 else "s",
            )
        deadline = time.monotonic() + self.grace
        while time.monotonic() < deadline:
            if not self.running():
                break
            await asyncio.sleep(0.05)
        left = self.running()
        if left:
            log.warning(
                "stopping: %d answer%s still streaming after %g s are cut off",
                left,
                "" if left == 1 else "s",
                self.grace,
            )
        elif streaming:
            log.info("stopping: every streaming answer finished")
        self._hand_on(sig, None)

    def _hand_on(self, sig: int, frame: FrameType | None) -> None:
        previous = self._previous.get(sig)
        if callable(previous):
            previous(sig, frame)
        else:  # the default (or ignoring): as if the drain had not been there
            signal.signal(sig, previous if previous is not None else signal.SIG_DFL)
            signal.raise_signal(sig)
