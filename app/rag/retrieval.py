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
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeVar

import numpy as np
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.database import Database
from app.llm.base import Embedder, Vectors
from app.rag import feedback, fusion, keyword_index, spaces, vector_index, vector_store
from app.rag.degradation import Degradation, DegradationReason
from app.rag.retrieval_mode import RetrievalMode
from app.rag.stages import Stage
from app.settings import RagDefaults

log = logging.getLogger(__name__)
T = TypeVar("T")


class CandidateFate(StrEnum):
    """What became of a candidate (in the order the stages decide it)."""

    KEPT = "kept"
    BELOW_THRESHOLD = "below_threshold"
    BEYOND_TOP_K = "beyond_top_k"
    OVER_BUDGET = "over_budget"  # kept by retrieval, cut to fit the model's context window


@dataclass(frozen=True)
class RetrievalParams:
    mode: RetrievalMode = RetrievalMode.HYBRID
    top_k: int = 5
    threshold: float = 0.25
    candidates: int = 50  # taken from each ranking before fusion
    rrf_k: int = 60
    vector_weight: float = 1.0
    keyword_weight: float = 1.0
    # Hybrid: "rrf" (ranks, weighted above) or "convex" (scores: convex_alpha x cosine + the rest x BM25,
    # each min-max normalised over the candidates). Several phrasings or feedback are always fused by RRF.
    fusion: str = "rrf"
    convex_alpha: float = 0.75
    # Pseudo-relevance feedback (app/rag/feedback.py): the first N chunks of the fused ranking move the
    # question (0: off); the moved vector's and terms' rankings are fused with these weights (0: not run).
    feedback_docs: int = 0
    feedback_vector_weight: float = 0.5
    feedback_keyword_weight: float = 0.5
    feedback_beta: float = 0.75  # Rocchio: how far the vector moves towards the feedback chunks' mean
    feedback_terms: int = 10  # RM3: new terms added
    feedback_term_weight: float = 0.5  # RM3: the best new term's weight, relative to a question word

    @classmethod
    def for_session(
        cls, rag: RagDefaults, *, top_k: int, threshold: float, mode: RetrievalMode | None = None
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
        )


@dataclass(frozen=True)
class Location:
    """Where a chunk (or a sentence quoted from it) sits in its document: the one definition, which
    search results, chat sources, citations (stored as its fields) and the trace carry, and which
    GraphQL exposes as its ``Location`` type."""

    char_start: int
    char_end: int
    line_start: int  # 1-based, inclusive
    line_end: int
    page: int | None = None  # for paged formats (PDF)
    heading_path: str = ""  # "Install > From source"; empty when the chunk has no heading

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Location:
        """A location stored as JSON (a citation's): its fields by name."""
        return cls(**data)


@dataclass
class Candidate:
    chunk_id: int
    document_id: int
    document_name: str
    text: str
    location: Location
    score: float | None
    vector_rank: int | None
    keyword_rank: int | None
    fused_rank: int
    fused_score: float
    fate: CandidateFate = CandidateFate.KEPT
    rerank_score: float | None = None  # the reranker's, when one ranked this candidate (app/rag/rerank.py)


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
    alternatives: Sequence[str] = (),
    alternative_weight: float = 0.5,
) -> RetrievalResult:
    """Search one project. Embedding happens before any database connection is taken; errors of
    the embedder propagate (the caller decides how to degrade); a failing vector index degrades to
    keyword-only and says so in ``degraded``.

    ``alternatives`` (other phrasings of the question: multi-query expansion) are each searched the
    same way, and their rankings fused with the question's, each weighted ``alternative_weight``
    (the question's weigh 1); scores stay the cosine to the question itself."""
    result = RetrievalResult(query=query, mode=params.mode, params=params, alternatives=list(alternatives))
    t = result.timings_ms
    if query_vector is None or alternatives:
        with _timed(t, Stage.RETRIEVAL_EMBED):
            texts = ([] if query_vector is not None else [query]) + list(alternatives)
            embedded = embedder.embed(texts)
            if query_vector is None:
                query_vector, embedded = embedded[0], embedded[1:]
    alternative_vectors = list(embedded) if alternatives else []
    with store.read() as db:
        space = spaces.active_space(db, project_id)
        if space is None:  # nothing ingested yet
            return result
        spaces.check_same(space, embedder.space)  # refuses a mixed space
        result.space = space.label
        vector_hits, keyword_hits = _rankings(db, space.table, project_id, query, query_vector, result)
        extra: list[tuple[list[tuple[int, float]], float]] = []
        for text, vector in zip(alternatives, alternative_vectors, strict=True):
            alt_vector, alt_keyword = _rankings(db, space.table, project_id, text, vector, result)
            extra += [(alt_vector, alternative_weight * params.vector_weight)]
            extra += [(alt_keyword, alternative_weight * params.keyword_weight)]
        if params.feedback_docs > 0:
            with _timed(t, Stage.RETRIEVAL_FEEDBACK):
                extra += _feedback(
                    db, space.table, project_id, query, query_vector, [vector_hits, keyword_hits], result
                )
        with _timed(t, Stage.RETRIEVAL_SCORE):
            every = [vector_hits, keyword_hits, *(hits for hits, _ in extra)]
            ids = list(dict.fromkeys(cid for hits in every for cid, _ in hits))
            scores = _scores(db, space.table, query_vector, ids, dict(vector_hits), result)
        with _timed(t, Stage.RETRIEVAL_LOAD):
            rows = _load(db, project_id, ids)
    with _timed(t, Stage.RETRIEVAL_RANK):
        result.candidates = _rank(rows, scores, vector_hits, keyword_hits, result, extra)
        apply_threshold_and_top_k(result.candidates, params)
    return result


def _rankings(
    db: Session,
    table: str,
    project_id: int,
    query: str,
    query_vector: Vectors,
    result: RetrievalResult,
) -> tuple[list[tuple[int, float]], list[tuple[int, float]]]:
    """Both rankings at once. What reads the database (each index's journal check and catch-up) runs
    here, in the transaction's thread; the two searches are then work on immutable views that needs
    no connection, so the keyword search runs in a worker thread while this one searches vectors:
    hybrid costs about the slower of the two, not their sum (given a free core)."""
    params = result.params
    timings = result.timings_ms
    vector_view: vector_index.View | None = None
    if params.mode in (RetrievalMode.VECTOR, RetrievalMode.HYBRID):
        with _timed(timings, Stage.RETRIEVAL_VECTOR):
            try:
                vector_view, _ = vector_index.view_for(db, table, vector_store.space_row_id(table))
            except DBAPIError as exc:
                log.warning("vector search failed, falling back to keyword search: %s", exc)
                result.degraded.append(
                    Degradation(
                        DegradationReason.VECTOR_SEARCH_FAILED,
                        f"vector search failed ({exc.orig}); used keyword search only",
                    )
                )
                result.mode = RetrievalMode.KEYWORD
    keyword_view: keyword_index.View | None = None
    if result.mode in (RetrievalMode.KEYWORD, RetrievalMode.HYBRID):
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            terms = keyword_index.tokenizer().question(query)
            keyword_view = keyword_index.view_for(db, project_id) if terms else None
    candidates = int(params.candidates)
    if keyword_view is None or vector_view is None:
        if vector_view is not None:
            with _timed(timings, Stage.RETRIEVAL_VECTOR):
                return _vector_search(vector_view, query_vector, candidates), []
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            return [], keyword_view.search(terms, candidates) if keyword_view is not None else []
    if not PARALLEL_RANKINGS:
        with _timed(timings, Stage.RETRIEVAL_VECTOR):
            vector_hits = _vector_search(vector_view, query_vector, candidates)
        with _timed(timings, Stage.RETRIEVAL_KEYWORD):
            return vector_hits, keyword_view.search(terms, candidates)
    # The keyword search (the shorter one, mostly Python between numpy calls) in a worker thread;
    # the vector search here, in one long numpy call that releases the GIL. The worker is usually
    # done before it, so neither waits for the GIL the other holds.
    keyword_search = _searches.submit(_timed_call, lambda: keyword_view.search(terms, candidates))
    with _timed(timings, Stage.RETRIEVAL_VECTOR):
        vector_hits = _vector_search(vector_view, query_vector, candidates)
    keyword_hits, ms = keyword_search.result()
    timings[Stage.RETRIEVAL_KEYWORD] = timings.get(Stage.RETRIEVAL_KEYWORD, 0.0) + ms
    return vector_hits, keyword_hits


def _feedback(
    db: Session,
    table: str,
    project_id: int,
    query: str,
    query_vector: Vectors,
    rankings: list[list[tuple[int, float]]],
    result: RetrievalResult,
) -> list[tuple[list[tuple[int, float]], float]]:
    """Pseudo-relevance feedback: the rankings of the question moved towards the first chunks of
    the fused ranking so far, each with its fusion weight."""
    params = result.params
    weights = [params.vector_weight, params.keyword_weight][: len(rankings)]
    fused = fusion.rrf([([cid for cid, _ in hits], w) for hits, w in zip(rankings, weights, strict=True)], params.rrf_k)
    top = sorted(fused, key=lambda c: (-fused[c], c))[: params.feedback_docs]
    if not top:
        return []
    out: list[tuple[list[tuple[int, float]], float]] = []
    candidates = int(params.candidates)
    if params.feedback_vector_weight > 0 and result.mode != RetrievalMode.KEYWORD:
        view, _ = vector_index.view_for(db, table, vector_store.space_row_id(table))
        found = view.vectors(top)
        moved = feedback.rocchio(query_vector, [found[c] for c in top if c in found], params.feedback_beta)
        out.append((_vector_search(view, moved, candidates), params.feedback_vector_weight))
    if params.feedback_keyword_weight > 0 and result.mode != RetrievalMode.VECTOR:
        question = keyword_index.tokenizer().question(query)
        if question:
            view_k = keyword_index.view_for(db, project_id)
            texts = [str(row[3]) for row in _load(db, project_id, top).values()]
            terms = feedback.expanded_terms(
                question, texts, view_k, terms=params.feedback_terms, term_weight=params.feedback_term_weight
            )
            out.append((view_k.search(terms, candidates), params.feedback_keyword_weight))  # type: ignore[arg-type]
    return out


def _vector_search(view: vector_index.View, query_vector: Vectors, candidates: int) -> list[tuple[int, float]]:
    return view.search(np.asarray(query_vector, dtype=np.float32), max(1, min(candidates, vector_store.MAX_K)))


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
        return dict(vector_store.exact_scores(query_vector, vector_store.vectors_for(db, table, ids)))
    except DBAPIError as exc:
        result.degraded.append(
            Degradation(
                DegradationReason.SCORES_UNAVAILABLE,
                f"could not read stored vectors to score candidates ({exc.orig})",
            )
        )
        return dict(knn_scores)


def _load(db: Session, project_id: int, ids: list[int]) -> dict[int, tuple]:
    if not ids:
        return {}
    rows = (
        db.connection()
        .exec_driver_sql(
            "SELECT c.id, c.document_id, d.name, c.text, c.char_start, c.char_end, c.line_start, c.line_end, "
            "c.page, c.heading_path FROM chunks c JOIN documents d ON d.id = c.document_id "
            f"WHERE c.project_id = ? AND c.id IN ({','.join('?' * len(ids))})",
            (project_id, *ids),
        )
        .all()
    )
    return {int(r[0]): tuple(r) for r in rows}


def _rank(
    rows: dict[int, tuple],
    scores: dict[int, float | None],
    vector_hits: list[tuple[int, float]],
    keyword_hits: list[tuple[int, float]],
    result: RetrievalResult,
    extra: Sequence[tuple[list[tuple[int, float]], float]] = (),
) -> list[Candidate]:
    params = result.params
    vector_ids = [cid for cid, _ in vector_hits if cid in rows]
    keyword_ids = [cid for cid, _ in keyword_hits if cid in rows]
    vector_rank = {cid: i for i, cid in enumerate(vector_ids, start=1)}
    keyword_rank = {cid: i for i, cid in enumerate(keyword_ids, start=1)}
    weights = [(vector_ids, params.vector_weight), (keyword_ids, params.keyword_weight)]
    weights += [([cid for cid, _ in hits if cid in rows], weight) for hits, weight in extra]
    fused = fusion.rrf(weights, k=params.rrf_k)
    if params.fusion == "convex" and result.mode == RetrievalMode.HYBRID and not extra:
        similarity = {cid: s for cid in rows if (s := scores.get(cid)) is not None}
        bm25 = {cid: -value for cid, value in keyword_hits if cid in rows}  # FTS5's bm25: lower is better
        fused = fusion.convex(similarity, bm25, params.convex_alpha)
        fused.update({cid: 0.0 for cid in rows if cid not in fused})  # no score at all: last
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
    elif extra:  # several phrasings: their fusion orders, whatever the mode
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
    elif result.mode == RetrievalMode.VECTOR:
        order = sorted(vector_ids, key=lambda c: (-(scores.get(c) or -2.0), c))
    elif result.mode == RetrievalMode.KEYWORD:
        order = keyword_ids
    else:
        order = sorted(fused, key=lambda c: (-fused[c], -(scores.get(c) or -2.0), c))
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
            )
        )
    return candidates


def apply_threshold_and_top_k(candidates: list[Candidate], params: RetrievalParams) -> None:
    kept = 0
    for candidate in candidates:
        if candidate.score is not None and candidate.score < params.threshold:
            candidate.fate = CandidateFate.BELOW_THRESHOLD
        elif kept >= params.top_k:
            candidate.fate = CandidateFate.BEYOND_TOP_K
        else:
            candidate.fate = CandidateFate.KEPT
            kept += 1
