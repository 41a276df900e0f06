"""Retrieval's rankings on PostgreSQL, computed in the database in the caller's transaction.

Vectors: pgvector's HNSW index (cosine distance) finds the candidates, in the space's own table
(so the search is scoped to one project by construction); their stored vectors are then re-scored
exactly in float64, as the SQLite index does, so a chunk scores the same whichever ranking found it.
Vectors travel in pgvector's binary form (``vector_send``), all of a search's in one value, and a
read transaction remembers those it has read (the exact scores of the candidates need them again).
``hnsw.ef_search`` is the number of candidates asked for (at least ``EF_SEARCH``): pgvector's HNSW
returns at most ``ef_search`` rows. Beyond ``MAX_EF_SEARCH`` (pgvector's limit) the search is exact
(a sequential scan, the index turned off for the statement).

Keywords: BM25 with FTS5's formula (k1 1.2, b 0.75, idf ln((N - n + 0.5) / (n + 0.5)) floored at
1e-6, negated: lower is better) over the project's own statistics, computed in SQL from the
``chunks.text_search`` tsvector (migration 0004: configuration ``ragchat_english``, english's parser
and snowball stemmer without stop words, as FTS5 keeps every word; GIN index): N is the project's
chunk count, n a term's document frequency in the project, a chunk's length its word count (the
last position in its tsvector, as FTS5 counts every token). N and the total length are kept per
project by triggers (``project_search_stats``), each chunk's length in ``chunks.text_words``
(migration 0019); a hit's term frequencies come from its tsvector cut down to the question's
lexemes (``setweight`` marks them, ``ts_filter`` keeps them). Term ids come from
``keyword_index.tokenizer()`` (FTS5's porter tokens); each is mapped back to a word that gives it
(``Tokenizer.term_names``) and that word to PostgreSQL's lexemes by ``to_tsvector('ragchat_english',
word)``. Chunks are tokenised as FTS5 does (migration 0020: every character that is not a letter
or digit is a space before PostgreSQL's parser sees the text, so "PD-1" is "pd" and "1", not 'pd'
and the integer '-1'). PostgreSQL's snowball stemmer (Porter2) and FTS5's porter stemmer agree on
most English words, not all, and FTS5 folds diacritics (SciFact nDCG@10 measures the difference,
docs/BENCHMARKS.md).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.rag import keyword_index

EF_SEARCH = 100
MAX_EF_SEARCH = 1000  # pgvector's upper limit for hnsw.ef_search
K1 = keyword_index.K1
B = keyword_index.B
MIN_IDF = keyword_index.MIN_IDF
LEXEMES_KEPT = 100_000  # term ids whose PostgreSQL lexemes are remembered (a few MB at most)


def _vector_text(vector: np.ndarray) -> str:
    return "[" + ",".join(map(repr, np.asarray(vector, dtype=np.float32).tolist())) + "]"


def _unpack(ids: Sequence[int] | None, packed: bytes | None) -> dict[int, np.ndarray]:
    """Vectors sent as ``string_agg(vector_send(embedding), '')``: each is pgvector's binary form,
    a 2-byte dimension and 2 unused bytes then big-endian float4s. Bytes travel as they are
    stored (no text form to print and parse: that was most of a vector search's time)."""
    if not ids or not packed:
        return {}
    rows = np.frombuffer(packed, dtype=">f4").reshape(len(ids), -1)[:, 1:]  # the header is one float's width
    matrix = rows.astype(np.float32)
    return {int(cid): matrix[i] for i, cid in enumerate(ids)}


def _transaction_memo(db: Session) -> dict[object, object] | None:
    """What this read transaction has read (its snapshot does not change), or None outside a
    REPEATABLE READ reader (a writer's READ COMMITTED statements each see newer rows)."""
    if db.get_bind().get_execution_options().get("isolation_level") != "REPEATABLE READ":
        return None
    db.connection()
    transaction = db.get_transaction()
    memo = db.info.get("pg_rankings")
    if memo is None or memo[0] is not transaction:
        memo = db.info["pg_rankings"] = (transaction, {})
    found: dict[object, object] = memo[1]
    return found


class PgVectorRanking:
    """The vector ranking of one space's table (see the module's docstring)."""

    def __init__(self, db: Session, table: str, *, exact: bool = False) -> None:
        self._db = db
        self._table = table
        self._exact = exact  # always a sequential scan (the benchmark's baseline for HNSW's recall)

    @property
    def in_process(self) -> bool:
        return False

    def _seen(self) -> dict[int, np.ndarray] | None:
        memo = _transaction_memo(self._db)
        if memo is None:
            return None
        seen = memo.setdefault(("vectors", self._table), {})
        assert isinstance(seen, dict)
        return seen

    def search(self, query: np.ndarray, k: int) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        conn = self._db.connection()
        scan = self._exact or k > MAX_EF_SEARCH
        if scan:
            conn.exec_driver_sql("SET LOCAL enable_indexscan = off")
        else:
            conn.exec_driver_sql(f"SET LOCAL hnsw.ef_search = {max(EF_SEARCH, int(k))}")
        try:
            ids, packed = conn.execute(
                text(
                    "SELECT array_agg(chunk_id), string_agg(vector_send(embedding), ''::bytea) FROM ("
                    f"SELECT chunk_id, embedding FROM {self._table} ORDER BY embedding <=> CAST(:q AS vector) "
                    "LIMIT :k) AS nearest"
                ),
                {"q": _vector_text(query), "k": int(k)},
            ).one()
        finally:
            if scan:
                conn.exec_driver_sql("SET LOCAL enable_indexscan = on")
        found = _unpack(ids, packed)
        if not found:
            return []
        seen = self._seen()
        if seen is not None:
            seen.update(found)
        order_ids = np.fromiter(found, dtype=np.int64, count=len(found))
        matrix = np.stack(list(found.values())).astype(np.float64)
        exact = np.clip(matrix @ np.asarray(query, dtype=np.float64), -1.0, 1.0)
        order = np.lexsort((order_ids, -exact))
        return [(int(order_ids[i]), float(exact[i])) for i in order]

    def vectors(self, chunk_ids: Iterable[int]) -> dict[int, np.ndarray]:
        ids = [int(i) for i in chunk_ids]
        if not ids:
            return {}
        seen = self._seen()
        out = {i: seen[i] for i in ids if i in seen} if seen is not None else {}
        missing = [i for i in ids if i not in out]
        if missing:
            got, packed = self._db.execute(
                text(
                    f"SELECT array_agg(chunk_id), string_agg(vector_send(embedding), ''::bytea) FROM {self._table} "
                    "WHERE chunk_id = ANY(CAST(:ids AS integer[]))"
                ),
                {"ids": missing},
            ).one()
            fetched = _unpack(got, packed)
            if seen is not None:
                seen.update(fetched)
            out.update(fetched)
        return out


# One statement: the question's lexemes and weights, the project's N and average length (kept by
# migration 0019's triggers), then each matching chunk's BM25 (the GIN index finds the chunks
# holding any of the lexemes; each one's term frequencies come from its tsvector, its length from
# its stored word count).
_BM25 = text(
    """
WITH q AS (
    SELECT lexeme, sum(w) AS w FROM unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[])) AS t(lexeme, w)
    GROUP BY lexeme
), project AS (
    SELECT chunks::float8 AS n, words::float8 / nullif(chunks, 0) AS avgdl
    FROM project_search_stats WHERE project_id = :project
), tf AS (
    SELECT c.id, u.lexeme, array_length(u.positions, 1)::float8 AS f, c.text_words::float8 AS dl
    FROM chunks c,
         unnest(ts_filter(setweight(c.text_search, 'A', CAST(:distinct AS text[])), '{a}')) u
    WHERE c.project_id = :project AND c.text_search @@ CAST(:query AS tsquery)
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
project AS (SELECT chunks::float8 AS n FROM project_search_stats WHERE project_id = :project)
SELECT q.lexeme, greatest(ln((project.n - count(c.id) + 0.5) / (count(c.id) + 0.5)), :min_idf), count(c.id)
FROM q CROSS JOIN project
LEFT JOIN chunks c ON c.project_id = :project AND c.text_search @@ CAST(quote_literal(q.lexeme) AS tsquery)
GROUP BY q.lexeme, project.n
"""
)


def _tsquery(lexemes: Iterable[str]) -> str:
    """``'a' | 'b'``: quoted lexemes are taken as they are (no parsing, no stemming)."""
    return " | ".join("'" + lex.replace("\\", "\\\\").replace("'", "''") + "'" for lex in lexemes)


# Term id -> PostgreSQL's lexemes of it: a function of the tokenizer and of migration 0004's text
# search configuration only, the same in every database, so kept across searches.
_lexemes_of: dict[int, tuple[str, ...]] = {}
_lexemes_lock = threading.Lock()


class PgKeywordRanking:
    """The keyword ranking of one project (see the module's docstring)."""

    def __init__(self, db: Session, project_id: int) -> None:
        self._db = db
        self._project_id = project_id

    @property
    def in_process(self) -> bool:
        return False

    def _lexemes(self, terms: Iterable[int]) -> dict[int, tuple[str, ...]]:
        """PostgreSQL's lexemes of each term id (of the FTS5 tokenizer): remembered, or asked for
        in one round trip."""
        names = keyword_index.tokenizer().term_names()
        wanted = [int(t) for t in terms if 0 <= int(t) < len(names)]
        with _lexemes_lock:
            out = {t: _lexemes_of[t] for t in wanted if t in _lexemes_of}
        ids = [t for t in dict.fromkeys(wanted) if t not in out]
        if ids:
            rows = self._db.execute(
                text(
                    "SELECT t.i, unnest(tsvector_to_array(to_tsvector('ragchat_english', t.term))) "
                    "FROM unnest(CAST(:ids AS int[]), CAST(:terms AS text[])) AS t(i, term)"
                ),
                {"ids": ids, "terms": [names[i] for i in ids]},
            ).all()
            fresh: dict[int, list[str]] = {i: [] for i in ids}
            for term_id, lexeme in rows:
                fresh[int(term_id)].append(str(lexeme))
            with _lexemes_lock:
                if len(_lexemes_of) + len(fresh) > LEXEMES_KEPT:
                    _lexemes_of.clear()
                for i, lexes in fresh.items():
                    out[i] = _lexemes_of[i] = tuple(lexes)
        return {t: lexes for t, lexes in out.items() if lexes}

    def search(self, weights: Mapping[int, float], k: int) -> list[tuple[int, float]]:
        if k <= 0 or not weights:
            return []
        lexemes = self._lexemes(weights)
        pairs = [(lex, float(weights[t])) for t, lexes in lexemes.items() for lex in lexes]
        if not pairs:
            return []
        distinct = list(dict.fromkeys(lex for lex, _ in pairs))
        rows = self._db.execute(
            _BM25,
            {
                "lexemes": [lex for lex, _ in pairs],
                "weights": [w for _, w in pairs],
                "distinct": distinct,
                "query": _tsquery(distinct),
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
