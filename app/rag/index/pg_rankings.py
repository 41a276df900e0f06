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
lexemes (``setweight`` marks them, ``ts_filter`` keeps them). The search is exact MaxScore
(``PgKeywordRanking.search``): migration 0022 keeps each lexeme's df per project
(``project_search_terms``, with what bounds its tf part) and the postings (``chunk_terms``:
project, lexeme, chunk -> tf, length, read from the index alone), so the common words' postings
are never read and only the chunks that can reach the top k are scored fully; the exhaustive
statement (every chunk holding a question lexeme, dfs counted from them) stays as the reference
(``exhaustive_search``). Term ids come from
``keyword_index.tokenizer()`` (FTS5's porter tokens); each is mapped back to a word that gives it
(``Tokenizer.term_names``) and that word to PostgreSQL's lexemes by ``to_tsvector('ragchat_english',
word)``. Chunks are tokenised as FTS5 does (migration 0020: every character that is not a letter
or digit is a space before PostgreSQL's parser sees the text, so "PD-1" is "pd" and "1", not 'pd'
and the integer '-1'). PostgreSQL's snowball stemmer (Porter2) and FTS5's porter stemmer agree on
most English words, not all, and FTS5 folds diacritics (SciFact nDCG@10 measures the difference,
docs/BENCHMARKS.md).
"""

from __future__ import annotations

import itertools
import math
import threading
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.rag.index import keyword_index

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

    def search(self, query: np.ndarray, k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        if k <= 0:
            return []
        if only is not None:
            return self._search_only(query, k, only)
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
        return self._rescored(query, _unpack(ids, packed))

    def _search_only(self, query: np.ndarray, k: int, only: np.ndarray) -> list[tuple[int, float]]:
        """The k nearest of the ``only`` chunks, by an exact search of those rows alone (a lookup of
        each by its key, then a sort by distance). pgvector 0.6 has no iterative index scan: HNSW
        with the filter as a WHERE would drop the rows it found outside it and return fewer than k."""
        if not len(only):
            return []
        conn = self._db.connection()
        conn.exec_driver_sql("SET LOCAL enable_indexscan = off")  # not HNSW; the key's bitmap scan stays
        try:
            ids, packed = conn.execute(
                text(
                    "SELECT array_agg(chunk_id), string_agg(vector_send(embedding), ''::bytea) FROM ("
                    f"SELECT chunk_id, embedding FROM {self._table} WHERE chunk_id = ANY(CAST(:only AS bigint[])) "
                    "ORDER BY embedding <=> CAST(:q AS vector) LIMIT :k) AS nearest"
                ),
                {"q": _vector_text(query), "k": int(k), "only": only.tolist()},
            ).one()
        finally:
            conn.exec_driver_sql("SET LOCAL enable_indexscan = on")
        return self._rescored(query, _unpack(ids, packed))

    def _rescored(self, query: np.ndarray, found: dict[int, np.ndarray]) -> list[tuple[int, float]]:
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


# The exhaustive search, one statement: the question's lexemes and weights, the project's N and
# average length (kept by migration 0019's triggers), then each matching chunk's BM25 (the GIN index
# finds the chunks holding any of the lexemes; each one's term frequencies come from its tsvector,
# its length from its stored word count), each lexeme's df counted from those same rows. What
# ``search`` ran before MaxScore; kept as the reference the pruned search is tested against.
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
            * tf.f * (:k1 + 1) / (tf.f + :k1 * (1 - :b + :b * tf.dl / nullif(project.avgdl, 0)))
            ORDER BY tf.lexeme) AS score,
       count(*) OVER () AS scored
FROM tf JOIN df USING (lexeme) JOIN q USING (lexeme) CROSS JOIN project
GROUP BY tf.id
ORDER BY score, tf.id
LIMIT :k
"""
)

# The same, the top k taken from a document filter's chunks (dfs still the project's).
_BM25_ONLY = text(
    str(_BM25).replace(
        "FROM tf JOIN df USING (lexeme) JOIN q USING (lexeme) CROSS JOIN project\n",
        "FROM tf JOIN df USING (lexeme) JOIN q USING (lexeme) CROSS JOIN project\n"
        "WHERE tf.id = ANY(CAST(:only AS bigint[]))\n",
    )
)
assert str(_BM25_ONLY) != str(_BM25)

# The pruned search's statistics, one round trip: N and the average length (migration 0019), each
# question lexeme's df in the project, largest tf and smallest length per occurrence (migration 0022;
# lexemes no chunk holds have no row).
_STATS = text(
    """
SELECT s.chunks::float8, s.words::float8 / nullif(s.chunks, 0), t.*
FROM project_search_stats s LEFT JOIN LATERAL (
    SELECT array_agg(t.lexeme), array_agg(t.chunks), array_agg(t.tf_max), array_agg(t.words_per_tf_min)
    FROM project_search_terms t WHERE t.project_id = s.project_id AND t.lexeme = ANY(CAST(:lexemes AS text[]))
) AS t ON true
WHERE s.project_id = :project
"""
)

# One pass of the pruned search over the postings (migration 0022's ``chunk_terms``, read by index
# only): each chunk holding an essential lexeme gets its partial score from those lexemes' postings;
# the best ``:first`` (a few times k) by partial score are scored fully, their k-th score is ``t``; every other
# chunk whose partial score plus what the other lexemes can add (``:left``) reaches ``t`` is scored
# fully too. A full score is ``_BM25``'s, from the chunk's tsvector (fetched by id) cut to the
# question's lexemes: the same terms summed in the same order, so the same float. The pass's best ``:k``, with
# how many chunks it looked at and how many it scored fully.
_PASS = """
WITH q AS (
    SELECT lexeme, sum(w) AS w FROM unnest(CAST(:lexemes AS text[]), CAST(:weights AS float8[])) AS t(lexeme, w)
    GROUP BY lexeme
), project AS (
    SELECT CAST(:n AS float8) AS n, CAST(:avgdl AS float8) AS avgdl
), term AS (
    SELECT q.lexeme, greatest(ln((project.n - t.df + 0.5) / (t.df + 0.5)), :min_idf) * q.w AS iw
    FROM q JOIN unnest(CAST(:df_lexemes AS text[]), CAST(:dfs AS float8[])) AS t(lexeme, df) USING (lexeme)
    CROSS JOIN project
), partial AS (
    SELECT p.chunk_id, sum(term.iw * p.tf::float8 * (:k1 + 1)
                           / (p.tf::float8 + :k1 * (1 - :b + :b * p.words::float8 / nullif(project.avgdl, 0)))) AS p
    FROM chunk_terms p JOIN term USING (lexeme) CROSS JOIN project
    WHERE p.project_id = :project AND p.lexeme = ANY(CAST(:essential AS text[]))
    GROUP BY p.chunk_id
), first AS (
    SELECT chunk_id FROM partial ORDER BY p DESC, chunk_id LIMIT :first
), scored_first AS ({full_first}
), theta AS (
    SELECT -score AS t FROM scored_first ORDER BY score, id OFFSET :k - 1 LIMIT 1
), rest AS (
    SELECT partial.chunk_id FROM partial CROSS JOIN theta
    WHERE partial.p + :left >= theta.t * (1 - :margin)
      AND partial.chunk_id NOT IN (SELECT chunk_id FROM first)
), scored_rest AS ({full_rest}
)
SELECT s.id, s.score, (SELECT count(*) FROM partial), (SELECT count(*) FROM first) + (SELECT count(*) FROM rest)
FROM (SELECT * FROM scored_first UNION ALL SELECT * FROM scored_rest) AS s
ORDER BY s.score, s.id
LIMIT :k
"""
_FULL = """
    SELECT tf.id, -sum(term.iw * tf.f * (:k1 + 1) / (tf.f + :k1 * (1 - :b + :b * tf.dl / nullif(project.avgdl, 0)))
                       ORDER BY tf.lexeme) AS score
    FROM (
        SELECT c.id, u.lexeme, array_length(u.positions, 1)::float8 AS f, c.text_words::float8 AS dl
        FROM {chunks} AS s JOIN chunks c ON c.id = s.chunk_id,
             unnest(ts_filter(setweight(c.text_search, 'A', CAST(:df_lexemes AS text[])), '{a}')) u
    ) AS tf JOIN term USING (lexeme) CROSS JOIN project
    GROUP BY tf.id"""
_PASS_SQL = text(
    _PASS.replace("{full_first}", _FULL.replace("{chunks}", "first")).replace(
        "{full_rest}", _FULL.replace("{chunks}", "rest")
    )
)

_IDF = text(
    """
SELECT t.lexeme, greatest(ln((s.chunks - t.chunks + 0.5) / (t.chunks + 0.5)), :min_idf)
FROM project_search_stats s
JOIN project_search_terms t ON t.project_id = s.project_id AND t.lexeme = ANY(CAST(:lexemes AS text[]))
WHERE s.project_id = :project
"""
)
ONE_SNAPSHOT = ("REPEATABLE READ", "SERIALIZABLE")  # isolation levels whose statements share a snapshot
# A pass scores fully this many times k chunks of the best partial scores first: their k-th full score
# decides which other chunks need a full score.
FIRST_SCORED = 4
# The first pass's essential lexemes: the most postings (as a share of the project's chunks) it reads.
ESSENTIAL_POSTINGS = 0.25
# A margin on the pruning test: the bound and the scores are float sums of the same terms.
BOUND_MARGIN = 1e-9


def _tf_part_bound(tf_max: int, words_per_tf_min: float, avgdl: float | None) -> float:
    """The most BM25's tf part ``tf / (tf + k1 (1 - b + b dl / avgdl))`` can be for a lexeme whose
    chunks hold it at most ``tf_max`` times with at least ``words_per_tf_min`` words per occurrence:
    it is ``1 / (1 + k1 (1 - b) / tf + k1 b (dl / tf) / avgdl)``, growing with tf and falling with
    dl / tf. Without those statistics (or an average length), 1: BM25's own bound."""
    if tf_max <= 0 or not avgdl or avgdl <= 0 or not math.isfinite(words_per_tf_min) or words_per_tf_min < 0:
        return 1.0
    return 1.0 / (1.0 + K1 * (1 - B) / tf_max + K1 * B * words_per_tf_min / avgdl)


def _widened(held: Sequence[int], done: int, wanted: int) -> int:
    """The fewest lexemes after the first ``done`` whose chunks could number ``wanted`` more
    (``held[i]``: the df sum of the first i), or all of them."""
    return next((i for i in range(done + 1, len(held)) if held[i] - held[done] >= wanted), len(held) - 1)


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
        # The last search's work (the benchmark's measure): passes over the postings, chunks looked
        # at (holding an essential lexeme), chunks scored fully.
        self.passes = self.candidates = self.scored = 0

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

    def _pairs(self, weights: Mapping[int, float]) -> list[tuple[str, float]]:
        """The question's (lexeme, weight) pairs: a term's weight goes to each of its lexemes."""
        lexemes = self._lexemes(weights)
        return [(lex, float(weights[t])) for t, lexes in lexemes.items() for lex in lexes]

    def _params(self, pairs: list[tuple[str, float]], k: int) -> dict[str, object]:
        return {
            "lexemes": [lex for lex, _ in pairs],
            "weights": [w for _, w in pairs],
            "distinct": list(dict.fromkeys(lex for lex, _ in pairs)),
            "project": self._project_id,
            "k": int(k),
            "k1": K1,
            "b": B,
            "min_idf": MIN_IDF,
        }

    def search(self, weights: Mapping[int, float], k: int, only: np.ndarray | None = None) -> list[tuple[int, float]]:
        """BM25's exact top ``k`` by MaxScore (Turtle and Flood, 1995) over the postings.

        Each lexeme's df is read first (migration 0022), with its largest tf and smallest length
        per occurrence in the project, so the most it can add to a chunk's score is known:
        ``max(w, 0) x idf x (k1 + 1) x`` the most its tf part can be (``_tf_part_bound``). Lexemes
        are taken in decreasing order of that bound; the first few are the essential ones. A pass
        (``_PASS``) reads the essential lexemes' postings only (an index-only scan), and scores
        fully, with every question lexeme exactly as the exhaustive search does, the chunks that
        can still reach the top k. Once the bounds of the other lexemes sum to less than the k-th
        best score (by a margin for float rounding), no chunk holding only those can reach the top
        k, nor tie with it, and the top k is final; otherwise the next pass takes exactly the
        lexemes that k-th score says are needed (it only grows with more lexemes, so that pass is
        final). The first takes the lexemes with the largest bounds until k chunks could hold them.
        Common words (idf at FTS5's floor, 1e-6) bound to nearly nothing: their postings are never
        read, only each scored chunk's own entry.

        A search of more than one pass needs one snapshot for its statements, so outside a
        REPEATABLE READ transaction (a writer's READ COMMITTED) the exhaustive search runs instead."""
        self.passes = self.candidates = self.scored = 0
        if only is not None:
            # MaxScore's bounds prune against the unfiltered k-th best: the exhaustive statement,
            # restricted to the filter's chunks in the same statement, is exact.
            return self.exhaustive_search(weights, k, only)
        if k <= 0 or not weights:
            return []
        pairs = self._pairs(weights)
        if not pairs:
            return []
        if self._db.get_bind().get_execution_options().get("isolation_level") not in ONE_SNAPSHOT:
            return self.exhaustive_search(weights, k)
        params = self._params(pairs, k)
        distinct: list[str] = params["distinct"]  # type: ignore[assignment]
        stats = self._db.execute(_STATS, {"lexemes": distinct, "project": self._project_id}).one_or_none()
        if stats is None or not stats[0]:
            return []
        n, avgdl = float(stats[0]), stats[1]
        kept = zip(stats[2] or (), stats[3] or (), stats[4] or (), stats[5] or (), strict=True)
        df, tf_part = {}, {}
        for lex, d, tf_max, words_per_tf in kept:
            if int(d) > 0:
                df[str(lex)] = int(d)
                tf_part[str(lex)] = _tf_part_bound(int(tf_max), float(words_per_tf), avgdl)
        weight: dict[str, float] = {}
        for lex, w in pairs:
            weight[lex] = weight.get(lex, 0.0) + w
        bound = {
            lex: max(weight[lex], 0.0) * max(math.log((n - d + 0.5) / (d + 0.5)), MIN_IDF) * (K1 + 1) * tf_part[lex]
            for lex, d in df.items()
        }
        order = sorted(df, key=lambda lex: (-bound[lex], df[lex], lex))
        if not order:
            return []
        # What the lexemes order[i:] can add to a chunk (strictly less), and how many chunks order[:i] hold at most.
        left = [*list(itertools.accumulate(reversed([bound[lex] for lex in order])))[::-1], 0.0]
        held = [0, *itertools.accumulate(df[lex] for lex in order)]
        params |= {
            "df_lexemes": order,
            "dfs": [float(df[lex]) for lex in order],
            "n": n,
            "avgdl": avgdl,
            "margin": BOUND_MARGIN,
            "first": FIRST_SCORED * k,
        }
        # The first pass reads the postings of as many lexemes as ESSENTIAL_POSTINGS allows (reading
        # a posting costs far less than scoring a chunk fully, and what is left to bound shrinks).
        budget = ESSENTIAL_POSTINGS * n
        upto = max(_widened(held, 0, k), max(i for i in range(len(held)) if held[i] <= budget))
        while True:
            rows = self._db.execute(
                _PASS_SQL, params | {"essential": order[:upto], "left": left[upto] * (1 + BOUND_MARGIN)}
            ).all()
            self.passes += 1
            if rows:
                self.candidates += int(rows[0][2])
                self.scored += int(rows[0][3])
            hits = [(int(cid), float(score)) for cid, score, _, _ in rows]
            if upto == len(order):
                return hits
            if len(hits) < k:  # fewer than k chunks hold the lexemes so far: every chunk can still enter
                upto = _widened(held, upto, k)
                continue
            kth = -hits[-1][1]
            wanted = next((i for i in range(len(order)) if left[i] * (1 + BOUND_MARGIN) < kth), len(order))
            if wanted <= upto:
                return hits
            upto = wanted

    def exhaustive_search(
        self, weights: Mapping[int, float], k: int, only: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """BM25 over every chunk holding any question lexeme, each lexeme's df counted from them
        (what ``search`` did before MaxScore, one statement): the reference for its results. With
        ``only``, the dfs are still the project's and the top k is taken from those chunks alone."""
        self.passes = self.candidates = self.scored = 0
        if k <= 0 or not weights or (only is not None and not len(only)):
            return []
        pairs = self._pairs(weights)
        if not pairs:
            return []
        params = self._params(pairs, k)
        params["query"] = _tsquery(params["distinct"])  # type: ignore[arg-type]
        if only is not None:
            params["only"] = only.tolist()
        rows = self._db.execute(_BM25 if only is None else _BM25_ONLY, params).all()
        self.passes = 1
        self.candidates = self.scored = int(rows[0][2]) if rows else 0
        return [(int(cid), float(score)) for cid, score, _ in rows]

    def idf(self, terms: Sequence[int]) -> dict[int, float]:
        lexemes = self._lexemes(terms)
        every = sorted({lex for lexes in lexemes.values() for lex in lexes})
        if not every:
            return {}
        rows = self._db.execute(_IDF, {"lexemes": every, "project": self._project_id, "min_idf": MIN_IDF}).all()
        by_lexeme = {str(lex): float(idf) for lex, idf in rows}
        out: dict[int, float] = {}
        for term, lexes in lexemes.items():
            found = [by_lexeme[lex] for lex in lexes if lex in by_lexeme]
            if found:
                out[term] = max(found)
        return out
