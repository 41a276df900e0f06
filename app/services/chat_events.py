"""What a chat turn streams to its client, in order: a SearchProgress per retrieval pass, one
Retrieval, Tokens, then Done or Error."""

from __future__ import annotations

from dataclasses import dataclass, field

from app.errors import ErrorCode
from app.rag.degradation import Degradation
from app.rag.retrieval import Location
from app.rag.widen import Decision
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


ChatEvent = SearchProgressEvent | RetrievalEvent | TokenEvent | DoneEvent | ErrorEvent
