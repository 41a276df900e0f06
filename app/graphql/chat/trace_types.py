"""The retrieval trace as GraphQL types (stored as JSON with the message; see services/chat/trace.py)."""

from __future__ import annotations

import strawberry

from app.graphql.enums import AnswerMode, CandidateFate, Fusion, GuardDecision, RetrievalMode, Stage
from app.graphql.search.trace_types import TraceSearch, search_of
from app.graphql.tools.call_types import TraceTools
from app.rag.search.candidates import Location
from app.rag.search.degradation import Degradation
from app.services.chat import trace_model


def _describe(cls: type, **descriptions: str) -> None:
    """Describe each field of a class registered in place (a dataclass has no room for them)."""
    fields = {f.python_name: f for f in cls.__strawberry_definition__.fields}  # type: ignore[attr-defined]
    if set(fields) != set(descriptions):
        raise ValueError(f"{cls.__name__}: describe exactly {sorted(fields)}")
    for name, text in descriptions.items():
        fields[name].description = text


# Retrieval's value types, exposed as they are: strawberry.type registers a class in place (it stays a
# frozen dataclass), so search hits, chat sources, citations and the trace hand theirs over unchanged.
strawberry.type(
    Location,
    description="Where a chunk sits in its document. Offsets and lines count in the document's text (for HTML "
    "and PDF, the extracted text).",
)
_describe(
    Location,
    char_start="First character, 0-based.",
    char_end="One past the last character.",
    line_start="First line, 1-based.",
    line_end="Last line, inclusive.",
    page="The PDF page it starts on, 1-based; null for documents without pages.",
    heading_path='The headings it sits under, outermost first, joined by " > " (empty above the first heading).',
)
strawberry.type(Degradation, description="Something that went wrong without stopping the search or answer.")
_describe(
    Degradation,
    reason="What failed.",
    message="What failed, in words, with the underlying error (for an operator; not stable).",
)


SCORE = (
    "Cosine similarity to the question, 0-1 (higher is closer; the threshold's scale). Null only when there is "
    "none: the stored vectors could not be read and keyword search alone found the chunk (see `degraded`)."
)
VECTOR_RANK = "Its rank by vector similarity (1 = closest); null when vector search did not find it or did not run."
KEYWORD_RANK = "Its rank by keyword search (1 = best); null when keyword search did not find it or did not run."


@strawberry.type(description="A chunk retrieval considered, and what became of it.")
class TraceCandidate:
    chunk_id: strawberry.ID = strawberry.field(description="The chunk (it may have been deleted or re-ingested since).")
    document_id: strawberry.ID = strawberry.field(description="Its document.")
    document_name: str = strawberry.field(description="Its document's name at the time.")
    score: float | None = strawberry.field(description=SCORE)
    vector_rank: int | None = strawberry.field(description=VECTOR_RANK)
    keyword_rank: int | None = strawberry.field(description=KEYWORD_RANK)
    fused_rank: int = strawberry.field(
        description="Its place in the final order, 1-based: by fused score in HYBRID mode, else by the one ranking "
        "that ran."
    )
    fused_score: float = strawberry.field(
        description="Its fused score, by the trace's `fusion`: CONVEX, alpha x normalised cosine + (1 - alpha) x "
        "normalised BM25 (0-1); RRF, the sum of weight / (k + rank) over the rankings that found it (0 when none "
        "did). Only comparable within one search."
    )
    fate: CandidateFate = strawberry.field(description="What the settings did with it.")
    location: Location = strawberry.field(description="Where it sits in its document.")
    rerank_score: float | None = strawberry.field(
        default=None,
        description="The reranker's score (its own scale, only comparable within one question); null when no "
        "reranker scored it. Reranked candidates are ordered by this blended with their fused rank.",
    )


@strawberry.type(description="The ranking stages a turn ran: multi-query expansion and reranking.")
class TraceRanking:
    expansions: list[str] = strawberry.field(description="Alternative phrasings searched beside the question.")
    expansion_failed: str | None = strawberry.field(
        description="Why expansion, though on, searched the question alone; null when it worked or was off."
    )
    reranker: str | None = strawberry.field(
        description='The reranker that ran ("http:MODEL" or "judge:PROVIDER/MODEL"); null when none did.'
    )
    reranked: int = strawberry.field(description="How many of the first candidates it scored.")
    rerank_failed: str | None = strawberry.field(description="Why the fused order was kept; null when it was not.")


@strawberry.type(description="How long one stage took.")
class StageTiming:
    stage: Stage = strawberry.field(description="Which stage.")
    ms: float = strawberry.field(description="Milliseconds, wall time (3 decimals).")


@strawberry.type(description="The settings the turn ran with, as they were then.")
class TraceSettings:
    enable_rag: bool = strawberry.field(description="Retrieval was on.")
    top_k: int = strawberry.field(description="At most this many sources were kept.")
    threshold: float = strawberry.field(description="The cosine similarity a source needed, 0-1.")
    include_citations: bool = strawberry.field(description="The model was asked to cite with [n] markers.")
    mode: RetrievalMode = strawberry.field(description="The server's retrieval mode.")


@strawberry.type(description="Token counts of the turn.")
class TraceTokens:
    prompt: int = strawberry.field(description="Tokens sent to the model (system prompt, sources, history, question).")
    context: int = strawberry.field(description="Of those, the sources' tokens.")
    completion: int = strawberry.field(description="Tokens the model generated.")
    answer_reserve: int = strawberry.field(description="Tokens kept free in the context window for the answer.")
    context_window: int = strawberry.field(description="The model's context window, in tokens.")
    tokenizer: str = strawberry.field(description="The tokenizer the counts come from.")
    exact: bool = strawberry.field(description="False when counts are an estimate (no tokenizer available).")


@strawberry.type(description="What had to be left out to fit the model's context window.")
class TraceBudget:
    chunks_over_budget: list[int] = strawberry.field(description="Source numbers cut to fit the context window.")
    history_dropped: int = strawberry.field(description="Earlier messages of the chat left out of the prompt.")


@strawberry.type(description="How the answer's citations were checked.")
class TraceCitations:
    valid: int = strawberry.field(description="Citations kept.")
    invalid_removed: int = strawberry.field(description="[n] markers naming no source, removed from the answer.")
    attributed: bool = strawberry.field(
        description="The model cited nothing, so ragchat attributed sentences to sources by their embeddings."
    )


@strawberry.type(description="What the answer guard found in a generated answer.")
class TraceGuard:
    decision: GuardDecision = strawberry.field(description="What the guard decided.")
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
    guard: TraceGuard | None = strawberry.field(
        description="The guard's verdict on a generated answer; null for an extractive one."
    )
    sentences: int | None = strawberry.field(
        description="Sentences quoted, for an extractive answer; null for a generated one."
    )


@strawberry.type(description="Everything that shaped an answer.")
class RetrievalTrace:
    query: str = strawberry.field(description="The question as retrieval saw it (cleaned).")
    provider: str = strawberry.field(description="The chat model's provider.")
    model: str = strawberry.field(description="The chat model.")
    settings: TraceSettings = strawberry.field(description="The session's settings for this turn.")
    effective_mode: RetrievalMode | None = strawberry.field(
        description="The retrieval mode that ran: settings.mode unless search degraded; null when retrieval was "
        "off or failed."
    )
    fusion: Fusion | None = strawberry.field(
        default=None,
        description="How the rankings were fused; null when one ranking ran alone, retrieval was off, or the trace "
        "predates the field.",
    )
    embedding_space: str | None = strawberry.field(
        description='The embedding space searched ("provider/model@dimensions"); null when nothing was searched.'
    )
    no_context: bool = strawberry.field(description="Retrieval was on and no source passed the threshold.")
    degraded: list[Degradation] = strawberry.field(
        description="What went wrong without stopping the answer (empty when all went well)."
    )
    candidates: list[TraceCandidate] = strawberry.field(description="Every chunk retrieval considered, in fused order.")
    timings: list[StageTiming] = strawberry.field(description="Each stage that ran, in the order it ran.")
    tokens: TraceTokens | None = strawberry.field(
        description="Token counts; null for an extractive answer or one that failed before its prompt was built."
    )
    budget: TraceBudget | None = strawberry.field(
        description="What the context window left out; null when no prompt was built."
    )
    citations: TraceCitations | None = strawberry.field(
        description="How citations were checked; null when the answer did not get that far."
    )
    answer: TraceAnswer | None = strawberry.field(description="Answer mode and guard (absent in older traces).")
    search: TraceSearch | None = strawberry.field(
        description="The query searched, the rewrite and every retrieval pass (absent in older traces and when "
        "retrieval was off or failed)."
    )
    ranking: TraceRanking | None = strawberry.field(
        default=None, description="Expansion and reranking; null when neither was on (and in older traces)."
    )
    tools: TraceTools | None = strawberry.field(
        default=None,
        description="Tool selection's stages and the model's tool calls; null when the session allows no tools.",
    )


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
        rerank_score=c.rerank_score,
    )


def tokens_of(tokens: trace_model.TraceTokens | None) -> TraceTokens | None:
    """A stored trace's token counts; None unless it has them all (older traces may not)."""
    if (
        tokens is None
        or tokens.context is None
        or tokens.answer_reserve is None
        or tokens.context_window is None
        or tokens.tokenizer is None
        or tokens.exact is None
    ):
        return None
    return TraceTokens(
        prompt=tokens.prompt,
        context=tokens.context,
        completion=tokens.completion,
        answer_reserve=tokens.answer_reserve,
        context_window=tokens.context_window,
        tokenizer=tokens.tokenizer,
        exact=tokens.exact,
    )


def trace_of(trace: trace_model.RetrievalTrace) -> RetrievalTrace:
    settings, tokens, budget, cites = trace.settings, trace.tokens, trace.budget, trace.citations
    return RetrievalTrace(
        query=trace.query,
        provider=trace.provider,
        model=trace.model,
        settings=TraceSettings(**settings.model_dump()),
        effective_mode=trace.effective_mode,
        fusion=trace.fusion,
        embedding_space=trace.embedding_space,
        no_context=trace.no_context,
        degraded=list(trace.degraded),
        candidates=[_candidate(c) for c in trace.candidates],
        ranking=TraceRanking(**trace.ranking.model_dump()) if trace.ranking is not None else None,
        timings=[StageTiming(stage=k, ms=v) for k, v in trace.timings_ms.items()],
        tokens=tokens_of(tokens),
        budget=TraceBudget(chunks_over_budget=list(budget.chunks_over_budget), history_dropped=budget.history_dropped)
        if budget is not None
        else None,
        citations=TraceCitations(valid=cites.valid, invalid_removed=cites.invalid_removed, attributed=cites.attributed)
        if cites is not None
        else None,
        answer=_answer(trace.answer),
        search=search_of(trace.search),
        tools=TraceTools.of(trace.tools) if trace.tools is not None else None,
    )
