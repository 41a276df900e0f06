"""Readiness (``/readyz``), apart from liveness (``/healthz``): a server can answer and still not be
able to serve a turn quickly. Ready means all of:

- the database answers and its migrations are at the code's head (app/services/health.py);
- the embedder is loaded (a local model is read from disk on first use, which took seconds);
- the in-memory indexes of every active embedding space are loaded (on SQLite: the vector matrix
  and the keyword postings of each knowledge base; a 500k-chunk index takes a while).

The embedder and the indexes are loaded once at start-up, off the event loop (:meth:`Readiness.start`);
until that is done the server answers as before (the first search would load them itself) but says
it is not ready, so a load balancer sends its traffic elsewhere meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio.to_thread
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError

from app.db.database import Database
from app.db.enums import SpaceStatus
from app.db.models import EmbeddingSpace
from app.errors import StorageError
from app.ops import metrics
from app.rag.index import rankings
from app.services import health

log = logging.getLogger("ragchat.ops")


@dataclass
class Warmth:
    embedder: bool = False
    indexes: bool = False
    spaces: int = 0
    problems: list[str] = field(default_factory=list)


def warm(store: Database, load_embedder: Callable[[], object]) -> Warmth:
    """Load the embedder and every active space's indexes (blocking: run it off the loop)."""
    found = Warmth()
    started = time.perf_counter()
    try:
        load_embedder()
        found.embedder = True
    except Exception as exc:  # said by /readyz and the log; the server still answers what needs none
        found.problems.append(f"embedder: {exc}")
        log.warning("the embedder could not be loaded: %s", exc)
    try:
        with store.read() as db:
            active = db.execute(
                select(EmbeddingSpace.project_id, EmbeddingSpace.id).where(EmbeddingSpace.status == SpaceStatus.ACTIVE)
            ).all()
        for project_id, space_id in active:
            with store.read() as db:
                table = db.get(EmbeddingSpace, space_id)
                if table is None:  # dropped meanwhile
                    continue
                rankings.vector_ranking(db, table.table)
                rankings.keyword_ranking(db, project_id)
            found.spaces += 1
        found.indexes = True
    except (StorageError, DBAPIError) as exc:  # unmigrated, or unreadable: tried again by the next /readyz
        message = exc.message if isinstance(exc, StorageError) else str(exc.orig)
        found.problems.append(f"vector index: {message}")
        log.warning("the indexes could not be loaded: %s", message)
    seconds = time.perf_counter() - started
    metrics.INDEX_WARMUP_SECONDS.set(seconds)
    log.info("warmed up in %.1f s: embedder %s, indexes of %d spaces", seconds, found.embedder, found.spaces)
    return found


class Readiness:
    def __init__(self, store: Database, load_embedder: Callable[[], object]) -> None:
        self.store = store
        self.load_embedder = load_embedder
        self.warmth: Warmth | None = None
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Warm up in the background (again, when the last attempt found a problem)."""
        if self._task is None or (self._task.done() and self.warmth is not None and self.warmth.problems):
            self._task = asyncio.create_task(self._warm(), name="warm-up")

    async def _warm(self) -> None:
        self.warmth = await anyio.to_thread.run_sync(warm, self.store, self.load_embedder)

    async def stop(self) -> None:
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    def check(self) -> tuple[bool, dict[str, object]]:
        """(ready, what /readyz answers): every reason it is not, when it is not."""
        reasons: list[str] = []
        try:
            state = health.check(self.store)
            if not state.ok:
                reasons.append(
                    f"migrations: the database is at {state.migration_revision}, the code expects "
                    f"{state.head_revision} (run `ragchat migrate`)"
                )
        except StorageError as exc:
            reasons.append(f"database: {exc.message}")
        warmth = self.warmth
        if warmth is None:
            reasons.append("warming up: the embedder and the indexes are loading")
        else:
            reasons += warmth.problems
            if not warmth.embedder and not any(p.startswith("embedder") for p in warmth.problems):
                reasons.append("embedder: not loaded")
        return not reasons, {"ready": not reasons, "reasons": reasons}
