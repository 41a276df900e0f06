"""Keyword search with FTS5 BM25, scoped to one project: the reference for the in-memory index.

Retrieval ranks by keyword with app/rag/index/keyword_index.py, which tokenises and scores as FTS5 does
but with per-project statistics and without scoring every chunk that holds a common word. This
query stays as what the index is checked against (tests/rag/index/test_keyword_index.py) and measured
against (benchmarks/hybrid.py); ``chunks_fts`` stays the full-text index of ``chunks``.
"""

from __future__ import annotations

import re

from sqlalchemy.orm import Session

_TERM = re.compile(r"\w+", re.UNICODE)
MAX_TERMS = 64
# The full-text match runs once, materialised, and only then is joined to the project's chunks.
# Written as a plain join, SQLite's planner walks the project's chunks by index and re-runs the
# MATCH for every row: 69 s instead of 0.11 s per query on SciFact (10k chunks).
# bm25() rather than rank: about twice as fast for OR queries.
SQL = (
    "WITH hits AS MATERIALIZED "
    "(SELECT rowid AS id, bm25(chunks_fts) AS score FROM chunks_fts WHERE chunks_fts MATCH ?) "
    "SELECT h.id, h.score FROM hits h JOIN chunks c ON c.id = h.id WHERE c.project_id = ? ORDER BY h.score LIMIT ?"
)


def match_expression(text: str) -> str | None:
    """An FTS5 query that ORs the question's words, each quoted so no user text is FTS syntax."""
    terms = list(dict.fromkeys(t.lower() for t in _TERM.findall(text)))[:MAX_TERMS]
    if not terms:
        return None
    return " OR ".join(f'"{t}"' for t in terms)


def search(db: Session, project_id: int, text: str, limit: int) -> list[tuple[int, float]]:
    """Best chunks as ``(chunk_id, bm25)`` (lower bm25 is better), best first."""
    expression = match_expression(text)
    if expression is None:
        return []
    rows = db.connection().exec_driver_sql(SQL, (expression, project_id, int(limit))).all()
    return [(int(cid), float(score)) for cid, score in rows]
