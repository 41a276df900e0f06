"""The retrieval trace, defined once: what a turn records (services/chat/trace.py writes it), what is
stored as JSON with the message (camelCase keys, read back through ``parse``) and what GraphQL shows
(app/graphql/chat/trace_types.py registers these classes in place). Each class's docstring is its
description in the API and each field's ``api(...)`` its field's; a field marked ``STORED_ONLY`` is
kept in the JSON but not shown. So a new trace field is one line here (and its producer).

Versions: 1 is the only shape so far; its ``answer`` and ``search`` entries came later, so older
version-1 traces have none (they default to None), and its ``degraded`` entries were plain messages until they got a
reason (read by app.rag.search.degradation.Degradation.of). A trace of an unknown version or one that does not validate
is logged and read as None: a corrupt row costs its explanation, never the message.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Annotated, Any, ClassVar

from pydantic import BeforeValidator, ConfigDict, TypeAdapter, ValidationError
from pydantic.alias_generators import to_camel

from app.db.enums import ToolCallStatus
from app.rag.answer.guard import Decision
from app.rag.answer.mode import AnswerMode
from app.rag.search.candidates import CandidateFate, Location
from app.rag.search.conversation import OUTVOTED_MARGIN
from app.rag.search.conversation_settings import Quality, RewriteMode
from app.rag.search.degradation import Degradation
from app.rag.search.document_filter import DocumentFilter
from app.rag.search.fusion import Fusion
from app.rag.search.retrieval import SHORT_QUESTION_WORDS, WORDS_MARGIN
from app.rag.search.retrieval_mode import RetrievalMode
from app.rag.search.rewrite import RewriteOutcome
from app.rag.search.stages import Stage
from app.rag.search.widen import Decision as PassDecision
from app.rag.search.widen import Judge
from app.rag.session_settings import RagSettings
from app.services.tools.selection import Reason

log = logging.getLogger(__name__)

TRACE_VERSION = 1
SUPPORTED_VERSIONS = frozenset({1})

# Stored as {reason, message}; a trace from before the reasons has the message alone.
StoredDegradation = Annotated[Degradation, BeforeValidator(Degradation.of)]


def api(description: str, *, name: str | None = None, read: str | None = None) -> dict[str, Any]:
    """A field's metadata for GraphQL: its description, and when the API shows it otherwise than it is
    stored, its GraphQL name (``name``) or the property the API reads instead (``read``, typed by it)."""
    return {"description": description, "name": name, "read": read}


STORED_ONLY: dict[str, Any] = {"stored_only": True}

# Descriptions other types share with the trace's candidates (search hits, chat sources).
PASSED_ON_WORDS = (
    "It passed the threshold on its words, not its score: nothing of a short question "
    f"({SHORT_QUESTION_WORDS} words at most) "
    "reached the threshold, and this, the keyword ranking's first, holds every word of the question that the "
    f"knowledge base has and scores at most {WORDS_MARGIN:.2f} under the threshold."
)
SCORE = (
    "Cosine similarity to the question, 0-1 (higher is closer; the threshold's scale). Null only when there is "
    "none: the stored vectors could not be read and keyword search alone found the chunk (see `degraded`)."
)
VECTOR_RANK = "Its rank by vector similarity (1 = closest); null when vector search did not find it or did not run."
KEYWORD_RANK = "Its rank by keyword search (1 = best); null when keyword search did not find it or did not run."
TOOL_ARGUMENTS = "The arguments as the model wrote them (JSON text; it may be invalid, which the model is told)."


@dataclass(kw_only=True)
class _Camel:
    # Stored with camelCase keys (pydantic reads this from a plain dataclass too).
    __pydantic_config__: ClassVar[ConfigDict] = ConfigDict(alias_generator=to_camel, populate_by_name=True)


# The session's RAG settings a turn ran with, but its answer mode (``answer`` records that), and the
# server's retrieval mode. The stored shape is fixed: a RagSettings field added later is not in it
# unless a new trace version says so.
@dataclass(kw_only=True)
class TraceSettings(_Camel):
    """The settings the turn ran with, as they were then."""

    enable_rag: bool = field(metadata=api("Retrieval was on."))
    top_k: int = field(metadata=api("At most this many sources were kept."))
    threshold: float = field(metadata=api("The cosine similarity a source needed, 0-1."))
    include_citations: bool = field(metadata=api("The model was asked to cite with [n] markers."))
    mode: RetrievalMode = field(metadata=api("The server's retrieval mode."))

    @classmethod
    def of(cls, rag: RagSettings, mode: RetrievalMode) -> TraceSettings:
        names = {f.name for f in fields(cls)} - {"mode"}
        return cls(**rag.model_dump(include=names), mode=mode)


@dataclass(kw_only=True)
class TraceCandidate(_Camel):
    """A chunk retrieval considered, and what became of it."""

    chunk_id: int = field(metadata=api("The chunk (it may have been deleted or re-ingested since)."))
    document_id: int = field(metadata=api("Its document."))
    document_name: str = field(metadata=api("Its document's name at the time."))
    score: float | None = field(metadata=api(SCORE))
    vector_rank: int | None = field(metadata=api(VECTOR_RANK))
    keyword_rank: int | None = field(metadata=api(KEYWORD_RANK))
    fused_rank: int = field(
        metadata=api(
            "Its place in the final order, 1-based: by fused score in HYBRID mode, else by the one ranking that ran."
        )
    )
    fused_score: float = field(
        metadata=api(
            "Its fused score, by the trace's `fusion`: CONVEX, alpha x normalised cosine + (1 - alpha) x "
            "normalised BM25 (0-1); RRF, the sum of weight / (k + rank) over the rankings that found it (0 when "
            "none did). Only comparable within one search."
        )
    )
    fate: CandidateFate = field(metadata=api("What the settings did with it."))
    location: Location = field(metadata=api("Where it sits in its document."))  # stored with snake_case names
    rerank_score: float | None = field(  # absent in traces from before reranking
        default=None,
        metadata=api(
            "The reranker's score (its own scale, only comparable within one question); null when no reranker "
            "scored it. Reranked candidates are ordered by this blended with their fused rank."
        ),
    )
    passed_on_words: bool = field(  # absent in older traces
        default=False,
        metadata=api(PASSED_ON_WORDS),
    )


# Written by app/services/chat/ranking.py; absent in older traces.
@dataclass(kw_only=True)
class TraceRanking(_Camel):
    """The ranking stages a turn ran: multi-query expansion and reranking."""

    expansions: list[str] = field(
        default_factory=list, metadata=api("Alternative phrasings searched beside the question.")
    )
    expansion_failed: str | None = field(
        default=None,
        metadata=api("Why expansion, though on, searched the question alone; null when it worked or was off."),
    )
    reranker: str | None = field(
        default=None,
        metadata=api('The reranker that ran ("http:MODEL" or "judge:PROVIDER/MODEL"); null when none did.'),
    )
    reranked: int = field(default=0, metadata=api("How many of the first candidates it scored."))
    rerank_failed: str | None = field(default=None, metadata=api("Why the fused order was kept; null when it was not."))


@dataclass(kw_only=True)
class StageTiming:
    """How long one stage took."""

    stage: Stage = field(metadata=api("Which stage."))
    ms: float = field(metadata=api("Milliseconds, wall time (3 decimals)."))


# The budget's fields are None when generation ran without a budget report; the API shows the counts
# only with them (RetrievalTrace.budgeted_tokens), so there they are never null.
@dataclass(kw_only=True)
class TraceTokens(_Camel):
    """Token counts of the turn."""

    prompt: int = field(
        default=0, metadata=api("Tokens sent to the model (system prompt, sources, history, question).")
    )
    context: int | None = field(default=None, metadata=api("Of those, the sources' tokens."))
    completion: int = field(default=0, metadata=api("Tokens the model generated."))
    answer_reserve: int | None = field(
        default=None, metadata=api("Tokens kept free in the context window for the answer.")
    )
    context_window: int | None = field(default=None, metadata=api("The model's context window, in tokens."))
    tokenizer: str | None = field(default=None, metadata=api("The tokenizer the counts come from."))
    exact: bool | None = field(
        default=None, metadata=api("False when counts are an estimate (no tokenizer available).")
    )

    @property
    def budgeted(self) -> bool:
        return (
            self.context is not None
            and self.answer_reserve is not None
            and self.context_window is not None
            and self.tokenizer is not None
            and self.exact is not None
        )


@dataclass(kw_only=True)
class TraceBudget(_Camel):
    """What had to be left out to fit the model's context window."""

    chunks_over_budget: list[int] = field(metadata=api("Source numbers cut to fit the context window."))
    history_dropped: int = field(metadata=api("Earlier messages of the chat left out of the prompt."))


@dataclass(kw_only=True)
class TraceCitations(_Camel):
    """How the answer's citations were checked."""

    valid: int = field(metadata=api("Citations kept."))
    invalid_removed: int = field(metadata=api("[n] markers naming no source, removed from the answer."))
    attributed: bool = field(
        metadata=api("The model cited nothing, so ragchat attributed sentences to sources by their embeddings.")
    )


@dataclass(kw_only=True)
class TraceGuard(_Camel):
    """What the answer guard found in a generated answer."""

    decision: Decision = field(metadata=api("What the guard decided."))
    reasons: list[str] = field(metadata=api("Each problem found, in words (empty when it passed)."))
    codes: list[str] = field(default_factory=list, metadata=STORED_ONLY)  # each reason's code
    unsupported_sentences: int = field(metadata=api("Sentences no source supports."))
    echo_removed: int = field(metadata=api("Pieces of the prompt the model repeated, removed."))
    markers_dropped: int = field(metadata=api("[n] markers that came from echoed text, removed."))
    stopped_early: bool = field(metadata=api("Generation was stopped because the answer looped."))
    original: str | None = field(
        default=None, metadata=api("The model's text, when the stored answer differs from it.")
    )


# Built by app.services.chat.answer.trace_entry.
@dataclass(kw_only=True)
class TraceSentence(_Camel):
    """A candidate sentence of an extractive answer."""

    source: int = field(metadata=api("The [n] of the source it is from."))
    text: str = field(metadata=api("The sentence as it would read (cut at 200 characters)."))
    score: float = field(
        metadata=api("Its score (cosine, shared words, rank and what the question asks for, blended).")
    )
    quoted: bool = field(metadata=api("Whether the answer quotes it."))
    reason: str = field(metadata=api("Why it was or was not quoted, in words: the rule that decided."))


@dataclass(kw_only=True)
class TraceAnswer(_Camel):
    """How the answer was written."""

    requested_mode: AnswerMode = field(metadata=api("The session's setting."))
    mode: AnswerMode = field(metadata=api("The mode that ran (GENERATIVE or EXTRACTIVE)."))
    reason: str = field(metadata=api("Why that mode ran."))
    guard: TraceGuard | None = field(
        default=None, metadata=api("The guard's verdict on a generated answer; null for an extractive one.")
    )
    sentences: int | None = field(
        default=None, metadata=api("Sentences quoted, for an extractive answer; null for a generated one.")
    )
    no_answer: bool = field(
        default=False,
        metadata=api(
            "An extractive answer found no sentence in the kept sources that answers the question, and says "
            "so (sources were kept: that is not noContext)."
        ),
    )
    bar: float | None = field(
        default=None,
        metadata=api("The score a sentence needed to be quoted, for an extractive answer; null for a generated one."),
    )
    considered: list[TraceSentence] = field(
        default_factory=list,
        metadata=api(
            "The best candidate sentences of an extractive answer, best first, and why each was or was not quoted."
        ),
    )


@dataclass(kw_only=True)
class TraceRewrite(_Camel):
    """The chat model's rewrite of a follow-up into a standalone query."""

    outcome: RewriteOutcome = field(metadata=api("What became of it."))
    query: str | None = field(metadata=api("The rewritten query; null unless it was used."))
    reason: str = field(metadata=api("Why it went that way, in words."))
    ms: float = field(default=0.0, metadata=api("Milliseconds the rewrite took (0 when skipped)."))


@dataclass(kw_only=True)
class TracePass(_Camel):
    """One retrieval pass of evaluate-and-widen."""

    number: int = field(metadata=api("Which pass, from 1."))
    budget: int = field(metadata=api("The most passes the session's quality allowed."))
    queries: list[str] = field(
        metadata=api("The query searched, then the earlier user turns it took into account (and any expansions).")
    )
    candidates: int = field(metadata=api("Candidates taken from each ranking."))
    threshold: float = field(metadata=api("The threshold this pass applied (lower on a widened pass)."))
    kept: int = field(metadata=api("Sources kept."))
    best_score: float | None = field(metadata=api("The best kept source's score; null when none."))
    adequate: bool = field(metadata=api("The pass was judged good enough."))
    value: float = field(metadata=api("The heuristic's 0-1 value of the pass (passes are compared by it)."))
    judge: Judge = field(metadata=api("Who judged it."))
    reason: str = field(metadata=api("The judgement, in words."))
    decision: PassDecision = field(metadata=api("What followed."))
    ms: float = field(metadata=api("Milliseconds the pass took, judgement included."))
    cache_hit: bool | None = field(
        default=None,
        metadata=api("Its result came from the retrieval cache; null when the cache was not consulted."),
    )


@dataclass(kw_only=True)
class TraceCache(_Camel):
    """What the caches gave the turn's search."""

    embedding_hits: int = field(default=0, metadata=api("Query embeddings found in the cache."))
    embedding_misses: int = field(default=0, metadata=api("Query embeddings computed."))
    result_hits: int = field(default=0, metadata=api("Passes whose result came from the retrieval cache."))
    result_misses: int = field(default=0, metadata=api("Passes that searched the knowledge base."))


@dataclass(kw_only=True)
class TraceDocumentFilter(_Camel):
    """The documents the turn's search was narrowed to (the session's document filter)."""

    tags_any: list[str] = field(default_factory=list, metadata=api("Documents with at least one of these tags."))
    tags_all: list[str] = field(default_factory=list, metadata=api("Documents with every one of these tags."))
    path_prefix: str | None = field(default=None, metadata=api("Documents whose path starts with this."))
    kinds: list[str] = field(default_factory=list, metadata=api("Documents of these file types."))
    date_from: str | None = field(default=None, metadata=api("Documents dated at or after this (ISO 8601, UTC)."))
    date_to: str | None = field(default=None, metadata=api("Documents dated at or before this (ISO 8601, UTC)."))

    @classmethod
    def of(cls, only: DocumentFilter | None) -> TraceDocumentFilter | None:
        if only is None:
            return None
        return cls(
            tags_any=list(only.tags_any),
            tags_all=list(only.tags_all),
            path_prefix=only.path_prefix,
            kinds=list(only.kinds),
            date_from=only.date_from.isoformat() if only.date_from else None,
            date_to=only.date_to.isoformat() if only.date_to else None,
        )


# Written by app/services/chat/turn_search.py; absent in traces from before it.
@dataclass(kw_only=True)
class TraceSearch(_Camel):
    """What the turn searched, and how hard."""

    quality: Quality = field(metadata=api("The session's quality for this turn."))
    rewrite_mode: RewriteMode = field(metadata=api("The session's rewrite setting for this turn."))
    searched: str = field(metadata=api("The query searched: the message, or its rewrite."))
    earlier: list[str] = field(
        metadata=api("The earlier user turns the history-aware query took into account, oldest first.")
    )
    rewrite: TraceRewrite = field(metadata=api("The rewrite, or why there was none."))
    standalone_score: float | None = field(
        default=None,
        metadata=api(
            "The best passage's score for the message searched alone, when it followed earlier turns, was not "
            "rewritten and did not read as a continuation; at or above the server's standalone score the "
            "message stood on its own (a new topic) and was searched without the earlier turns (then "
            "`earlier` is empty), unless it has a pronoun and the earlier turns raised its best score "
            "(`historyScore`) by the server's follow-up gain. Under it, the first pass searched the message "
            "both with and without the earlier turns (`ownWords`)."
        ),
    )
    own_words: float | None = field(
        default=None,
        metadata=api(
            "When the message scored under the standalone score: the share of its own words (each weighted "
            "by how rare it is in the knowledge base) that the first passage it found alone holds. When that "
            f"is at least {OUTVOTED_MARGIN:.2f} more than `historyOwnWords`, the earlier turns outvoted the "
            "message's own words and it was searched alone (then `earlier` is empty)."
        ),
    )
    history_own_words: float | None = field(
        default=None,
        metadata=api(
            "The same share (`ownWords`) in the first passage found with the earlier turns (0 when none was)."
        ),
    )
    history_score: float | None = field(
        default=None,
        metadata=api(
            "The best passage's score for the message searched with the earlier turns, when it was searched "
            "alone, found a passage at or above the standalone score and has a pronoun that may point back: "
            "at least the server's follow-up gain above `standaloneScore`, it was a follow-up after all."
        ),
    )
    passes: list[TracePass] = field(default_factory=list, metadata=api("Every retrieval pass, in order."))
    cache: TraceCache = field(default_factory=TraceCache, metadata=api("Cache hits and misses."))
    # Absent in traces from before document filters: null, as for a session without one.
    document_filter: TraceDocumentFilter | None = field(
        default=None, metadata=api("The documents the search was narrowed to; null: every document.")
    )


@dataclass(kw_only=True)
class TraceToolCandidate(_Camel):
    """A tool selection considered for the message, with its similarity."""

    name: str = field(metadata=api("The tool's name."))
    score: float | None = field(default=None, metadata=api("Cosine similarity to the message; null when degraded."))


@dataclass(kw_only=True)
class TraceSelectedTool(_Camel):
    """A tool the model was offered, and why."""

    name: str = field(metadata=api("The tool's name."))
    score: float | None = field(default=None, metadata=api("Cosine similarity to the message; null when degraded."))
    reason: Reason = field(metadata=api("RANKED, CORE or ALL."))


@dataclass(kw_only=True)
class TraceToolCall(_Camel):
    """One tool call of the turn, as the trace keeps it."""

    call_id: str = field(metadata=api("The model's id for the call."))
    name: str = field(metadata=api("The tool's name as the model called it."))
    arguments: str = field(metadata=api(TOOL_ARGUMENTS))
    status: ToolCallStatus = field(metadata=api("EXECUTED, FAILED or PREVIEW (as the turn left it)."))
    error: str | None = field(default=None, metadata=api("Why it failed; null when it did not."))
    result_chars: int = field(
        default=0, metadata=api("Its result's size in characters, before the cap.", name="resultSize")
    )
    truncated: bool = field(default=False, metadata=api("The model read it cut to the cap."))
    ms: float = field(default=0.0, metadata=api("How long it took, in milliseconds."))


# Absent without tools.
@dataclass(kw_only=True)
class TraceTools(_Camel):
    """Tools in this turn: selection's three stages (allowed groups, similarity ranking, core tools) and
    every call the model made."""

    groups: list[str] = field(metadata=api("Stage 1: the session's allowed tool groups."))
    candidates: list[TraceToolCandidate] = field(
        default_factory=list, metadata=api("Stage 2: every allowed tool by similarity to the message, best first.")
    )
    selected: list[TraceSelectedTool] = field(
        default_factory=list,
        metadata=api("What the model was offered: the ranked ones (top K), then core ones (stage 3)."),
    )
    top_k: int = field(metadata=api("Ranked tools kept at most."))
    min_score: float | None = field(default=None, metadata=api("The similarity a ranked tool needed; null: none."))
    degraded: str | None = field(default=None, metadata=api("Why every allowed tool was offered instead; else null."))
    calls: list[TraceToolCall] = field(default_factory=list, metadata=api("The calls, in the order made."))
    rounds: int = field(default=0, metadata=api("The model's replies in the loop (the last one answered)."))
    stopped: str | None = field(
        default=None,
        metadata=api("Why tools were withdrawn before the model was done (a limit); null when it finished freely."),
    )


@dataclass(kw_only=True)
class RetrievalTrace(_Camel):
    """Everything that shaped an answer."""

    version: int = field(default=TRACE_VERSION, metadata=STORED_ONLY)
    query: str = field(metadata=api("The question as retrieval saw it (cleaned)."))
    provider: str = field(metadata=api("The chat model's provider."))
    model: str = field(metadata=api("The chat model."))
    settings: TraceSettings = field(metadata=api("The session's settings for this turn."))
    effective_mode: RetrievalMode | None = field(
        default=None,
        metadata=api(
            "The retrieval mode that ran: settings.mode unless search degraded; null when retrieval was off or failed."
        ),
    )
    fusion: Fusion | None = field(  # absent in traces from before convex fusion
        default=None,
        metadata=api(
            "How the rankings were fused; null when one ranking ran alone, retrieval was off, or the trace "
            "predates the field."
        ),
    )
    embedding_space: str | None = field(
        default=None,
        metadata=api('The embedding space searched ("provider/model@dimensions"); null when nothing was searched.'),
    )
    no_context: bool = field(default=False, metadata=api("Retrieval was on and no source passed the threshold."))
    history_turns: int = field(default=0, metadata=STORED_ONLY)
    # The OpenTelemetry trace of the turn when tracing is on (app/ops/tracing.py): joins the spans and logs.
    trace_id: str | None = field(default=None, metadata=STORED_ONLY)
    degraded: list[StoredDegradation] = field(
        default_factory=list,
        metadata=api("What went wrong without stopping the answer (empty when all went well)."),
    )
    candidates: list[TraceCandidate] = field(
        default_factory=list, metadata=api("Every chunk retrieval considered, in fused order.")
    )
    timings_ms: dict[Stage, float] = field(
        default_factory=dict, metadata=api("Each stage that ran, in the order it ran.", name="timings", read="timings")
    )
    tokens: TraceTokens | None = field(
        default=None,
        metadata=api(
            "Token counts; null for an extractive answer or one that failed before its prompt was built.",
            read="budgeted_tokens",
        ),
    )
    budget: TraceBudget | None = field(
        default=None, metadata=api("What the context window left out; null when no prompt was built.")
    )
    source_chunk_ids: list[int] | None = field(default=None, metadata=STORED_ONLY)
    citations: TraceCitations | None = field(
        default=None, metadata=api("How citations were checked; null when the answer did not get that far.")
    )
    answer: TraceAnswer | None = field(default=None, metadata=api("Answer mode and guard (absent in older traces)."))
    search: TraceSearch | None = field(
        default=None,
        metadata=api(
            "The query searched, the rewrite and every retrieval pass (absent in older traces and when retrieval "
            "was off or failed)."
        ),
    )
    ranking: TraceRanking | None = field(
        default=None, metadata=api("Expansion and reranking; null when neither was on (and in older traces).")
    )
    tools: TraceTools | None = field(
        default=None,
        metadata=api("Tool selection's stages and the model's tool calls; null when the session allows no tools."),
    )

    @property
    def timings(self) -> list[StageTiming]:
        return [StageTiming(stage=stage, ms=ms) for stage, ms in self.timings_ms.items()]

    @property
    def budgeted_tokens(self) -> TraceTokens | None:
        """The token counts when they are complete (older traces and unbudgeted generations lack some)."""
        return self.tokens if self.tokens is not None and self.tokens.budgeted else None

    def stored(self) -> dict[str, Any]:
        """The JSON form kept in chat_messages.trace."""
        stored: dict[str, Any] = _ADAPTER.dump_python(self, mode="json", by_alias=True)
        return stored


_ADAPTER = TypeAdapter(RetrievalTrace)

# Every class of the trace (GraphQL registers each).
TRACE_TYPES: tuple[type, ...] = tuple(
    cls
    for name, cls in list(globals().items())
    if isinstance(cls, type) and cls.__module__ == __name__ and is_dataclass(cls) and not name.startswith("_")
)


def parse(raw: object) -> RetrievalTrace | None:
    """A stored trace, validated; None (and a warning) for a missing, unknown-version or corrupt one."""
    if not raw:
        return None
    version = raw.get("version") if isinstance(raw, dict) else None
    if version not in SUPPORTED_VERSIONS:
        log.warning("stored trace ignored: unsupported version %r", version)
        return None
    try:
        return _ADAPTER.validate_python(raw)
    except ValidationError as exc:
        log.warning("stored trace ignored: %d validation errors, first: %s", exc.error_count(), exc.errors()[0]["msg"])
        return None
