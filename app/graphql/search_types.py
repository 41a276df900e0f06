"""Search and retrieval-preview results."""

from __future__ import annotations

import strawberry

from app.graphql.enums import CandidateFate, RetrievalMode
from app.graphql.trace_types import Location, StageTiming
from app.rag.retrieval import Candidate, RetrievalResult


@strawberry.type(description="A chunk retrieval found, with its scores and what the settings did with it.")
class SearchHit:
    chunk_id: strawberry.ID
    document_id: strawberry.ID
    document_name: str
    text: str
    location: Location
    score: float | None = strawberry.field(description="Cosine similarity to the query (0-1); the threshold's scale.")
    vector_rank: int | None
    keyword_rank: int | None
    fused_rank: int
    fate: CandidateFate


@strawberry.type
class SearchResults:
    query: str
    mode: RetrievalMode
    effective_mode: RetrievalMode = strawberry.field(description="Differs from mode when search degraded.")
    top_k: int
    threshold: float
    embedding_space: str | None
    degraded: list[str]
    timings: list[StageTiming]
    hits: list[SearchHit] = strawberry.field(description="Every candidate considered, best first.")

    @strawberry.field(description="The hits that pass the threshold, at most topK.")
    def kept(self) -> list[SearchHit]:
        return [h for h in self.hits if h.fate == CandidateFate.KEPT]


def _hit(c: Candidate) -> SearchHit:
    return SearchHit(
        chunk_id=strawberry.ID(str(c.chunk_id)),
        document_id=strawberry.ID(str(c.document_id)),
        document_name=c.document_name,
        text=c.text,
        location=c.location,
        score=c.score,
        vector_rank=c.vector_rank,
        keyword_rank=c.keyword_rank,
        fused_rank=c.fused_rank,
        fate=CandidateFate(c.fate),
    )


def search_results(result: RetrievalResult) -> SearchResults:
    return SearchResults(
        query=result.query,
        mode=RetrievalMode(result.params.mode),
        effective_mode=RetrievalMode(result.mode),
        top_k=result.params.top_k,
        threshold=result.params.threshold,
        embedding_space=result.space,
        degraded=result.degraded,
        timings=[StageTiming(stage=k, ms=round(v, 3)) for k, v in result.timings_ms.items()],
        hits=[_hit(c) for c in result.candidates],
    )
