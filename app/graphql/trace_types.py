"""The retrieval trace as GraphQL types (stored as JSON with the message; see services/chat_trace.py)."""

from __future__ import annotations

import strawberry

from app.graphql.enums import AnswerMode, CandidateFate, GuardDecision, RetrievalMode
from app.rag.retrieval import Location
from app.services import trace_model

# Retrieval's value type, exposed as it is: strawberry.type registers the class in place (it stays a
# frozen dataclass), so search hits, chat sources, citations and the trace hand theirs over unchanged.
strawberry.type(Location, description="Where a chunk sits in its document.")


@strawberry.type(description="A chunk retrieval considered, and what became of it.")
class TraceCandidate:
    chunk_id: strawberry.ID
    document_id: strawberry.ID
    document_name: str
    score: float | None = strawberry.field(description="Cosine similarity to the question (0-1).")
    vector_rank: int | None
    keyword_rank: int | None
    fused_rank: int
    fused_score: float
    fate: CandidateFate
    location: Location


@strawberry.type
class StageTiming:
    stage: str
    ms: float


@strawberry.type
class TraceSettings:
    enable_rag: bool
    top_k: int
    threshold: float
    include_citations: bool
    mode: RetrievalMode


@strawberry.type
class TraceTokens:
    prompt: int
    context: int
    completion: int
    answer_reserve: int
    context_window: int
    tokenizer: str
    exact: bool = strawberry.field(description="False when counts are an estimate (no tokenizer available).")


@strawberry.type
class TraceBudget:
    chunks_over_budget: list[int] = strawberry.field(description="Source numbers cut to fit the context window.")
    history_dropped: int


@strawberry.type
class TraceCitations:
    valid: int
    invalid_removed: int
    attributed: bool


@strawberry.type(description="What the answer guard found in a generated answer.")
class TraceGuard:
    decision: GuardDecision
    reasons: list[str] = strawberry.field(description="Each problem found, in words (empty when it passed).")
    unsupported_sentences: int = strawberry.field(description="Sentences no source supports.")
    echo_removed: int = strawberry.field(description="Pieces of the prompt the model repeated, removed.")
    markers_dropped: int = strawberry.field(description="[n] markers that came from echoed text, removed.")
    stopped_early: bool = strawberry.field(description="Generation was stopped because the answer looped.")
    original: str | None = strawberry.field(description="The model's text, when the stored answer differs from it.")


@strawberry.type(description="How the answer was written.")
class TraceAnswer:
    requested_mode: AnswerMode = strawberry.field(description="The session's setting.")
    mode: AnswerMode = strawberry.field(description="The mode that ran (GENERATIVE or EXTRACTIVE).")
    reason: str = strawberry.field(description="Why that mode ran.")
    guard: TraceGuard | None = strawberry.field(description="The guard's verdict on a generated answer.")
    sentences: int | None = strawberry.field(description="Sentences quoted, for an extractive answer.")


@strawberry.type(description="Everything that shaped an answer.")
class RetrievalTrace:
    query: str
    provider: str
    model: str
    settings: TraceSettings
    effective_mode: RetrievalMode | None
    embedding_space: str | None
    no_context: bool
    degraded: list[str]
    candidates: list[TraceCandidate]
    timings: list[StageTiming]
    tokens: TraceTokens | None
    budget: TraceBudget | None
    citations: TraceCitations | None
    answer: TraceAnswer | None = strawberry.field(description="Answer mode and guard (absent in older traces).")


def _answer(answer: trace_model.TraceAnswer | None) -> TraceAnswer | None:
    if answer is None:
        return None
    guard = answer.guard
    return TraceAnswer(
        requested_mode=answer.requested_mode,
        mode=answer.mode,
        reason=answer.reason,
        guard=TraceGuard(
            decision=guard.decision,
            reasons=list(guard.reasons),
            unsupported_sentences=guard.unsupported_sentences,
            echo_removed=guard.echo_removed,
            markers_dropped=guard.markers_dropped,
            stopped_early=guard.stopped_early,
            original=guard.original,
        )
        if guard is not None
        else None,
        sentences=answer.sentences,
    )


def _candidate(c: trace_model.TraceCandidate) -> TraceCandidate:
    return TraceCandidate(
        chunk_id=strawberry.ID(str(c.chunk_id)),
        document_id=strawberry.ID(str(c.document_id)),
        document_name=c.document_name,
        score=c.score,
        vector_rank=c.vector_rank,
        keyword_rank=c.keyword_rank,
        fused_rank=c.fused_rank,
        fused_score=c.fused_score,
        fate=c.fate,
        location=c.location,
    )


def trace_of(trace: trace_model.RetrievalTrace) -> RetrievalTrace:
    settings, tokens, budget, cites = trace.settings, trace.tokens, trace.budget, trace.citations
    return RetrievalTrace(
        query=trace.query,
        provider=trace.provider,
        model=trace.model,
        settings=TraceSettings(**settings.model_dump()),
        effective_mode=trace.effective_mode,
        embedding_space=trace.embedding_space,
        no_context=trace.no_context,
        degraded=list(trace.degraded),
        candidates=[_candidate(c) for c in trace.candidates],
        timings=[StageTiming(stage=k, ms=v) for k, v in trace.timings_ms.items()],
        tokens=TraceTokens(
            prompt=tokens.prompt,
            context=tokens.context,
            completion=tokens.completion,
            answer_reserve=tokens.answer_reserve,
            context_window=tokens.context_window,
            tokenizer=tokens.tokenizer,
            exact=tokens.exact,
        )
        if tokens is not None
        and tokens.context is not None
        and tokens.answer_reserve is not None
        and tokens.context_window is not None
        and tokens.tokenizer is not None
        and tokens.exact is not None
        else None,
        budget=TraceBudget(chunks_over_budget=list(budget.chunks_over_budget), history_dropped=budget.history_dropped)
        if budget is not None
        else None,
        citations=TraceCitations(valid=cites.valid, invalid_removed=cites.invalid_removed, attributed=cites.attributed)
        if cites is not None
        else None,
        answer=_answer(trace.answer),
    )


def trace_from_json(data: object) -> RetrievalTrace | None:
    """A stored trace as GraphQL; None when it is of an unknown version or corrupt (logged)."""
    trace = trace_model.parse(data)
    return trace_of(trace) if trace is not None else None
