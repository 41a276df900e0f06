"""The retrieval trace as GraphQL types (stored as JSON with the message; see services/chat_trace.py)."""

from __future__ import annotations

import enum
from typing import Any

import strawberry

from app.rag.retrieval import Location as RagLocation


@strawberry.enum
class CandidateFate(enum.Enum):
    KEPT = "kept"
    BELOW_THRESHOLD = "below_threshold"
    BEYOND_TOP_K = "beyond_top_k"
    OVER_BUDGET = "over_budget"


@strawberry.enum
class RetrievalMode(enum.Enum):
    VECTOR = "vector"
    KEYWORD = "keyword"
    HYBRID = "hybrid"


@strawberry.type(description="Where a chunk sits in its document.")
class Location:
    char_start: int
    char_end: int
    line_start: int
    line_end: int
    page: int | None
    heading_path: str

    @classmethod
    def of(cls, loc: RagLocation | dict[str, Any]) -> Location:
        data = vars(loc) if isinstance(loc, RagLocation) else loc
        return cls(
            char_start=data["char_start"],
            char_end=data["char_end"],
            line_start=data["line_start"],
            line_end=data["line_end"],
            page=data["page"],
            heading_path=data["heading_path"],
        )


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


def _candidate(c: dict[str, Any]) -> TraceCandidate:
    return TraceCandidate(
        chunk_id=strawberry.ID(str(c["chunkId"])),
        document_id=strawberry.ID(str(c["documentId"])),
        document_name=c["documentName"],
        score=c["score"],
        vector_rank=c["vectorRank"],
        keyword_rank=c["keywordRank"],
        fused_rank=c["fusedRank"],
        fused_score=c["fusedScore"],
        fate=CandidateFate(c["fate"]),
        location=Location.of(c["location"]),
    )


def trace_from_json(data: dict[str, Any]) -> RetrievalTrace:
    settings = data["settings"]
    tokens = data.get("tokens")
    budget = data.get("budget")
    cites = data.get("citations")
    return RetrievalTrace(
        query=data["query"],
        provider=data["provider"],
        model=data["model"],
        settings=TraceSettings(
            enable_rag=settings["enableRag"],
            top_k=settings["topK"],
            threshold=settings["threshold"],
            include_citations=settings["includeCitations"],
            mode=RetrievalMode(settings["mode"]),
        ),
        effective_mode=RetrievalMode(data["effectiveMode"]) if data.get("effectiveMode") else None,
        embedding_space=data.get("embeddingSpace"),
        no_context=bool(data.get("noContext")),
        degraded=list(data.get("degraded", [])),
        candidates=[_candidate(c) for c in data.get("candidates", [])],
        timings=[StageTiming(stage=k, ms=v) for k, v in data.get("timingsMs", {}).items()],
        tokens=TraceTokens(
            prompt=tokens["prompt"],
            context=tokens["context"],
            completion=tokens["completion"],
            answer_reserve=tokens["answerReserve"],
            context_window=tokens["contextWindow"],
            tokenizer=tokens["tokenizer"],
            exact=tokens["exact"],
        )
        if tokens and "contextWindow" in tokens
        else None,
        budget=TraceBudget(chunks_over_budget=budget["chunksOverBudget"], history_dropped=budget["historyDropped"])
        if budget
        else None,
        citations=TraceCitations(
            valid=cites["valid"], invalid_removed=cites["invalidRemoved"], attributed=cites["attributed"]
        )
        if cites
        else None,
    )
