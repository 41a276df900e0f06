"""Why an answer or a search had less to work with than usual: a reason a client can switch on and
the message an operator reads. Retrieval records the first two (app/rag/search/retrieval.py), the chat
engine the third (app/services/chat/service.py); the trace stores them and GraphQL shows them.

Traces written before the reasons existed stored the message alone; :meth:`Degradation.of` reads
those by the words each producer has always begun its message with.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class DegradationReason(StrEnum):
    VECTOR_SEARCH_FAILED = "vector_search_failed"  # the vector index failed: keyword search only
    SCORES_UNAVAILABLE = "scores_unavailable"  # stored vectors unreadable: index scores, or none
    RETRIEVAL_FAILED = "retrieval_failed"  # no search at all (embedder or database): no sources
    RERANK_FAILED = "rerank_failed"  # the reranker failed or timed out: the fused order was kept
    EXPANSION_FAILED = "expansion_failed"  # no alternative phrasings: the question alone was searched


# The start of each reason's message, as every version of its producer wrote it.
_LEGACY_PREFIXES = {
    "vector search failed": DegradationReason.VECTOR_SEARCH_FAILED,
    "could not read stored vectors": DegradationReason.SCORES_UNAVAILABLE,
    "no context:": DegradationReason.RETRIEVAL_FAILED,
}


@dataclass(frozen=True)
class Degradation:
    reason: DegradationReason
    message: str  # what failed, in words, with the underlying error

    @classmethod
    def of(cls, value: object) -> object:
        """A stored entry as a Degradation when it is a message from before the reasons existed;
        anything else unchanged, for validation to judge. Used as a pydantic before-validator."""
        if not isinstance(value, str):
            return value
        for prefix, reason in _LEGACY_PREFIXES.items():
            if value.startswith(prefix):
                return cls(reason, value)
        raise ValueError(f"unknown degradation {value[:60]!r}")
