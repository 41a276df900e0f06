"""Re-embed a knowledge base into a new embedding space, switching over only when complete.

The new space is built beside the active one (status ``building``) in batches, each its own short
transaction, so searches keep using the old space meanwhile and an interrupted reindex resumes
where it stopped. Chunks added or changed during the build are caught up at the end; the switch
(old space dropped, new one active) happens in one transaction after a last catch-up.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select

from app.db.database import Database
from app.db.enums import SpaceStatus
from app.db.models import Chunk, EmbeddingSpace
from app.llm.base import Embedder
from app.rag.index import spaces, vector_store

BATCH = 256


def _building(store: Database, project_id: int, embedder: Embedder) -> tuple[int, str]:
    with store.write() as db:
        for row in db.scalars(
            select(EmbeddingSpace).where(
                EmbeddingSpace.project_id == project_id, EmbeddingSpace.status == SpaceStatus.BUILDING
            )
        ).all():
            if spaces.space_identity(row) == embedder.space:
                return row.id, row.table  # resume
            spaces.drop_space(db, row)  # an abandoned build for another model
        row = spaces.create_space(db, project_id, embedder.space, status=SpaceStatus.BUILDING)
        return row.id, row.table


def _fill(store: Database, project_id: int, table: str, embedder: Embedder, progress: Callable[[int], None]) -> None:
    while True:
        with store.read() as db:
            ids = vector_store.missing_ids(db, table, project_id, BATCH)
            texts = {cid: text for cid, text in db.execute(select(Chunk.id, Chunk.text).where(Chunk.id.in_(ids)))}
        if not ids:
            return
        vectors = embedder.embed([texts[i] for i in ids])
        with store.write() as db:
            alive = set(db.scalars(select(Chunk.id).where(Chunk.id.in_(ids))))
            keep = [n for n, cid in enumerate(ids) if cid in alive]
            vector_store.put(db, table, [ids[n] for n in keep], vectors[keep])
        progress(len(ids))


def reindex(
    store: Database, project_id: int, embedder: Embedder, progress: Callable[[int], None] = lambda n: None
) -> str:
    """Returns the label of the space now active."""
    with store.read() as db:
        current = spaces.active_space(db, project_id)
        if current is not None and spaces.space_identity(current) == embedder.space:
            return current.label
    space_id, table = _building(store, project_id, embedder)
    _fill(store, project_id, table, embedder, progress)
    with store.write() as db:
        if not vector_store.missing_ids(db, table, project_id, 1):
            old = spaces.active_space(db, project_id)
            if old is not None:
                spaces.drop_space(db, old)
            new = db.get(EmbeddingSpace, space_id)
            assert new is not None
            new.status = SpaceStatus.ACTIVE
            return new.label
    return reindex(store, project_id, embedder, progress)  # chunks arrived after the fill: catch up again
