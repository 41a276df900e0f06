"""Search and retrieval-preview results."""

from __future__ import annotations

from typing import Annotated

import strawberry

from app.graphql.chat.trace_types import (
    KEYWORD_RANK,
    PASSED_ON_WORDS,
    SCORE,
    VECTOR_RANK,
    Degradation,
    Location,
    StageTiming,
    TraceRanking,
    TraceSearch,
)
from app.graphql.connections import PAGE_OR_MISTAKE, After, Before, Connection, Cursor, First, Last, paged
from app.graphql.context import Info
from app.graphql.enums import CandidateFate, Fusion, RetrievalMode
from app.graphql.errors import ValidationError
from app.graphql.search.document_filter import DocumentFilterView
from app.rag.search.candidates import Candidate
from app.rag.search.retrieval import RetrievalResult
from app.services.pages import Page, PageRequest, page_of


@strawberry.type(description="A chunk retrieval found, with its scores and what the settings did with it.")
class SearchHit:
    chunk_id: strawberry.ID = strawberry.field(description="The chunk.")
    document_id: strawberry.ID = strawberry.field(description="Its document.")
    document_name: str = strawberry.field(description="Its document's name.")
    text: str = strawberry.field(description="The chunk's text.")
    location: Location = strawberry.field(description="Where it sits in its document.")
    score: float | None = strawberry.field(description=SCORE)
    vector_rank: int | None = strawberry.field(description=VECTOR_RANK)
    keyword_rank: int | None = strawberry.field(description=KEYWORD_RANK)
    fused_rank: int = strawberry.field(
        description="Its place in the fused ranking, 1-based: its place in `hits` unless a reranker (a retrieval "
        "preview of a session that reranks) reordered them."
    )
    fate: CandidateFate = strawberry.field(description="What topK and threshold did with it.")
    rerank_score: float | None = strawberry.field(
        default=None,
        description="The reranker's score (its own scale, only comparable within one search); null when no "
        "reranker scored it.",
    )
    passed_on_words: bool = strawberry.field(default=False, description=PASSED_ON_WORDS)


# A hit's cursor is its position in the ranked list.
HIT_CURSOR = Cursor("SearchHit", (int,))


@strawberry.type(
    description="A page of the ranked candidates, best first. The list is bounded (retrieval takes at most "
    "4 x topK, and at least 20, candidates from each ranking) and is ranked anew for each page, so a cursor "
    "is a rank: pages read across a change to the documents can overlap or skip."
)
class SearchHitConnection(Connection[SearchHit]):
    pass


SearchHitConnectionResult = Annotated[
    SearchHitConnection | ValidationError,
    strawberry.union("SearchHitConnectionResult", description=PAGE_OR_MISTAKE),
]


@strawberry.type(description="What a search found, and what the settings kept of it.")
class SearchResults:
    query: str = strawberry.field(description="The query searched.")
    mode: RetrievalMode = strawberry.field(description="The retrieval mode asked for.")
    effective_mode: RetrievalMode = strawberry.field(description="Differs from mode when search degraded.")
    fusion: Fusion | None = strawberry.field(description="How the rankings were fused; null when one ran alone.")
    top_k: int = strawberry.field(description="At most this many hits are kept.")
    threshold: float = strawberry.field(description="The cosine similarity a hit needed to be kept, 0-1.")
    document_filter: DocumentFilterView | None = strawberry.field(
        description="The documents the search was narrowed to; null: every document."
    )
    embedding_space: str | None = strawberry.field(
        description='The embedding space searched ("provider/model@dimensions"); null while the knowledge base '
        "has no documents."
    )
    degraded: list[Degradation] = strawberry.field(
        description="What went wrong without stopping the search (empty when all went well)."
    )
    timings: list[StageTiming] = strawberry.field(description="Each retrieval stage that ran, in order.")
    search: TraceSearch | None = strawberry.field(
        default=None,
        description="For a retrieval preview: the query searched (the message in its conversation, or its "
        "rewrite), the rewrite and every pass, as the next turn's trace would show them; null for a plain search.",
    )
    ranking: TraceRanking | None = strawberry.field(
        default=None,
        description="For a retrieval preview: the ranking stages the next turn would run (expansion's phrasings, "
        "the reranker), as its trace would show them; null when none would (or for a plain search).",
    )
    candidates: strawberry.Private[list[SearchHit]]

    @strawberry.field(description="Every candidate considered, best first; the first 50 unless asked otherwise.")
    async def hits(
        self, info: Info, first: First = None, after: After = None, last: Last = None, before: Before = None
    ) -> SearchHitConnectionResult:
        async def load(request: PageRequest) -> Page[SearchHit]:
            return page_of(self.candidates, request)

        return await paged(
            info,
            SearchHitConnection,
            HIT_CURSOR,
            load,
            lambda hit: hit,
            first=first,
            after=after,
            last=last,
            before=before,
        )

    @strawberry.field(description="The hits that pass the threshold, best first: at most topK, so not paged.")
    def kept(self) -> list[SearchHit]:
        return [h for h in self.candidates if h.fate == CandidateFate.KEPT]


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
        rerank_score=c.rerank_score,
        passed_on_words=c.passed_on_words,
    )


def search_results(
    result: RetrievalResult, search: TraceSearch | None = None, ranking: TraceRanking | None = None
) -> SearchResults:
    return SearchResults(
        search=search,
        ranking=ranking,
        query=result.query,
        mode=RetrievalMode(result.params.mode),
        effective_mode=RetrievalMode(result.mode),
        fusion=result.fusion,
        top_k=result.params.top_k,
        threshold=result.params.threshold,
        document_filter=DocumentFilterView.of(result.params.document_filter),
        embedding_space=result.space,
        degraded=list(result.degraded),
        timings=[StageTiming(stage=k, ms=round(v, 3)) for k, v in result.timings_ms.items()],
        candidates=[_hit(c) for c in result.candidates],
    )
