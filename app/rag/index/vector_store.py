"""Vectors of an embedding space: write, search, and exact scores for chosen chunks.

The space's vec0 table (rowid = chunk id) is where vectors are stored; searches run on an
in-memory copy that catches up with the table before every search (app/rag/index/vector_index.py), so
writes here also append to ``vector_journal``, in the same transaction.

On PostgreSQL the space's table is a ``vector(d)`` column searched in the database
(app/rag/index/pg_rankings.py): writes are an upsert that bumps the project's revision (the result
cache's key, migration 0019), reads a plain SELECT, and there is no journal.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.llm.base import Vectors
from app.rag.index import rankings, spaces, vector_index

MAX_K = 4096  # the most candidates a caller may ask for (sqlite-vec's own limit, kept for callers)
# Journal rows kept per space, counted in global seqs: an index further behind reloads instead.
JOURNAL_KEEP = 100_000


def put(db: Session, table: str, chunk_ids: Sequence[int], vectors: Vectors) -> None:
    """Insert (or replace) vectors and journal them. vec0 has no upsert: delete, then insert."""
    if not len(chunk_ids):
        return
    conn = db.connection()
    space_id = spaces.space_row_id(table)
    ids = [int(i) for i in chunk_ids]
    if conn.dialect.name == "postgresql":
        conn.execute(
            text(
                f"INSERT INTO {table}(chunk_id, embedding) VALUES (:id, CAST(:v AS vector)) "
                "ON CONFLICT (chunk_id) DO UPDATE SET embedding = excluded.embedding"
            ),
            [{"id": cid, "v": pg_vector(vec)} for cid, vec in zip(ids, vectors, strict=True)],
        )
        # New vectors change what a search finds: a new revision for the result cache (0019).
        conn.execute(
            text(
                "UPDATE project_search_stats SET revision = revision + 1 "
                "WHERE project_id = (SELECT project_id FROM embedding_spaces WHERE id = :space)"
            ),
            {"space": space_id},
        )
        return
    rows = [(cid, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for cid, vec in zip(ids, vectors, strict=True)]
    conn.exec_driver_sql(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(ids))})", tuple(ids))
    conn.exec_driver_sql(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", rows)
    conn.exec_driver_sql(
        "INSERT INTO vector_journal(space_id, chunk_id) VALUES (?, ?)", [(space_id, cid) for cid in ids]
    )
    # Keep the journal's tail. Rows up to the newest one at or before the cut go, that one stays:
    # an index that has seen it can still catch up, one that has not sees the gap and reloads.
    last = conn.exec_driver_sql("SELECT max(seq) FROM vector_journal").scalar_one()
    conn.exec_driver_sql(
        "DELETE FROM vector_journal WHERE space_id = ? AND seq < "
        "(SELECT max(seq) FROM vector_journal WHERE space_id = ? AND seq <= ?)",
        (space_id, space_id, int(last) - JOURNAL_KEEP),
    )


def pg_vector(vector: Vectors) -> str:
    """A vector in pgvector's text form (``[x,y,...]``), float32 values written exactly."""
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def knn(db: Session, table: str, query: Vectors, k: int) -> list[tuple[int, float]]:
    """The ``k`` nearest chunks as ``(chunk_id, cosine similarity)``, best first: exact search over
    every vector committed before ``db``'s snapshot (or later, if another search caught the index
    up meanwhile), scores computed exactly (float64). Must run in a read transaction."""
    k = max(1, min(int(k), MAX_K))
    return rankings.vector_ranking(db, table).search(np.asarray(query, dtype=np.float32), k)


def vectors_for(db: Session, table: str, chunk_ids: Sequence[int]) -> dict[int, Vectors]:
    """The stored vectors of ``chunk_ids`` (those that have one), as of ``db``'s snapshot."""
    if not chunk_ids:
        return {}
    if db.get_bind().dialect.name == "postgresql":
        return rankings.vector_ranking(db, table).vectors(int(i) for i in chunk_ids)
    view, exact = vector_index.view_for(db, table, spaces.space_row_id(table))
    if exact:
        return view.vectors(int(i) for i in chunk_ids)
    # The index is ahead of this snapshot (another thread caught up meanwhile): read the table.
    ids = tuple(int(i) for i in chunk_ids)
    rows = (
        db.connection()
        .exec_driver_sql(f"SELECT rowid, embedding FROM {table} WHERE rowid IN ({','.join('?' * len(ids))})", ids)
        .all()
    )
    return {int(rowid): np.frombuffer(blob, dtype=np.float32) for rowid, blob in rows}


def exact_scores(query: Vectors, vectors: dict[int, Vectors]) -> dict[int, float]:
    """Cosine similarity of the query with each vector (both unit length), in float64."""
    if not vectors:
        return {}
    ids = list(vectors)
    matrix = np.stack([vectors[i] for i in ids]).astype(np.float64)
    sims = matrix @ np.asarray(query, dtype=np.float64)
    return {cid: float(min(1.0, max(-1.0, s))) for cid, s in zip(ids, sims, strict=True)}


def exact_scores_of(db: Session, table: str, query: Vectors, chunk_ids: Sequence[int]) -> dict[int, float]:
    """``exact_scores`` of the chunks' stored vectors. On PostgreSQL the read runs in a savepoint, so
    a failure (raised to the caller) does not abort the caller's transaction."""
    if db.get_bind().dialect.name == "postgresql":
        with db.begin_nested():
            return dict(exact_scores(query, vectors_for(db, table, chunk_ids)))
    return dict(exact_scores(query, vectors_for(db, table, chunk_ids)))


def missing_ids(db: Session, table: str, project_id: int, limit: int) -> list[int]:
    """Chunks of the project that have no vector in ``table`` yet (for reindex catch-up)."""
    key = "chunk_id" if db.get_bind().dialect.name == "postgresql" else "rowid"
    rows = db.execute(
        text(
            f"SELECT c.id FROM chunks c WHERE c.project_id = :project AND NOT EXISTS "
            f"(SELECT 1 FROM {table} v WHERE v.{key} = c.id) ORDER BY c.id LIMIT :limit"
        ),
        {"project": project_id, "limit": limit},
    ).all()
    return [int(r[0]) for r in rows]
