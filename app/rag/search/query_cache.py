"""Caches for retrieval: embeddings and whole retrieval results.

- Embeddings, LRU per embedder (instance) by text: a conversation re-embeds its earlier turns on
  every follow-up, and a preview the same message the turn then sends; the answer's checks (the
  guard, the extractive answer, attribution) embed the sentences of sources that come back turn
  after turn.
- Retrieval results, LRU per database engine by (project, its embedding space, the project's
  revision, query, parameters). On SQLite the revision is the newest ``seq`` of the project's
  keyword journal and of its space's vector journal: every insert, update or delete of a chunk, by
  this process or another, appends to them in the same transaction (migrations 0006, 0010). On
  PostgreSQL it is the project's row in ``project_search_stats``, bumped by triggers on ``chunks``
  and by every vector write in the same transaction (migration 0019), so it holds across API
  servers sharing the database. Either way it is read in the search's own snapshot: a changed
  project has a new revision and its old entries are never read again (they age out of the LRU).

A result is kept as it was returned: its candidates are values (frozen; what decides again, the
reranker, makes new ones, and over budget is the budget's fact), so a hit shares them and only
copies the lists around them.
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from typing import Generic, TypeVar

import numpy as np
from sqlalchemy.engine import Engine

from app.llm.base import Embedder, Vectors

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")
EMBEDDINGS = 4096  # vectors kept per embedder (384 floats each with the default embedder: 6.3 MB)
RESULTS = 256  # retrieval results kept per database


class LRU(Generic[K, V]):
    """A small thread-safe least-recently-used map."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: K, value: V) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_embeddings: dict[int, LRU[str, Vectors]] = {}  # by id() of a live embedder (dropped with it)
_embeddings_lock = threading.Lock()
_results: weakref.WeakKeyDictionary[Engine, LRU[Hashable, object]] = weakref.WeakKeyDictionary()
_results_lock = threading.Lock()


def _embeddings_of(embedder: Embedder) -> LRU[str, Vectors] | None:
    """The embedder's cache; None for one that cannot be weakly referenced (it is not cached)."""
    key = id(embedder)
    with _embeddings_lock:
        cache = _embeddings.get(key)
        if cache is None:
            try:
                weakref.finalize(embedder, _embeddings.pop, key, None)
            except TypeError:
                return None
            cache = _embeddings[key] = LRU(EMBEDDINGS)
        return cache


def embed(embedder: Embedder, texts: Sequence[str], hits: list[bool] | None = None) -> Vectors:
    """``embedder.embed(texts)``, taking what it can from the cache (one call for the rest)."""
    cache = _embeddings_of(embedder)
    found: list[Vectors | None] = [cache.get(t) if cache is not None else None for t in texts]
    missing = [i for i, v in enumerate(found) if v is None]
    if missing:
        fresh = embedder.embed([texts[i] for i in missing])
        for i, vector in zip(missing, fresh, strict=True):
            vector = np.array(vector, dtype=np.float32)
            vector.setflags(write=False)
            if cache is not None:
                cache.put(texts[i], vector)
            found[i] = vector
    if hits is not None:
        hits.extend(i not in missing for i in range(len(texts)))
    return np.stack([v for v in found if v is not None]) if texts else np.empty((0, 0), dtype=np.float32)


def results(engine: Engine) -> LRU[Hashable, object]:
    """The retrieval-result cache of one database."""
    with _results_lock:
        cache = _results.get(engine)
        if cache is None:
            cache = _results[engine] = LRU(RESULTS)
        return cache


def clear_embeddings() -> None:
    """Forget every cached query embedding (the benchmark measures cold searches)."""
    with _embeddings_lock:
        for cache in _embeddings.values():
            cache.clear()
