"""Retrieval: one function used by the chat engine, the API and the benchmark.

The ``score`` of a chunk always means one thing: the cosine similarity between the question's
embedding and the chunk's, in [-1, 1] (in practice [0, 1]), higher is better. It is computed
exactly for every candidate, including those only keyword search found, so the threshold applies
the same way in every mode. Order of operations: candidates -> rank (vector, keyword or fused)
-> drop below threshold -> keep the first top_k.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TypeVar

import numpy as np
from sqlalchemy import bindparam, text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.database import Database
from app.llm.base import Embedder, Vectors
from app.rag.index import keyword_index, rankings, spaces, vector_store
from app.rag.search import conversation, document_filter, evidence, feedback, fusion, hygiene, query_cache
from app.rag.search.candidates import Candidate, CandidateFate, Location
from app.rag.search.degradation import Degradation, DegradationReason
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.search.stages import Stage
from app.settings import RagDefaults

log = logging.getLogger(__name__)
T = TypeVar("T")


PER_DOCUMENT = 3  # a session's sources from one document, at most (docs/BENCHMARKS.md, "Conversations")


@dataclass(frozen=True)
class RetrievalParams:
    mode: RetrievalMode = RetrievalMode.HYBRID
    top_k: int = 5
    threshold: float = 0.25
    candidates: int = 50  # taken from each ranking before fusion
    rrf_k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    # Context hygiene (app/rag/search/hygiene.py): off for plain searches and benchmarks, on for sessions.
    dedupe: bool = False
    per_document: int = 0  # at most this many sources from one document; 0: no cap
    merge_adjacent: bool = False
    neighbours: int = 0  # the strongest hits whose adjacent chunks join the candidates (a widened pass)
    # Hybrid: "rrf" (ranks, weighted above) or "convex" (scores: convex_alpha x cosine + the rest x BM25,
    # each min-max normalised over the candidates). Several phrasings or feedback are always fused by RRF.
    fusion: str = "convex"
    convex_alpha: float = 0.75
    # Convex fusion's document evidence (app/rag/search/evidence.py): each candidate gains this weight
    # x the share of the question's words (idf-weighted) that its document's candidates hold. 0: off.
    document_coverage: float = 0.2
    # Pseudo-relevance feedback (app/rag/search/feedback.py): the first N chunks of the fused ranking move the
    # question (0: off); the moved vector's and terms' rankings are fused with these weights (0: not run).
    feedback_docs: int = 0
    feedback_vector_weight: float = 0.5
    feedback_keyword_weight: float = 0.5
    feedback_beta: float = 0.75  # Rocchio: how far the vector moves towards the feedback chunks' mean
    feedback_terms: int = 10  # RM3: new terms added
    feedback_term_weight: float = 0.5  # RM3: the best new term's weight, relative to a question word
    # Which documents are searched (normalised: None when every one is); the rankings search only
    # their chunks (app/rag/search/document_filter.py).
    document_filter: DocumentFilter | None = None

    @classmethod
    def for_session(
        cls,
        rag: RagDefaults,
        *,
        top_k: int,
        threshold: float,
        mode: RetrievalMode | None = None,
        only: DocumentFilter | None = None,
    ) -> RetrievalParams:
        """The parameters a chat turn uses — and so the retrieval preview and search, which must
        show the same thing: fusion from the server's settings, a candidate pool of 4 x top_k."""
        return cls(
            mode=mode or rag.mode,
            top_k=top_k,
            threshold=threshold,
            candidates=max(4 * top_k, 20),
            rrf_k=rag.rrf_k,
            vector_weight=rag.vector_weight,
            keyword_weight=rag.keyword_weight,
            fusion=rag.fusion,
            convex_alpha=rag.convex_alpha,
            document_coverage=rag.document_coverage,
            dedupe=True,
            per_document=PER_DOCUMENT,
            merge_adjacent=True,
            document_filter=only.normalised() if only is not None else None,
        )


@dataclass
class CacheUse:
    """What the caches gave a retrieval (app/rag/search/query_cache.py)."""

    embedding_hits: int = 0
    embedding_misses: int = 0
    result_hit: bool | None = None  # None: the result cache was not consulted


@dataclass
class RetrievalResult:
    query: str
    mode: RetrievalMode
    params: RetrievalParams
    candidates: list[Candidate] = field(default_factory=list)
    degraded: list[Degradation] = field(default_factory=list)
    timings_ms: dict[Stage, float] = field(default_factory=dict)
    space: str | None = None
    alternatives: list[str] = field(default_factory=list)  # other phrasings searched with the query
    cache: CacheUse = field(default_factory=CacheUse)
    fusion: fusion.Fusion | None = None  # how several rankings were fused; None when one ranking ran alone

    @property
    def kept(self) -> list[Candidate]:
        return [c for c in self.candidates if c.fate == CandidateFate.KEPT]


@contextmanager
def _timed(timings: dict[Stage, float], stage: Stage) -> Iterator[None]:
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + (time.perf_counter() - start) * 1000


def embed_query(embedder: Embedder, query: str) -> Vectors:
    return embedder.embed([query])[0]


def retrieve(
    store: Database,
    embedder: Embedder,
    project_id: int,
    query: str,
    params: RetrievalParams,
    *,
    query_vector: Vectors | None = None,
    terms: Mapping[int, float] | None = None,
    cache_key: tuple[object, ...] | None = None,
    alternatives: Sequence[str] = (),
    alternative_weight: float = 0.5,
) -> RetrievalResult:
    """Search one project. Embedding happens before any database connection is taken; errors of
    the embedder propagate (the caller decides how to degrade); a failing vector index degrades to
    keyword-only and says so in ``degraded``. ``query_vector`` and ``terms`` (keyword term weights)
    replace what ``query`` alone would give (a conversation's query, app/rag/search/conversation.py). With a
    ``cache_key`` (what determines the query: a chat turn's search gives one) the result is cached
    by it, the parameters and the project's revision (app/rag/search/query_cache.py).

    ``alternatives`` (other phrasings of the question: multi-query expansion) are each searched the
    same way, and their rankings fused with the question's, each weighted ``alternative_weight``
    (the question's weigh 1); scores stay the cosine to the question itself."""
    result = RetrievalResult(query=query, mode=params.mode, params=params, alternatives=list(alternatives))
    t = result.timings_ms
    if query_vector is None:
        with _timed(t, Stage.RETRIEVAL_EMBED):
            hits: list[bool] = []
            query_vector = query_cache.embed(embedder, [query], hits)[0]
            result.cache.embedding_hits, result.cache.embedding_misses = sum(hits), len(hits) - sum(hits)
    alternative_vectors: list[Vectors] = []
    if alternatives:
        with _timed(t, Stage.RETRIEVAL_EMBED):
            alternative_vectors = list(query_cache.embed(embedder, list(alternatives), []))
    with store.read() as db:
        space = spaces.active_space(db, project_id)
        if space is None:  # nothing ingested yet
            return result
        spaces.check_same(space, embedder.space)  # refuses a mixed space
        result.space = space.label
        key: tuple[object, ...] | None = None
        # The project's revision in this snapshot (app/rag/search/query_cache.py): any write to its chunks or
        # vectors, by any process or server, changes it.
        revision: tuple[object, ...] = ()
        if cache_key is not None or params.document_filter is not None:
            space_id = spaces.space_row_id(space.table)
            # A filter's documents change with their tags and dates too.
            revision = rankings.revision(db, project_id, space_id, metadata=params.document_filter is not None)
        if cache_key is not None:
            key = (project_id, space.table, space.created_at, revision, embedder.space, cache_key, params)
            key += (tuple(alternatives), alternative_weight)
            cached = query_cache.results(store.engine).get(key)
            if isinstance(cached, RetrievalResult):
                return _from_cache(cached, result)
            result.cache.result_hit = False
        only = None
        if params.document_filter is not None:
            with _timed(t, Stage.RETRIEVAL_LOAD):
                only = document_filter.resolved(db, project_id, (space.table, *revision), params.document_filter)
        vector_hits, keyword_hits = _rankings(db, space.table, project_id, query, query_vector, result, terms, only)
        extra: list[tuple[list[tuple[int, float]], float]] = []
        for text, vector in zip(alternatives, alternative_vectors, strict=True):
            alt_vector, alt_keyword = _rankings(db, space.table, project_id, text, vector, result, None, only)
            extra += [(alt_vector, alternative_weight * params.vector_weight)]
            extra += [(alt_keyword, alternative_weight * params.keyword_weight)]
        if params.feedback_docs > 0:
            with _timed(t, Stage.RETRIEVAL_FEEDBACK):
                extra += _feedback(
                    db, space.table, project_id, query, query_vector, [vector_hits, keyword_hits], result, only
                )
        with _timed(t, Stage.RETRIEVAL_SCORE):
            every = [vector_hits, keyword_hits, *(hits for hits, _ in extra)]
            ids = list(dict.fromkeys(cid for hits in every for cid, _ in hits))
            scores = _scores(db, space.table, query_vector, ids, dict(vector_hits), result)
        with _timed(t, Stage.RETRIEVAL_LOAD):
            rows = _load(db, project_id, ids)
        with _timed(t, Stage.RETRIEVAL_RANK):
            words = _question_words(db, project_id, query, terms, params)
            result.candidates = _rank(rows, scores, vector_hits, keyword_hits, result, extra, words=words)
        if params.neighbours:
            with _timed(t, Stage.RETRIEVAL_LOAD):
                _add_neighbours(db, project_id, space.table, query_vector, result)
        with _timed(t, Stage.RETRIEVAL_RANK):
            words_pass(db, project_id, result)
    with _timed(t, Stage.RETRIEVAL_RANK):
        apply_threshold_and_top_k(result.candidates, params)
    if key is not None and not result.degraded:  # a degraded search is worth trying again
        query_cache.results(store.engine).put(key, _own(result))
    return result


def nearest_score(store: Database, embedder: Embedder, project_id: int, query_vector: Vectors) -> float | None:
    """The cosine of the passage nearest ``query_vector`` in the project, scored as :func:`retrieve`
    scores its candidates; None when there is none, or when the vector search fails (the search that
    follows says so). One lookup: no result cache, chunk row, ranking or hygiene (a chat turn's probe
    of its message alone, app/services/chat/turn_search.py)."""
    with store.read() as db:
        space = spaces.active_space(db, project_id)
        if space is None:
            return None
        spaces.check_same(space, embedder.space)
        try:
            view = rankings.vector_ranking(db, space.table)
            with db.begin_nested() if not view.in_process else nullcontext():
                hits = _vector_search(view, query_vector, 1)
                if not hits:
                    return None
                return vector_store.exact_scores_of(db, space.table, query_vector, [hits[0][0]]).get(hits[0][0])
        except DBAPIError as exc:
            log.warning("the nearest passage could not be looked up: %s", exc)
            return None


def _own(result: RetrievalResult, **changes: object) -> RetrievalResult:
    """``result`` in containers of its own (the candidates are values, shared), with ``changes``: what
    the result cache stores and what a hit hands out, so neither sees what the other's holder does
    to its lists."""
    fields: dict[str, object] = {
        "candidates": list(result.candidates),
        "degraded": list(result.degraded),
        "timings_ms": dict(result.timings_ms),
        "alternatives": list(result.alternatives),
    }
    return replace(result, **(fields | changes))  # type: ignore[arg-type]


def _from_cache(cached: RetrievalResult, fresh: RetrievalResult) -> RetrievalResult:
    """A cached result as this call's: its query text, embedding timing and cache use."""
    cache = CacheUse(fresh.cache.embedding_hits, fresh.cache.embedding_misses, result_hit=True)
    return _own(cached, query=fresh.query, timings_ms=dict(fresh.timings_ms), cache=cache)


def _rankings(
    db: Session,
    table: str,
    project_id: int,
    query: str,
    query_vector: Vectors,
    result: RetrievalResult,
    weights: Mapping[int, float] | None = None,
    only: np.ndarray | None = None,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Both rankings at once. What reads the database (each index's journal check and catch-up) runs
    here, in the transaction's thread; the two searches are then work on immutable views that needs
    no connection, so the keyword search runs in a worker thread while this one searches vectors:
    hybrid costs about the slower of the two, not their sum (given a free core). Rankings computed in
    the database (PostgreSQL, app/rag/index/rankings.py) run one after the other, on the transaction's
    connection, the vector search in a savepoint (its failure degrades to keywords)."""
    params = result.params
    timings = result.timings_ms
    candidates = int(params.candidates)
    vector_view: rankings.VectorRanking | None = None
    searched: list[tuple[int, float]] | None = None  # the vector search, when it ran in the database
    if params.mode in (RetrievalMode.VECTOR, RetrievalMode.HYBRID):
        with _timed(timings, Stage.RETRIEVAL_VECTOR):
            try:
                vector_view = rankings.vector_ranking(db, table)
                if not vector_view.in_process:
                    # In the database: a failed statement would abort the whole read transaction
                    # (PostgreSQL), so it runs in a savepoint and a failure degrades as on SQLite.
                    with db.begin_nested():
                        searched = _vector_search(vector_view, query_vector, candidates, only)
            except DBAPIError as exc:
                log.warning("vector search failed, falling back to keyword search: %s", exc)
                result.degraded.append(
                    Degradation(
                        DegradationReason.VECTOR_SEARCH_FAILED,
                        f"vector search failed ({exc.orig}); used keyword search only",
                    )
                )
                result.mode = RetrievalMode.KEYWORD
                vector_view = None
    keyword_view: rankings.KeywordRanking | None = None
    if result.mode in (RetrievalMode.KEYWORD, RetrievalMode.HYBRID):
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            terms = dict(weights) if weights is not None else keyword_index.tokenizer().question(query)
            keyword_view = rankings.keyword_ranking(db, project_id) if terms else None
    if searched is not None:
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            return searched, keyword_view.search(terms, candidates, only) if keyword_view is not None else []
    if keyword_view is None or vector_view is None:
        if vector_view is not None:
            with _timed(timings, Stage.RETRIEVAL_VECTOR):
                return _vector_search(vector_view, query_vector, candidates, only), []
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            return [], keyword_view.search(terms, candidates, only) if keyword_view is not None else []
    if not PARALLEL_RANKINGS:
        with _timed(timings, Stage.RETRIEVAL_VECTOR):
            vector_hits = _vector_search(vector_view, query_vector, candidates, only)
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            return vector_hits, keyword_view.search(terms, candidates, only)
    # The keyword search (the shorter one, mostly Python between numpy calls) in a worker thread;
    # the vector search here, in one long numpy call that releases the GIL. The worker is usually
    # done before it, so neither waits for the GIL the other holds.
    keyword_search = _searches.submit(_timed_call, lambda: keyword_view.search(terms, candidates, only))
    with _timed(timings, Stage.RETRIEVAL_VECTOR):
        vector_hits = _vector_search(vector_view, query_vector, candidates, only)
    keyword_hits, ms = keyword_search.result()
    timings[Stage.RETRIEVAL_KEYWORD] = timings.get(Stage.RETRIEVAL_KEYWORD, 0.0) + ms
    return vector_hits, keyword_hits


def _feedback(
    db: Session,
    table: str,
    project_id: int,
    query: str,
    query_vector: Vectors,
    ranked: list[list[tuple[int, float]]],
    result: RetrievalResult,
    only: np.ndarray | None = None,
) -> list[tuple[list[tuple[int, float]], float]]:
    """Pseudo-relevance feedback: the rankings of the question moved towards the first chunks of
    the fused ranking so far, each with its fusion weight."""
    params = result.params
    weights = [params.vector_weight, params.keyword_weight][: len(ranked)]
    fused = fusion.rrf([([cid for cid, _ in hits], w) for hits, w in zip(ranked, weights, strict=True)], params.rrf_k)
    top = sorted(fused, key=lambda c: (-fused[c], c))[: params.feedback_docs]
    if not top:
        return []
    out: list[tuple[list[tuple[int, float]], float]] = []
    candidates = int(params.candidates)
    if params.feedback_vector_weight > 0 and result.mode != RetrievalMode.KEYWORD:
        view = rankings.vector_ranking(db, table)
        found = view.vectors(top)
        moved = feedback.rocchio(query_vector, [found[c] for c in top if c in found], params.feedback_beta)
        out.append((_vector_search(view, moved, candidates, only), params.feedback_vector_weight))
    if params.feedback_keyword_weight > 0 and result.mode != RetrievalMode.VECTOR:
        question = keyword_index.tokenizer().question(query)
        if question:
            view_k = rankings.keyword_ranking(db, project_id)
            texts = [str(row[3]) for row in _load(db, project_id, top).values()]
            terms = feedback.expanded_terms(
                question, texts, view_k, terms=params.feedback_terms, term_weight=params.feedback_term_weight
            )
            out.append((view_k.search(terms, candidates, only), params.feedback_keyword_weight))
    return out


def _vector_search(
    view: rankings.VectorRanking, query_vector: Vectors, candidates: int, only: np.ndarray | None = None
) -> list[tuple[int, float]]:
    return view.search(np.asarray(query_vector, dtype=np.float32), max(1, min(candidates, vector_store.MAX_K)), only)


# Keyword searches of hybrid retrievals, run beside the vector search: on one core that would only
# add thread hand-offs. (The benchmark turns it off to measure both ways in the same run.)
PARALLEL_RANKINGS = len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1) > 1
_searches = ThreadPoolExecutor(max_workers=4, thread_name_prefix="keyword-search")


def _timed_call(call: Callable[[], T]) -> tuple[T, float]:
    start = time.perf_counter()
    value = call()
    return value, (time.perf_counter() - start) * 1000


def _scores(
    db: Session,
    table: str,
    query_vector: Vectors,
    ids: list[int],
    knn_scores: dict[int, float],
    result: RetrievalResult,
) -> dict[int, float | None]:
    """Exact cosine for every candidate from its stored vector, so a chunk scores the same whichever
    ranking found it (KNN distances are float32 and would differ in the last digits)."""
    try:
        return dict(vector_store.exact_scores_of(db, table, query_vector, ids))
    except DBAPIError as exc:
        result.degraded.append(
            Degradation(
                DegradationReason.SCORES_UNAVAILABLE,
                f"could not read stored vectors to score candidates ({exc.orig})",
            )
        )
        return dict(knn_scores)


_LOAD = text(
    "SELECT c.id, c.document_id, d.name, c.text, c.char_start, c.char_end, c.line_start, c.line_end, "
    "c.page, c.heading_path, c.ordinal FROM chunks c JOIN documents d ON d.id = c.document_id "
    "WHERE c.project_id = :project AND c.id IN :ids"
).bindparams(bindparam("ids", expanding=True))


def _load(db: Session, project_id: int, ids: list[int]) -> dict[int, tuple]:
    if not ids:
        return {}
    rows = db.execute(_LOAD, {"project": project_id, "ids": [int(i) for i in ids]}).all()
    return {int(r[0]): tuple(r) for r in rows}


def _add_neighbours(db: Session, project_id: int, table: str, query_vector: Vectors, result: RetrievalResult) -> None:
    """The chunks before and after each of the ``neighbours`` best candidates that passed the
    threshold, in their document, placed right after it (same fused rank): with merge_adjacent
    they widen its source into a longer passage."""
    params = result.params
    anchors = [c for c in result.candidates if c.score is None or c.score >= params.threshold][: params.neighbours]
    have = {c.chunk_id for c in result.candidates}
    wanted = [(a.document_id, a.ordinal + d) for a in anchors if a.ordinal is not None for d in (-1, 1)]
    if not wanted:
        return
    pairs = " OR ".join(f"(c.document_id = :d{n} AND c.ordinal = :o{n})" for n in range(len(wanted)))
    # ``+c.project_id``: not a use for the project's index. Without statistics SQLite's planner chose
    # it and read every chunk of the project (23-100 ms at 100k chunks); each pair is one lookup in
    # ix_chunks_document_ordinal instead (0.05 ms). Unary plus is an integer's identity in PostgreSQL.
    found = db.execute(
        text(f"SELECT c.id, c.document_id, c.ordinal FROM chunks c WHERE +c.project_id = :project AND ({pairs})"),
        {"project": project_id, **{f"d{n}": d for n, (d, _) in enumerate(wanted)}}
        | {f"o{n}": o for n, (_, o) in enumerate(wanted)},
    ).all()
    ids = [int(r[0]) for r in found if int(r[0]) not in have]
    if not ids:
        return
    rows = _load(db, project_id, ids)
    scores = _scores(db, table, query_vector, ids, {}, result)
    extra = _rank(rows, scores, [], [], result, order=ids)
    by_anchor = {(c.document_id, c.ordinal): c for c in extra}
    anchor_ids = {a.chunk_id for a in anchors}
    out: list[Candidate] = []
    for candidate in result.candidates:
        out.append(candidate)
        if candidate.chunk_id in anchor_ids:
            for d in (-1, 1):
                neighbour = by_anchor.pop((candidate.document_id, (candidate.ordinal or 0) + d), None)
                if neighbour is not None:
                    out.append(replace(neighbour, fused_rank=candidate.fused_rank, fused_score=candidate.fused_score))
    result.candidates = out


def _rank(
    rows: dict[int, tuple],
    scores: dict[int, float | None],
    vector_hits: list[tuple[int, float]],
    keyword_hits: list[tuple[int, float]],
    result: RetrievalResult,
    extra: Sequence[tuple[list[tuple[int, float]], float]] = (),
    order: list[int] | None = None,
    *,
    words: Mapping[int, float] | None = None,
) -> list[Candidate]:
    params = result.params
    vector_ids = [cid for cid, _ in vector_hits if cid in rows]
    keyword_ids = [cid for cid, _ in keyword_hits if cid in rows]
    vector_rank = {cid: i for i, cid in enumerate(vector_ids, start=1)}
    keyword_rank = {cid: i for i, cid in enumerate(keyword_ids, start=1)}
    weights = [(vector_ids, params.vector_weight), (keyword_ids, params.keyword_weight)]
    weights += [([cid for cid, _ in hits if cid in rows], weight) for hits, weight in extra]
    fused = fusion.rrf(weights, k=params.rrf_k)
    if order is None and params.fusion == "convex" and result.mode == RetrievalMode.HYBRID and not extra:
        similarity = {cid: s for cid in rows if (s := scores.get(cid)) is not None}
        bm25 = {cid: -value for cid, value in keyword_hits if cid in rows}  # FTS5's bm25: lower is better
        fused = fusion.convex(similarity, bm25, params.convex_alpha)
        fused.update({cid: 0.0 for cid in rows if cid not in fused})  # no score at all: last
        if words is not None:
            chunks = {cid: (int(r[1]), str(r[3])) for cid, r in rows.items()}
            fused = evidence.with_documents(fused, chunks, words, coverage=params.document_coverage)
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
        result.fusion = fusion.Fusion.CONVEX
    elif order is None and extra:  # several phrasings: their fusion orders, whatever the mode
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
        result.fusion = fusion.Fusion.RRF
    elif order is None and result.mode == RetrievalMode.VECTOR:
        order = sorted(vector_ids, key=lambda c: (-(scores.get(c) or -2.0), c))
    elif order is None and result.mode == RetrievalMode.KEYWORD:
        order = keyword_ids
    elif order is None:
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
        result.fusion = fusion.Fusion.RRF
    candidates = []
    for position, cid in enumerate(order, start=1):
        r = rows[cid]
        candidates.append(
            Candidate(
                chunk_id=cid,
                document_id=int(r[1]),
                document_name=str(r[2]),
                text=str(r[3]),
                location=Location(int(r[4]), int(r[5]), int(r[6]), int(r[7]), r[8], str(r[9])),
                score=scores.get(cid),
                vector_rank=vector_rank.get(cid),
                keyword_rank=keyword_rank.get(cid),
                fused_rank=position,
                fused_score=fused.get(cid, 0.0),
                ordinal=int(r[10]),
            )
        )
    return candidates


# A question of at most this many words embeds as little more than its question words: "How do I install
# it?" scores 0.05 against the section that answers it, "What does -n do?" 0.24 against the flag's
# list item (docs/BENCHMARKS.md, "Short questions").
SHORT_QUESTION_WORDS = 6
# How far under the threshold the words may carry a chunk: at the default 0.30, any chunk not facing away
# from the question; a session that asks for 0.90 still gets nothing under 0.60.
WORDS_MARGIN = 0.30


def _question_words(
    db: Session, project_id: int, query: str, terms: Mapping[int, float] | None, params: RetrievalParams
) -> dict[int, float] | None:
    """The question's words for document evidence, each weighted by its idf in the project times its
    weight in the query (an earlier turn's words count less; at most 1, as the message's own words):
    None when the search does not fuse by score or the evidence is off."""
    if params.fusion != "convex" or params.mode != RetrievalMode.HYBRID or params.document_coverage <= 0:
        return None
    weights = dict(terms) if terms is not None else keyword_index.tokenizer().question(query)
    idf = rankings.keyword_ranking(db, project_id).idf(list(weights))
    return {term: value * min(1.0, float(weights[term])) for term, value in idf.items()}


def words_pass(db: Session, project_id: int, result: RetrievalResult) -> None:
    """When no candidate of a short question reaches the threshold, the keyword ranking's first one
    passes it if it holds every word of the question that the knowledge base has (each word weighted
    by its idf, so the share is 1) and scores at least ``WORDS_MARGIN`` under the threshold: the
    cosine of a few generic words says little, the words do. Only then — a search that keeps something
    is left as it is, and a chunk that misses any of the question's words (an unanswerable "does it
    support X?" over a document about Y) is not let in."""
    params = result.params
    words = keyword_index.tokenizer().question(result.query)
    if not words or len(_WORDS.findall(result.query)) > SHORT_QUESTION_WORDS:
        return
    if any(c.score is None or c.score >= params.threshold for c in result.candidates):
        return
    first = next((i for i, c in enumerate(result.candidates) if c.keyword_rank == 1), None)
    if first is None or (result.candidates[first].score or 0.0) < params.threshold - WORDS_MARGIN:
        return
    idf = rankings.keyword_ranking(db, project_id).idf(list(words))
    if conversation.own_words(idf, result.candidates[first].text) >= FULL_SHARE:
        result.candidates[first] = replace(result.candidates[first], passed_on_words=True)


FULL_SHARE = 1.0 - 1e-9  # every word (float sums of idf)
_WORDS = re.compile(r"\w+", re.UNICODE)


def apply_threshold_and_top_k(candidates: list[Candidate], params: RetrievalParams) -> None:
    """Each candidate's fate, in its ranked order: ``candidates`` (a list of the caller's own) gets a
    new candidate wherever a fate changes. Run again after a reranker reorders them: a chunk merged
    into its neighbour stays merged (its text is in the merged source already)."""
    duplicates = hygiene.near_duplicates(candidates) if params.dedupe else set()
    per_document: Counter[int] = Counter()
    kept = 0
    for i, candidate in enumerate(candidates):
        if candidate.fate == CandidateFate.MERGED:
            continue
        if candidate.chunk_id in duplicates:
            fate = CandidateFate.NEAR_DUPLICATE
        elif candidate.score is not None and candidate.score < params.threshold and not candidate.passed_on_words:
            fate = CandidateFate.BELOW_THRESHOLD
        elif kept >= params.top_k:
            fate = CandidateFate.BEYOND_TOP_K
        elif params.per_document and per_document[candidate.document_id] >= params.per_document:
            fate = CandidateFate.OVER_DOCUMENT_CAP
        else:
            fate = CandidateFate.KEPT
            per_document[candidate.document_id] += 1
            kept += 1
        if fate != candidate.fate:
            candidates[i] = replace(candidate, fate=fate)
    if params.merge_adjacent:
        merged, gone = hygiene.merge_adjacent([c for c in candidates if c.fate == CandidateFate.KEPT])
        replacement = {c.chunk_id: c for c in merged}
        for i, candidate in enumerate(candidates):
            if candidate.chunk_id in gone:
                candidates[i] = replace(candidate, fate=CandidateFate.MERGED)
            elif candidate.chunk_id in replacement:
                candidates[i] = replacement[candidate.chunk_id]
