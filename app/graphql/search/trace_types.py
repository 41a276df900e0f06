"""The trace's record of what a turn searched and how (issue 15): the query, the rewrite, every
pass of evaluate-and-widen and what the caches gave (app/services/chat/trace_model.py: TraceSearch)."""

from __future__ import annotations

import strawberry

from app.graphql.enums import Quality, RewriteMode, RewriteOutcome, SearchDecision, SearchJudge
from app.services.chat import trace_model


@strawberry.type(description="The chat model's rewrite of a follow-up into a standalone query.")
class TraceRewrite:
    outcome: RewriteOutcome = strawberry.field(description="What became of it.")
    query: str | None = strawberry.field(description="The rewritten query; null unless it was used.")
    reason: str = strawberry.field(description="Why it went that way, in words.")
    ms: float = strawberry.field(description="Milliseconds the rewrite took (0 when skipped).")


@strawberry.type(description="One retrieval pass of evaluate-and-widen.")
class TracePass:
    number: int = strawberry.field(description="Which pass, from 1.")
    budget: int = strawberry.field(description="The most passes the session's quality allowed.")
    queries: list[str] = strawberry.field(
        description="The query searched, then the earlier user turns it took into account (and any expansions)."
    )
    candidates: int = strawberry.field(description="Candidates taken from each ranking.")
    threshold: float = strawberry.field(description="The threshold this pass applied (lower on a widened pass).")
    kept: int = strawberry.field(description="Sources kept.")
    best_score: float | None = strawberry.field(description="The best kept source's score; null when none.")
    adequate: bool = strawberry.field(description="The pass was judged good enough.")
    value: float = strawberry.field(description="The heuristic's 0-1 value of the pass (passes are compared by it).")
    judge: SearchJudge = strawberry.field(description="Who judged it.")
    reason: str = strawberry.field(description="The judgement, in words.")
    decision: SearchDecision = strawberry.field(description="What followed.")
    ms: float = strawberry.field(description="Milliseconds the pass took, judgement included.")
    cache_hit: bool | None = strawberry.field(
        description="Its result came from the retrieval cache; null when the cache was not consulted."
    )


@strawberry.type(description="What the caches gave the turn's search.")
class TraceCache:
    embedding_hits: int = strawberry.field(description="Query embeddings found in the cache.")
    embedding_misses: int = strawberry.field(description="Query embeddings computed.")
    result_hits: int = strawberry.field(description="Passes whose result came from the retrieval cache.")
    result_misses: int = strawberry.field(description="Passes that searched the knowledge base.")


@strawberry.type(description="What the turn searched, and how hard.")
class TraceSearch:
    quality: Quality = strawberry.field(description="The session's quality for this turn.")
    rewrite_mode: RewriteMode = strawberry.field(description="The session's rewrite setting for this turn.")
    searched: str = strawberry.field(description="The query searched: the message, or its rewrite.")
    earlier: list[str] = strawberry.field(
        description="The earlier user turns the history-aware query took into account, oldest first."
    )
    rewrite: TraceRewrite = strawberry.field(description="The rewrite, or why there was none.")
    passes: list[TracePass] = strawberry.field(description="Every retrieval pass, in order.")
    cache: TraceCache = strawberry.field(description="Cache hits and misses.")


def search_of(search: trace_model.TraceSearch | None) -> TraceSearch | None:
    if search is None:
        return None
    return TraceSearch(
        quality=search.quality,
        rewrite_mode=search.rewrite_mode,
        searched=search.searched,
        earlier=list(search.earlier),
        rewrite=TraceRewrite(**search.rewrite.model_dump()),
        passes=[TracePass(**p.model_dump()) for p in search.passes],
        cache=TraceCache(**search.cache.model_dump()),
    )
