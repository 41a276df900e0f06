"""Embedding spaces and their vec0 tables.

A project's vectors live in the vec0 table of its *active* space (rowid = chunk id). The table is
created with the space because a vec0 column's dimension is fixed at creation. A trigger on
``chunks`` deletes a chunk's vector whenever the chunk goes (directly or by cascade), so vectors
can never outlive their text. Vectors are L2-normalised, so the table uses L2 distance (cheaper
than cosine in sqlite-vec) and the cosine similarity is ``1 - d^2 / 2``.

On PostgreSQL the space's table is an ordinary one, ``vec_space_<id>(chunk_id, embedding
vector(d))``, whose key references ``chunks`` with ON DELETE CASCADE (no trigger), with an HNSW
index on cosine distance (pgvector): searched in the database (app/rag/index/pg_rankings.py).
"""

from __future__ import annotations

import re

from sqlalchemy import select
from sqlalchemy.orm import Session

from app.db import locks
from app.db.enums import SpaceStatus
from app.db.models import EmbeddingSpace
from app.errors import ConflictError
from app.llm.base import SpaceId


def create_space(db: Session, project_id: int, space: SpaceId, *, status: SpaceStatus) -> EmbeddingSpace:
    row = EmbeddingSpace(
        project_id=project_id,
        provider=space.provider,
        model=space.model,
        dimensions=space.dimensions,
        status=status,
    )
    db.add(row)
    db.flush()
    create_space_table(db, row)
    return row


def create_space_table(db: Session, row: EmbeddingSpace, *, index: bool = True) -> None:
    """The table of the space ``row`` (already flushed): where its vectors go. Also used to recreate
    a space copied from another database (app/services/database_copy.py), which builds the HNSW
    index once the vectors are in (``index=False``, then :func:`create_vector_index`)."""
    table = row.table
    if is_postgres(db):
        conn = db.connection()
        conn.exec_driver_sql(
            f"CREATE TABLE {table} (chunk_id integer PRIMARY KEY REFERENCES chunks(id) ON DELETE CASCADE, "
            f"embedding vector({int(row.dimensions)}) NOT NULL)"
        )
        if index:
            create_vector_index(db, row)
        return
    db.connection().exec_driver_sql(f"CREATE VIRTUAL TABLE {table} USING vec0(embedding float[{int(row.dimensions)}])")
    db.connection().exec_driver_sql(
        f"CREATE TRIGGER {table}_chunk_deleted AFTER DELETE ON chunks WHEN old.project_id = {int(row.project_id)} "
        f"BEGIN DELETE FROM {table} WHERE rowid = old.id; END"
    )


def create_vector_index(db: Session, row: EmbeddingSpace) -> None:
    """PostgreSQL: the HNSW index (cosine) of the space's table. SQLite's vec0 table needs none."""
    if is_postgres(db):
        db.connection().exec_driver_sql(
            f"CREATE INDEX {row.table}_hnsw ON {row.table} USING hnsw (embedding vector_cosine_ops)"
        )


def is_postgres(db: Session) -> bool:
    return db.get_bind().dialect.name == "postgresql"


def drop_space(db: Session, space: EmbeddingSpace) -> None:
    if not is_postgres(db):
        db.connection().exec_driver_sql(f"DROP TRIGGER IF EXISTS {space.table}_chunk_deleted")
    db.connection().exec_driver_sql(f"DROP TABLE IF EXISTS {space.table}")
    db.delete(space)
    db.flush()


def active_space(db: Session, project_id: int) -> EmbeddingSpace | None:
    return db.scalar(
        select(EmbeddingSpace).where(
            EmbeddingSpace.project_id == project_id, EmbeddingSpace.status == SpaceStatus.ACTIVE
        )
    )


def space_identity(row: EmbeddingSpace) -> SpaceId:
    """Which model made the vectors of the space ``row`` (what an embedder's ``space`` is compared with)."""
    return SpaceId(row.provider, row.model, row.dimensions)


def ensure_space(db: Session, project_id: int, space: SpaceId) -> EmbeddingSpace:
    """The project's active space, created for ``space`` if it has none. Mixing spaces is refused.
    Writers of one project take turns here (PostgreSQL: two servers ingesting into a project that
    has no space yet would both create one)."""
    locks.take_turns(db, "space", project_id)
    row = active_space(db, project_id)
    if row is None:
        return create_space(db, project_id, space, status=SpaceStatus.ACTIVE)
    check_same(row, space)
    return row


def check_same(row: EmbeddingSpace, space: SpaceId) -> None:
    """Refuse to compare vectors of the space ``row`` with vectors of ``space``."""
    if space_identity(row) != space:
        raise ConflictError(
            f"this knowledge base was embedded with {row.label}, but the embedder in use is {space.label}; "
            f"vectors of different models cannot be compared. Use the same embedder, or re-embed the "
            f"knowledge base with `ragchat reindex --project <name>`"
        )


def drop_project_spaces(db: Session, project_id: int) -> None:
    for row in db.scalars(select(EmbeddingSpace).where(EmbeddingSpace.project_id == project_id)).all():
        drop_space(db, row)


_TABLE = re.compile(r"^vec_space_(\d+)$")


def space_row_id(table: str) -> int:
    """The id of the ``embedding_spaces`` row whose vec0 table this is (``EmbeddingSpace.table`` is
    ``vec_space_<id>``)."""
    match = _TABLE.match(table)
    if match is None:
        raise ValueError(f"{table!r} is not an embedding space's table")
    return int(match.group(1))
