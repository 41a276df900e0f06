"""The threads of this process that are doing something: every thread but the idle workers of a
thread pool (anyio's, asyncio's executor), which wait for work in ``queue.get`` and are kept for
reuse. A count of these goes back to its baseline once the work that needed threads is over; a
thread stuck reading from a remote never does."""

from __future__ import annotations

import sys
import threading
from types import FrameType


def _idle(frame: FrameType | None) -> bool:
    # An executor worker waits in SimpleQueue.get, written in C: its innermost Python frame is _worker.
    if frame is not None and frame.f_code.co_filename.endswith("/concurrent/futures/thread.py"):
        return frame.f_code.co_name == "_worker"
    while frame is not None:  # anyio's workers wait in queue.Queue.get
        if frame.f_code.co_name == "get" and frame.f_code.co_filename.endswith("/queue.py"):
            return True
        frame = frame.f_back
    return False


def working() -> list[str]:
    """The names of the threads that are not idle pool workers (this one included)."""
    frames = sys._current_frames()
    return sorted(t.name for t in threading.enumerate() if not _idle(frames.get(t.ident or -1)))
