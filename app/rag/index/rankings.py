"""Where retrieval's two rankings come from: the one seam between retrieval and a backend.

On SQLite they come from in-process indexes kept coherent with the database through journals
(app/rag/index/vector_index.py, app/rag/index/keyword_index.py): their views are immutable, need no connection
once taken, and may be searched from another thread. On PostgreSQL they come from SQL run in the
caller's transaction (app/rag/index/pg_rankings.py): pgvector's HNSW index with an exact re-score, and
BM25 by MaxScore over per-project postings kept by triggers; nothing in-process is kept, so any
number of API servers share the database with nothing to keep coherent. Both keep the same contracts, below.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

import numpy as np
from sqlalchemy.orm import Session

from app.rag.index import keyword_index, spaces, vector_index


class VectorRanking(Protocol):
    """One embedding space's vectors as of the caller's snapshot."""

    @property
    def in_process(self) -> bool:
        """True when searching needs no database connection (may run in another thread)."""
        ...

    def search(self, query: np.ndarray, k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` nearest chunks as ``(chunk_id, cosine)``, best first, the cosine computed
        exactly in float64 from the stored vectors; ties: lower id first. With ``only`` (chunk ids,
        int64, ascending: a document filter's), the k nearest among those chunks."""
        ...

    def vectors(self, chunk_ids: Iterable[int]) -> dict[int, np.ndarray]:
        """The stored vectors (float32) of those of ``chunk_ids`` that have one."""
        ...


class KeywordRanking(Protocol):
    """One project's chunks ranked by BM25 (k1 1.2, b 0.75, the project's own statistics)."""

    @property
    def in_process(self) -> bool: ...

    def search(self, weights: Mapping[int, float], k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        """The ``k`` best chunks for term weights (term ids of ``keyword_index.tokenizer()``) as
        ``(chunk_id, bm25)``, negated as FTS5's: lower is better; ties: lower id first. With
        ``only`` (chunk ids, int64, ascending), the k best among those chunks; the statistics (idf,
        average length) stay the project's, so a chunk scores the same filtered or not."""
        ...

    def idf(self, terms: Sequence[int]) -> dict[int, float]:
        """Each term's idf in the project; terms no chunk has are left out."""
        ...


def _postgres(db: Session) -> bool:
    return db.get_bind().dialect.name == "postgresql"


def vector_ranking(db: Session, table: str) -> VectorRanking:
    """The vector ranking of the space whose table is ``table``, for ``db``'s snapshot."""
    if _postgres(db):
        from app.rag.index.pg_rankings import PgVectorRanking

        return PgVectorRanking(db, table)
    view, _ = vector_index.view_for(db, table, spaces.space_row_id(table))
    return view


def keyword_ranking(db: Session, project_id: int) -> KeywordRanking:
    """The keyword ranking of the project, for ``db``'s snapshot."""
    if _postgres(db):
        from app.rag.index.pg_rankings import PgKeywordRanking

        return PgKeywordRanking(db, project_id)
    return keyword_index.view_for(db, project_id)


def revision(db: Session, project_id: int, space_id: int, *, metadata: bool = False) -> tuple[int, ...]:
    """The project's chunk revision, as of ``db``'s snapshot: the newest seq of its keyword and
    vector journals (SQLite), or its ``project_search_stats`` revision (PostgreSQL). With
    ``metadata``, the project's count of changes to its documents' tags and dates follows, read in
    the same statement (a filtered search needs both, and a statement is a tenth of a millisecond)."""
    conn = db.connection()
    tail = ", (SELECT metadata_revision FROM projects WHERE id = {p})" if metadata else ""
    if _postgres(db):
        row = conn.exec_driver_sql(
            "SELECT (SELECT revision FROM project_search_stats WHERE project_id = %(p)s)" + tail.format(p="%(p)s"),
            {"p": project_id},
        ).one()
    else:
        row = conn.exec_driver_sql(
            "SELECT (SELECT max(seq) FROM keyword_journal WHERE project_id = ?), "
            "(SELECT max(seq) FROM vector_journal WHERE space_id = ?)" + tail.format(p="?"),
            (project_id, space_id, project_id) if metadata else (project_id, space_id),
        ).one()
    return tuple(int(value or 0) for value in row)
