"""The retrieval trace as one typed model: written by services/chat/trace.py, stored as JSON with
the message (camelCase keys, the aliases below), read back through ``parse`` by the GraphQL types,
the CLI and the answer bench.

Versions: 1 is the only shape so far; its ``answer`` and ``search`` entries came later, so older
version-1 traces have none (they default to None), and its ``degraded`` entries were plain messages until
they got a reason (read by app.rag.search.degradation.Degradation.of). A trace of an unknown version or one
that does not validate is logged and read as None: a corrupt row costs its explanation, never the message.
"""

from __future__ import annotations

import logging
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError
from pydantic.alias_generators import to_camel

from app.db.enums import ToolCallStatus
from app.rag.answer.guard import Decision
from app.rag.answer.mode import AnswerMode
from app.rag.search.candidates import CandidateFate, Location
from app.rag.search.conversation_settings import Quality, RewriteMode
from app.rag.search.degradation import Degradation
from app.rag.search.fusion import Fusion
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.search.rewrite import RewriteOutcome
from app.rag.search.stages import Stage
from app.rag.search.widen import Decision as PassDecision
from app.rag.search.widen import Judge
from app.rag.session_settings import RagSettings

log = logging.getLogger(__name__)

TRACE_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})

# Stored as {reason, message}; a trace from before the reasons has the message alone.
StoredDegradation = Annotated[Degradation, BeforeValidator(Degradation.of)]


class _Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class TraceSettings(_Camel):
    """The session's RAG settings a turn ran with, but its answer mode (``answer`` records that),
    and the server's retrieval mode. The stored shape is fixed: a RagSettings field added later is
    not in it unless a new trace version says so."""

    enable_rag: bool
    top_k: int
    threshold: float
    include_citations: bool
    mode: RetrievalMode

    @classmethod
    def of(cls, rag: RagSettings, mode: RetrievalMode) -> TraceSettings:
        return cls(**rag.model_dump(include=set(cls.model_fields)), mode=mode)


class TraceCandidate(_Camel):
    chunk_id: int
    document_id: int
    document_name: str
    score: float | None
    vector_rank: int | None
    keyword_rank: int | None
    fused_rank: int
    fused_score: float
    fate: CandidateFate
    location: Location  # stored with its snake_case field names
    rerank_score: float | None = None  # absent in traces from before reranking


class TraceRanking(_Camel):
    """The ranking stages a turn ran (app/services/chat/ranking.py); absent in older traces."""

    expansions: list[str] = Field(default_factory=list)  # the alternative phrasings searched
    expansion_failed: str | None = None  # why expansion, though on, searched the question alone
    reranker: str | None = None  # the reranker that ran, e.g. "http:bge-reranker-v2-m3"
    reranked: int = 0  # candidates it scored
    rerank_failed: str | None = None  # why the fused order was kept


class TraceTokens(_Camel):
    """Token counts; the budget's fields are None when generation ran without a budget report."""

    prompt: int = 0
    completion: int = 0
    context: int | None = None
    answer_reserve: int | None = None
    context_window: int | None = None
    tokenizer: str | None = None
    exact: bool | None = None

    @property
    def budgeted(self) -> bool:
        return self.context_window is not None


class TraceBudget(_Camel):
    chunks_over_budget: list[int]
    history_dropped: int


class TraceCitations(_Camel):
    valid: int
    invalid_removed: int
    attributed: bool


class TraceGuard(_Camel):
    decision: Decision
    reasons: list[str]
    codes: list[str] = Field(default_factory=list)
    unsupported_sentences: int
    echo_removed: int
    markers_dropped: int
    stopped_early: bool
    original: str | None = None


class TraceAnswer(_Camel):
    """How the answer was written (built by app.services.chat.answer.trace_entry)."""

    requested_mode: AnswerMode
    mode: AnswerMode
    reason: str
    sentences: int | None = None
    guard: TraceGuard | None = None


class TraceRewrite(_Camel):
    outcome: RewriteOutcome
    query: str | None
    reason: str
    ms: float = 0.0


class TracePass(_Camel):
    """One retrieval pass of evaluate-and-widen."""

    number: int
    budget: int
    queries: list[str]
    candidates: int
    threshold: float
    kept: int
    best_score: float | None
    adequate: bool
    value: float
    judge: Judge
    reason: str
    decision: PassDecision
    ms: float
    cache_hit: bool | None = None


class TraceCache(_Camel):
    embedding_hits: int = 0
    embedding_misses: int = 0
    result_hits: int = 0
    result_misses: int = 0


class TraceSearch(_Camel):
    """What the turn searched and how (issue 15): absent in traces from before it."""

    quality: Quality
    rewrite_mode: RewriteMode
    searched: str  # the query searched: the message, or its rewrite
    earlier: list[str]  # the earlier user turns the history-aware query took into account
    rewrite: TraceRewrite
    passes: list[TracePass] = Field(default_factory=list)
    cache: TraceCache = Field(default_factory=TraceCache)


class TraceToolCandidate(_Camel):
    name: str
    score: float | None = None


class TraceSelectedTool(_Camel):
    name: str
    score: float | None = None
    reason: str  # app.services.tools.selection.Reason


class TraceToolCall(_Camel):
    call_id: str
    name: str
    arguments: str
    status: ToolCallStatus
    error: str | None = None
    result_chars: int = 0
    truncated: bool = False
    ms: float = 0.0


class TraceTools(_Camel):
    """Tools in the turn (issue 19): selection's three stages and every call; absent without tools."""

    groups: list[str]
    candidates: list[TraceToolCandidate] = Field(default_factory=list)
    selected: list[TraceSelectedTool] = Field(default_factory=list)
    top_k: int
    min_score: float | None = None
    degraded: str | None = None
    calls: list[TraceToolCall] = Field(default_factory=list)
    rounds: int = 0
    stopped: str | None = None


class RetrievalTrace(_Camel):
    version: int = TRACE_VERSION
    query: str
    provider: str
    model: str
    settings: TraceSettings
    no_context: bool = False
    history_turns: int = 0
    embedding_space: str | None = None
    effective_mode: RetrievalMode | None = None
    fusion: Fusion | None = None  # absent in traces from before convex fusion
    tokens: TraceTokens | None = None
    budget: TraceBudget | None = None
    source_chunk_ids: list[int] | None = None
    answer: TraceAnswer | None = None
    search: TraceSearch | None = None
    citations: TraceCitations | None = None
    ranking: TraceRanking | None = None
    tools: TraceTools | None = None
    degraded: list[StoredDegradation] = Field(default_factory=list)
    timings_ms: dict[Stage, float] = Field(default_factory=dict)
    candidates: list[TraceCandidate] = Field(default_factory=list)

    def stored(self) -> dict[str, Any]:
        """The JSON form kept in chat_messages.trace."""
        return self.model_dump(mode="json", by_alias=True)


def parse(raw: object) -> RetrievalTrace | None:
    """A stored trace, validated; None (and a warning) for a missing, unknown-version or corrupt one."""
    if not raw:
        return None
    version = raw.get("version") if isinstance(raw, dict) else None
    if version not in SUPPORTED_VERSIONS:
        log.warning("stored trace ignored: unsupported version %r", version)
        return None
    try:
        return RetrievalTrace.model_validate(raw)
    except ValidationError as exc:
        log.warning("stored trace ignored: %d validation errors, first: %s", exc.error_count(), exc.errors()[0]["msg"])
        return None
