"""What a chat turn streams to its client, in order: a SearchProgress per retrieval pass, one
Retrieval, Tokens, then Done or Error. A session with tools adds, between tokens, a ToolCall when the
model calls a tool and a ToolResult when the call ends, or a ToolPreview for a side-effecting one."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.errors import ErrorCode
from app.rag.search.candidates import Location
from app.rag.search.degradation import Degradation
from app.rag.search.widen import Decision
from app.services.records import ChatMessage, Citation


@dataclass(frozen=True)
class SourceRef:
    number: int
    chunk_id: int
    document_id: int
    document_name: str
    location: Location
    score: float | None
    rank: int
    text: str


@dataclass(frozen=True)
class RetrievalEvent:
    message_id: int
    user_message_id: int
    sources: list[SourceRef]
    no_context: bool  # RAG was on and nothing passed the threshold: the answer has no grounding
    degraded: list[Degradation] = field(default_factory=list)


@dataclass(frozen=True)
class SearchProgressEvent:
    """One retrieval pass has ended (evaluate-and-widen): a client can show "searching again…"."""

    message_id: int
    number: int  # 1-based
    budget: int  # the most passes the session's quality allows
    query: str  # the query searched: the message, or the chat model's standalone rewrite of it
    rewritten: bool  # ``query`` is the chat model's rewrite
    kept: int  # sources this pass kept
    best_score: float | None
    decision: Decision  # WIDEN: another pass follows


@dataclass(frozen=True)
class TokenEvent:
    message_id: int
    text: str


@dataclass(frozen=True)
class StoredAnswer:
    """The answer's row and its citations (by marker) as the transaction that stored them read them
    back: what a client is sent, without reading them again."""

    message: ChatMessage
    citations: list[Citation]


@dataclass(frozen=True)
class DoneEvent:
    message_id: int
    answer: StoredAnswer | None = None  # None when it was stored earlier (a re-attached finished turn)


@dataclass(frozen=True)
class ErrorEvent:
    message_id: int
    code: ErrorCode
    message: str
    partial: str
    stored: bool = True  # False when the answer could not be kept (its session was deleted meanwhile)


@dataclass(frozen=True)
class ToolCallEvent:
    message_id: int
    call_id: str  # the model's
    name: str
    arguments: str  # as the model wrote them


@dataclass(frozen=True)
class ToolResultEvent:
    message_id: int
    call_id: str
    tool_call_id: int | None  # the stored call; None when it could not be stored
    name: str
    ok: bool
    error: str | None
    summary: str
    size: int
    truncated: bool
    ms: float


@dataclass(frozen=True)
class ToolPreviewEvent:
    message_id: int
    call_id: str
    tool_call_id: int | None
    name: str
    arguments: str
    preview: str


ToolEvent = ToolCallEvent | ToolResultEvent | ToolPreviewEvent
ChatEvent = SearchProgressEvent | RetrievalEvent | TokenEvent | ToolEvent | DoneEvent | ErrorEvent
