"""Retrieval's rankings on PostgreSQL, computed in the database in the caller's transaction.

Vectors: pgvector's HNSW index (cosine distance) finds the candidates, in the space's own table
(so the search is scoped to one project by construction); their stored vectors are then re-scored
exactly in float64, as the SQLite index does, so a chunk scores the same whichever ranking found it.
``hnsw.ef_search`` is the number of candidates asked for (at least ``EF_SEARCH``): pgvector's HNSW
returns at most ``ef_search`` rows. Beyond ``MAX_EF_SEARCH`` (pgvector's limit) the search is exact
(a sequential scan, the index turned off for the statement).

Keywords: BM25 with FTS5's formula (k1 1.2, b 0.75, idf ln((N - n + 0.5) / (n + 0.5)) floored at
1e-6, negated: lower is better) over the project's own statistics, computed in SQL from the
``chunks.text_search`` tsvector (migration 0004: configuration ``ragchat_english``, english's parser
and snowball stemmer without stop words, as FTS5 keeps every word; GIN index): N is the project's
chunk count, n a term's document frequency in the project, a chunk's length its word count (the
last position in its tsvector, as FTS5 counts every token). Term ids come from
``keyword_index.tokenizer()`` (FTS5's porter tokens); each is mapped back to a word that gives it
(``Tokenizer.term_names``) and that word to PostgreSQL's lexemes by ``to_tsvector('ragchat_english',
word)``. PostgreSQL's snowball stemmer (Porter2) and FTS5's porter stemmer agree on most English
words, not all (SciFact nDCG@10 measures the difference, docs/BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.orm import Session

from app.rag import keyword_index

EF_SEARCH = 100
MAX_EF_SEARCH = 1000  # pgvector's upper limit for hnsw.ef_search
K1 = keyword_index.K1
B = keyword_index.B
MIN_IDF = keyword_index.MIN_IDF


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(repr(float(x)) for x in np.asarray(vector, dtype=np.float32)) + "]"


def _parse(value: object) -> np.ndarray:
    """A ``vector`` column as read without a registered adapter: its text form ``[x,y,...]``."""
    if isinstance(value, np.ndarray):
        return value.astype(np.float32, copy=False)
    return np.asarray(str(value).strip("[]").split(","), dtype=np.float32)


class PgVectorRanking:
    """The vector ranking of one space's table (see the module's docstring)."""

    def __init__(self, db: Session, table: str) -> None:
        self._db = db
        self._table = table

    @property
    def in_process(self) -> bool:
        return False

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        conn = self._db.connection()
        if k <= MAX_EF_SEARCH:
            conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(k))}")
        else:
            conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
        try:
            rows = conn.execute(
                text(
                    f"SELECT chunk_id, embedding FROM {self._table} ORDER BY embedding <=> CAST(:q AS vector) LIMIT :k"
                ),
                {"q": _vector_text(query), "k": int(k)},
            ).all()
        finally:
            if k > MAX_EF_SEARCH:
                conn.exec_driver_sql("SET LOCAL enable_indexscan = on")
        if not rows:
            return []
        ids = np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=len(rows))
        matrix = np.stack([_parse(r[1]) for r in rows]).astype(np.float64)
        exact = np.clip(matrix @ np.asarray(query, dtype=np.float64), -1.0, 1.0)
        order = np.lexsort((ids, -exact))
        return [(int(ids[i]), float(exact[i])) for i in order]

    def vectors(self, chunk_ids: Iterable[int]) -> dict[int, np.ndarray]:
        ids = [int(i) for i in chunk_ids]
        if not ids:
            return {}
        rows = self._db.execute(
            text(f"SELECT chunk_id, embedding FROM {self._table} WHERE chunk_id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            ),
            {"ids": ids},
        ).all()
        return {int(cid): _parse(vec) for cid, vec in rows}


# One statement: the question's lexemes and weights, the project's N and average length, then
# each matching chunk's BM25 (the GIN index finds the chunks holding any of the lexemes).
_BM25 = text(
    """
WITH q AS (
    SELECT lexeme, sum(w) AS w FROM unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[])) AS t(lexeme, w)
    GROUP BY lexeme
), project AS (
    SELECT count(*)::float8 AS n,
           coalesce(avg((SELECT coalesce(max(p), 0) FROM unnest(c.text_search) u, unnest(u.positions) p)), 0)
               AS avgdl
    FROM chunks c WHERE c.project_id = :project
), hits AS (
    SELECT c.id, c.text_search FROM chunks c
    WHERE c.project_id = :project AND c.text_search @@ CAST(:query AS tsquery)
), tf AS (
    SELECT h.id, u.lexeme, array_length(u.positions, 1)::float8 AS f,
           (SELECT max(p) FROM unnest(h.text_search) x, unnest(x.positions) p)::float8 AS dl
    FROM hits h, unnest(h.text_search) u
    WHERE u.lexeme IN (SELECT lexeme FROM q)
), df AS (
    SELECT lexeme, count(*)::float8 AS n FROM tf GROUP BY lexeme
)
SELECT tf.id,
       -sum(greatest(ln((project.n - df.n + 0.5) / (df.n + 0.5)), :min_idf) * q.w
            * tf.f * (:k1 + 1) / (tf.f + :k1 * (1 - :b + :b * tf.dl / nullif(project.avgdl, 0)))) AS score
FROM tf JOIN df USING (lexeme) JOIN q USING (lexeme) CROSS JOIN project
GROUP BY tf.id
ORDER BY score, tf.id
LIMIT :k
"""
)

_IDF = text(
    """
WITH q AS (SELECT DISTINCT lexeme FROM unnest(CAST(:lexemes AS text[])) AS t(lexeme)),
project AS (SELECT count(*)::float8 AS n FROM chunks WHERE project_id = :project)
SELECT q.lexeme, greatest(ln((project.n - count(c.id) + 0.5) / (count(c.id) + 0.5)), :min_idf), count(c.id)
FROM q CROSS JOIN project
LEFT JOIN chunks c ON c.project_id = :project AND c.text_search @@ CAST(quote_literal(q.lexeme) AS tsquery)
GROUP BY q.lexeme, project.n
"""
)


def _tsquery(lexemes: Iterable[str]) -> str:
    """``'a' | 'b'``: quoted lexemes are taken as they are (no parsing, no stemming)."""
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)


class PgKeywordRanking:
    """The keyword ranking of one project (see the module's docstring)."""

    def __init__(self, db: Session, project_id: int) -> None:
        self._db = db
        self._project_id = project_id

    @property
    def in_process(self) -> bool:
        return False

    def _lexemes(self, terms: Iterable[int]) -> dict[int, list[str]]:
        """PostgreSQL's lexemes of each term id (of the FTS5 tokenizer), in one round trip."""
        names = keyword_index.tokenizer().term_names()
        wanted = {int(t): names[int(t)] for t in terms if 0 <= int(t) < len(names)}
        if not wanted:
            return {}
        ids = list(wanted)
        rows = self._db.execute(
            text(
                "SELECT t.i, unnest(tsvector_to_array(to_tsvector('ragchat_english', t.term))) "
                "FROM unnest(CAST(:ids AS int[]), CAST(:terms AS text[])) AS t(i, term)"
            ),
            {"ids": ids, "terms": [wanted[i] for i in ids]},
        ).all()
        out: dict[int, list[str]] = {}
        for term_id, lexeme in rows:
            out.setdefault(int(term_id), []).append(str(lexeme))
        return out

    def search(self, weights: Mapping[int, float], k: int) -> list[tuple[int, float]]:
        if k <= 0 or not weights:
            return []
        lexemes = self._lexemes(weights)
        pairs = [(lex, float(weights[t])) for t, lexes in lexemes.items() for lex in lexes]
        if not pairs:
            return []
        rows = self._db.execute(
            _BM25,
            {
                "lexemes": [lex for lex, _ in pairs],
                "weights": [w for _, w in pairs],
                "query": _tsquery(dict.fromkeys(lex for lex, _ in pairs)),
                "project": self._project_id,
                "k": int(k),
                "k1": K1,
                "b": B,
                "min_idf": MIN_IDF,
            },
        ).all()
        return [(int(cid), float(score)) for cid, score in rows]

    def idf(self, terms: Sequence[int]) -> dict[int, float]:
        lexemes = self._lexemes(terms)
        every = sorted({lex for lexes in lexemes.values() for lex in lexes})
        if not every:
            return {}
        rows = self._db.execute(_IDF, {"lexemes": every, "project": self._project_id, "min_idf": MIN_IDF}).all()
        by_lexeme = {str(lex): float(idf) for lex, idf, df in rows if int(df) > 0}
        out: dict[int, float] = {}
        for term, lexes in lexemes.items():
            found = [by_lexeme[lex] for lex in lexes if lex in by_lexeme]
            if found:
                out[term] = max(found)
        return out
