"""How many worker threads run a chat turn's CPU-bound steps at once.

A turn's fixed work — storing the question, retrieval, the token budget, the answer guard, storing
the answer — runs in worker threads, off the event loop. But one GIL serves them all: when 32
streams start their turns together, 32 threads each want it, and the event loop (which sends every
token of every stream) waits behind all of them, about a switch interval (5 ms) each time. Through
this gate at most ``WORKERS`` of those steps hold or want the GIL at once; the others wait on a lock,
which takes no GIL. Nothing runs slower for it: there is only one GIL to share, and the steps'
waits on SQLite or numpy (without the GIL) still overlap within the gate.

Waits on a provider never hold a place: a rewrite or judgement of the search is awaited on the
loop, and the embedder the turn uses (``ungated``) gives the place back while it embeds (a remote
embedder waits on the network; the local one computes mostly without the GIL).

A step waits for its thread on the event loop (``run``): at most ``THREADS`` of the turns' steps
are in worker threads at once, the rest wait without one. Sent to anyio's shared pool (40 threads)
to wait for a place there, 40 turns starting together took every thread, and any other work's
thread (a turn's access check, another request's read) waited behind them.
"""

from __future__ import annotations

import threading
import weakref
from asyncio import AbstractEventLoop, get_running_loop
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from app.llm.base import Embedder, SpaceId, Vectors

T = TypeVar("T")
WORKERS = 2  # one computing while another waits on SQLite or numpy (both release the GIL)
# Steps in worker threads at once: the places' holders, and steps whose place is given back while
# they wait on an embedder (those overlap up to this many).
THREADS = 16

_gate = threading.BoundedSemaphore(WORKERS)
_held = threading.local()
_limiters: weakref.WeakKeyDictionary[AbstractEventLoop, anyio.CapacityLimiter] = weakref.WeakKeyDictionary()


async def run(step: Callable[[], T]) -> T:
    """``step`` in a worker thread, through the gate: it waits for one of ``THREADS`` threads on the
    loop, then for a place in the thread."""
    return await anyio.to_thread.run_sync(_gated, step, limiter=_threads())


def _threads() -> anyio.CapacityLimiter:
    loop = get_running_loop()
    if (found := _limiters.get(loop)) is None:
        found = _limiters[loop] = anyio.CapacityLimiter(THREADS)
    return found


def _gated(step: Callable[[], T]) -> T:
    with cpu():
        return step()


@contextmanager
def cpu() -> Iterator[None]:
    """Hold one of the gate's places for the block (re-entrant within a thread)."""
    if getattr(_held, "depth", 0):
        _held.depth += 1
        try:
            yield
        finally:
            _held.depth -= 1
        return
    with _gate:
        _held.depth = 1
        try:
            yield
        finally:
            _held.depth = 0


@contextmanager
def released() -> Iterator[None]:
    """Give the place back for the block (a wait on something else, e.g. a model's reply)."""
    depth = getattr(_held, "depth", 0)
    if not depth:
        yield
        return
    _held.depth = 0
    _gate.release()
    try:
        yield
    finally:
        _gate.acquire()
        _held.depth = depth


class _Ungated:
    """An embedder whose ``embed`` runs outside the gate; everything else is the embedder's own."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    def embed(self, texts: Sequence[str]) -> Vectors:
        with released():
            return self.inner.embed(texts)

    @property
    def space(self) -> SpaceId:
        with released():  # a remote embedder's first read may be a probe request
            return self.inner.space

    @space.setter
    def space(self, value: SpaceId) -> None:
        raise AttributeError("the space is the embedder's own")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def ungated(embedder: Callable[[], Embedder]) -> Callable[[], Embedder]:
    """``embedder`` with its embedder wrapped by ``_Ungated``: the same wrapper while the embedder is
    the same object (the query-embedding cache is kept per embedder object, app/rag/search/query_cache.py)."""
    made: list[_Ungated] = []
    lock = threading.Lock()

    def get() -> Embedder:
        inner = embedder()
        with lock:
            if not made or made[0].inner is not inner:
                made[:] = [_Ungated(inner)]
            return made[0]

    return get
