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

A free place goes to the step of the turn that started first (``turn_started``), not to the step
that asked first: a turn's start is several steps (storing the question, the query, each pass,
the budget), and served in order of asking, 32 turns starting together take turns step by step, so
every one of them reaches its first token only when nearly all have done their starts. Oldest first,
the first turn's start is done after its own steps and the last's after everyone's, as before: the
same work, the median turn's first token about twice as early. A step outside a turn counts from
when it asks, so nothing waits behind turns that started after it.
"""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from app.llm.base import Embedder, SpaceId, Vectors

WORKERS = 2  # one computing while another waits on SQLite or numpy (both release the GIL)

# When the turn whose steps run in this context started (None: not in a turn). A task copies its
# context, and anyio runs a worker thread's function in a copy of the caller's, so the turn's task
# and every step it sends to a thread see it.
_turn_since: ContextVar[float | None] = ContextVar("chat_turn_since", default=None)


def turn_started() -> None:
    """Mark the current context as a turn starting now: its steps go before later turns' steps."""
    _turn_since.set(time.monotonic())


class _Places:
    """``places`` places, each freed one handed to the waiting step of the oldest turn."""

    def __init__(self, places: int) -> None:
        self._lock = threading.Lock()
        self._free = places
        self._places = places
        self._order = itertools.count()  # ties (steps outside turns asking at once): first come
        self._waiting: list[tuple[float, int, threading.Lock]] = []

    def acquire(self) -> None:
        since = _turn_since.get()
        with self._lock:
            if self._free:
                self._free -= 1
                return
            handed = threading.Lock()  # released by the step that hands its place over
            handed.acquire()
            heapq.heappush(self._waiting, (time.monotonic() if since is None else since, next(self._order), handed))
        handed.acquire()

    def release(self) -> None:
        with self._lock:
            if self._waiting:  # the place passes on directly: nobody can take it in between
                heapq.heappop(self._waiting)[2].release()
                return
            if self._free >= self._places:
                raise ValueError("the gate was released more often than it was entered")
            self._free += 1

    @property
    def waiting(self) -> int:
        with self._lock:
            return len(self._waiting)


_gate = _Places(WORKERS)
_held = threading.local()


def waiting() -> int:
    """How many steps wait for a place now."""
    return _gate.waiting


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
    _gate.acquire()
    _held.depth = 1
    try:
        yield
    finally:
        _held.depth = 0
        _gate.release()


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
