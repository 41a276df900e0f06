"""Vectors in a space's vec0 table: write, KNN, and exact scores for chosen chunks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy.orm import Session

from app.llm.base import Vectors

MAX_K = 4096  # sqlite-vec's limit for k


def put(db: Session, table: str, chunk_ids: Sequence[int], vectors: Vectors) -> None:
    """Insert (or replace) vectors. vec0 has no upsert: delete, then insert."""
    if not len(chunk_ids):
        return
    conn = db.connection()
    ids = [int(i) for i in chunk_ids]
    rows = [(cid, np.ascontiguousarray(vec, dtype=np.float32).tobytes()) for cid, vec in zip(ids, vectors, strict=True)]
    conn.exec_driver_sql(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(ids))})", tuple(ids))
    conn.exec_driver_sql(f"INSERT INTO {table}(rowid, embedding) VALUES (?, ?)", rows)


def knn(db: Session, table: str, query: Vectors, k: int) -> list[tuple[int, float]]:
    """The ``k`` nearest chunks as ``(chunk_id, cosine similarity)``, best first."""
    k = max(1, min(int(k), MAX_K))
    blob = np.ascontiguousarray(query, dtype=np.float32).tobytes()
    rows = (
        db.connection()
        .exec_driver_sql(
            f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (blob, k),
        )
        .all()
    )
    return [(int(rowid), 1.0 - float(distance) ** 2 / 2.0) for rowid, distance in rows]


def vectors_for(db: Session, table: str, chunk_ids: Sequence[int]) -> dict[int, Vectors]:
    if not chunk_ids:
        return {}
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


def missing_ids(db: Session, table: str, project_id: int, limit: int) -> list[int]:
    """Chunks of the project that have no vector in ``table`` yet (for reindex catch-up)."""
    rows = (
        db.connection()
        .exec_driver_sql(
            f"SELECT c.id FROM chunks c WHERE c.project_id = ? AND NOT EXISTS "
            f"(SELECT 1 FROM {table} v WHERE v.rowid = c.id) ORDER BY c.id LIMIT ?",
            (project_id, limit),
        )
        .all()
    )
    return [int(r[0]) for r in rows]
